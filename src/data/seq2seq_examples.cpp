#include "data/seq2seq_examples.h"

#include "data/json_rows.h"
#include "util/error.h"

namespace strata::data {

namespace {

std::string text_of(const nlohmann::json& v, const std::string& what, const std::string& path, size_t line) {
  if (!v.is_string()) fail(path, ": line ", line, ": ", what, " is a JSON ", v.type_name(), "; expected a string");
  return v.get<std::string>();
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

}  // namespace

Seq2SeqExamples read_seq2seq_examples(const std::string& path, const FileFormat& fmt, const Seq2SeqColumns& columns,
                                      bool targets_optional, const WarnFn& warn) {
  Seq2SeqExamples out;
  out.path = path;
  const bool translation = !columns.source_lang.empty();
  bool first = true;
  const RowStats stats = for_each_row(path, fmt, [&](const nlohmann::json& row, size_t line) {
    Seq2SeqExample e;
    e.line = line;
    if (translation) {
      const std::string expected = cat("an object with the languages '", columns.source_lang, "' and '",
                                       columns.target_lang, "'");
      const nlohmann::json pair =
          json_cell(row_field(row, columns.translation, path, line), columns.translation, path, line, expected);
      if (!pair.is_object())
        fail(path, ": line ", line, ": column '", columns.translation, "' is a JSON ", pair.type_name(), "; expected ",
             expected);
      if (first) out.has_targets = pair.contains(columns.target_lang) || !targets_optional;
      for (const std::string* lang : {&columns.source_lang, &columns.target_lang}) {
        if (lang == &columns.target_lang && !out.has_targets) break;
        if (!pair.contains(*lang))
          fail(path, ": line ", line, ": column '", columns.translation, "' has no '", *lang, "' text; expected ",
               expected);
        (lang == &columns.source_lang ? e.source : e.target) =
            text_of(pair[*lang], cat("column '", columns.translation, "' key '", *lang, "'"), path, line);
      }
    } else {
      if (first) out.has_targets = row.contains(columns.target) || !targets_optional;
      e.source = text_of(row_field(row, columns.source, path, line), cat("column '", columns.source, "'"), path, line);
      if (out.has_targets)
        e.target = text_of(row_field(row, columns.target, path, line), cat("column '", columns.target, "'"), path, line);
    }
    if (blank(e.source)) fail(path, ": line ", line, ": the source text is empty");
    first = false;
    out.examples.push_back(std::move(e));
  });
  warn_replaced_utf8(stats, path, warn);
  if (out.examples.empty()) fail(path, ": no examples");
  return out;
}

}  // namespace strata::data
