#include "data/qa_examples.h"

#include <unordered_set>

#include "data/json_rows.h"
#include "util/error.h"

namespace strata::data {

namespace {

// At most `n` code points of s from byte b, for quoting a context in an error.
std::string excerpt(const std::string& s, size_t b, size_t n) {
  const size_t e = b + byte_of_code_point(s.substr(b), n);
  return s.substr(b, e - b);
}

constexpr const char* kShape = "SQuAD answers {\"text\": [strings], \"answer_start\": [integers]}";

std::vector<QaAnswer> parse_answers(const nlohmann::json& cell, const std::string& context, const std::string& key,
                                    const std::string& path, size_t line) {
  const nlohmann::json a = json_cell(cell, key, path, line, kShape);
  auto bad = [&](const std::string& what) { fail(path, ": line ", line, ": column '", key, "': ", what, "; expected ", kShape); };
  if (!a.is_object()) bad(cat("a JSON ", a.type_name()));
  const auto texts = a.find("text"), starts = a.find("answer_start");
  if (texts == a.end() || starts == a.end()) bad(cat("no '", texts == a.end() ? "text" : "answer_start", "' list"));
  if (!texts->is_array() || !starts->is_array()) bad("'text' and 'answer_start' must be lists");
  if (texts->size() != starts->size())
    fail(path, ": line ", line, ": column '", key, "': ", texts->size(), " answer text(s) but ", starts->size(),
         " answer_start value(s); expected one start per text");
  std::vector<QaAnswer> out;
  for (size_t i = 0; i < texts->size(); ++i) {
    const nlohmann::json &t = (*texts)[i], &s = (*starts)[i];
    if (!t.is_string()) bad(cat("text[", i, "] is a JSON ", t.type_name()));
    if (!s.is_number_integer() || s.get<int64_t>() < 0) bad(cat("answer_start[", i, "] is not a non-negative integer"));
    QaAnswer ans{t.get<std::string>(), s.get<size_t>()};
    if (ans.text.empty())
      fail(path, ": line ", line, ": column '", key, "': answer ", i, " has an empty text (an unanswerable question has ",
           "empty 'text' and 'answer_start' lists)");
    const size_t b = byte_of_code_point(context, ans.start);
    if (context.compare(b, ans.text.size(), ans.text) != 0)
      fail(path, ": line ", line, ": column '", key, "': answer ", i, " '", ans.text,
           "' is not in the context at answer_start ", ans.start, " (code points; the context there reads '",
           excerpt(context, b, 40), "')");
    out.push_back(std::move(ans));
  }
  return out;
}

std::string id_of(const nlohmann::json& row, const std::string& key, const std::string& path, size_t line) {
  const nlohmann::json& v = row_field(row, key, path, line);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return v.dump();
  fail(path, ": line ", line, ": column '", key, "' is a JSON ", v.type_name(), "; expected a string or an integer");
}

}  // namespace

size_t byte_of_code_point(const std::string& s, size_t cp) {
  size_t b = 0;
  for (; b < s.size() && cp > 0; --cp) {
    ++b;
    while (b < s.size() && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) ++b;
  }
  return b;
}

QaExamples read_qa_examples(const std::string& path, const FileFormat& fmt, const QaColumns& columns,
                            bool answers_optional, const WarnFn& warn) {
  QaExamples out;
  out.path = path;
  bool first = true, has_id = false;
  std::unordered_set<std::string> ids;
  const RowStats stats = for_each_row(path, fmt, [&](const nlohmann::json& row, size_t line) {
    // The first row decides whether the optional columns are there.
    if (first) {
      has_id = row.contains(columns.id);
      out.has_answers = row.contains(columns.answers) || !answers_optional;
      first = false;
    }
    QaExample ex;
    ex.line = line;
    ex.question = string_field(row, columns.question, path, line);
    ex.context = string_field(row, columns.context, path, line);
    ex.id = has_id ? id_of(row, columns.id, path, line) : std::to_string(out.examples.size());
    if (out.has_answers)
      ex.answers = parse_answers(row_field(row, columns.answers, path, line), ex.context, columns.answers, path, line);
    if (!ids.insert(ex.id).second)
      fail(path, ": line ", line, ": duplicate id '", ex.id, "' in column '", columns.id,
           "' (predictions and metrics are keyed by id)");
    out.examples.push_back(std::move(ex));
  });
  if (out.examples.empty()) fail(path, ": no examples");
  warn_replaced_utf8(stats, path, warn);
  return out;
}

}  // namespace strata::data
