#include "data/record_scan.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "data/csv_reader.h"
#include "data/jsonl_reader.h"
#include "data/utf8.h"
#include "util/error.h"
#include "util/nearest_name.h"

namespace strata::data {

// The tail of a missing-column error: " (columns: a, b, c); did you mean 'b'?".
std::string columns_hint(const std::string& asked, const std::vector<std::string>& candidates) {
  std::string out = " (columns: ";
  for (size_t i = 0; i < candidates.size(); ++i) out += (i ? ", " : "") + candidates[i];
  if (candidates.empty()) out += "none";
  return out + ")" + did_you_mean(asked, candidates);
}

namespace {

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n\f\v") == std::string_view::npos; }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

int find_column(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

std::vector<std::string> keys_of(const nlohmann::json& obj) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : obj.items()) keys.push_back(k);
  return keys;
}

// A JSON text field: a string, or null (an empty text, left to the empty-text policy).
std::string json_text(const nlohmann::json& obj, const std::string& key, const std::string& path, size_t line) {
  const auto it = obj.find(key);
  if (it == obj.end()) fail(path, ": line ", line, ": no field '", key, "'", columns_hint(key, keys_of(obj)));
  if (it->is_null()) return {};
  if (!it->is_string())
    fail(path, ": line ", line, ": field '", key, "' is a JSON ", it->type_name(), "; expected a string");
  return it->get<std::string>();
}

// Appends Columns::more_text's fields to `text`, each after the delimiter.
void join_more_texts(std::string& text, const std::vector<std::string>& fields, const RecordLayout& layout) {
  for (int col : layout.more_text_cols) text += layout.text_delimiter + fields[col];
}
void join_more_texts(std::string& text, const nlohmann::json& obj, const RecordLayout& layout, const std::string& path,
                     size_t line) {
  for (const std::string& key : layout.more_text_keys) text += layout.text_delimiter + json_text(obj, key, path, line);
}

// Collects records and applies the policies every format shares.
class Collector {
 public:
  Collector(ScannedFile& out, const ScanOptions& opts) : out_(out), opts_(opts) {}

  // Text and pair have had invalid UTF-8 replaced already; `replaced` counts it.
  // A blank text is an error or skipped (the empty-text policy) unless `blank_ok`.
  void add(size_t line, size_t begin, std::string&& text, std::string&& pair, RawLabel&& label, size_t replaced,
           bool blank_ok = false) {
    if (replaced) {
      if (out_.utf8_replaced == 0) out_.first_replaced_line = line;
      out_.utf8_replaced += replaced;
    }
    const bool has_pair = !opts_.columns.pair.empty();
    if (!blank_ok && (blank(text) || (has_pair && blank(pair)))) {
      const std::string& col = blank(text) ? opts_.columns.text : opts_.columns.pair;
      if (!opts_.skip_empty_text)
        fail(out_.path, ": line ", line, ": empty text in column '", col,
             "' (rows with empty text are an error; set skip_empty_text to skip them)");
      if (out_.skipped_empty++ == 0) out_.first_skipped_line = line;
      return;
    }
    if (opts_.keep_texts) {
      out_.texts.push_back(std::move(text));
      if (has_pair) out_.pairs.push_back(std::move(pair));
    } else {
      out_.offsets.push_back(begin);
    }
    if (out_.has_labels) out_.labels.push_back(std::move(label));
    out_.lines.push_back(line);
  }

 private:
  ScannedFile& out_;
  const ScanOptions& opts_;
};

void scan_csv(std::string_view bytes, const ScanOptions& opts, ScannedFile& out) {
  const Columns& c = opts.columns;
  CsvReader reader(bytes, out.layout.fmt.delimiter, out.path);
  CsvRecord rec;
  if (!reader.next(rec)) fail(out.path, ": the file is empty (expected a header row naming the columns)");
  const std::vector<std::string> header = rec.fields;
  auto require = [&](const std::string& name, const char* what) {
    const int i = find_column(header, name);
    if (i < 0) fail(out.path, ": no ", what, " column '", name, "'", columns_hint(name, header));
    return i;
  };
  out.layout.csv_fields = header.size();
  out.layout.text_col = require(c.text, "text");
  for (const std::string& more : c.more_text) out.layout.more_text_cols.push_back(require(more, "text"));
  out.layout.text_delimiter = c.text_delimiter;
  if (!c.pair.empty()) out.layout.pair_col = require(c.pair, "text pair");
  int label_col = -1;
  if (!c.label.empty()) {
    label_col = find_column(header, c.label);
    if (label_col < 0 && !opts.labels_optional) require(c.label, "label");
  }
  out.has_labels = label_col >= 0;
  Collector collect(out, opts);
  while (reader.next(rec)) {
    std::string text = std::move(rec.fields[out.layout.text_col]);
    join_more_texts(text, rec.fields, out.layout);
    std::string pair = out.layout.pair_col >= 0 ? std::move(rec.fields[out.layout.pair_col]) : std::string();
    size_t replaced = replace_invalid_utf8(text) + replace_invalid_utf8(pair);
    RawLabel label;
    if (label_col >= 0) {
      replaced += replace_invalid_utf8(rec.fields[label_col]);
      label = label_from_text(rec.fields[label_col], out.path, rec.line);
    }
    collect.add(rec.line, rec.begin, std::move(text), std::move(pair), std::move(label), replaced);
  }
}

void scan_jsonl(std::string_view bytes, const ScanOptions& opts, ScannedFile& out) {
  const Columns& c = opts.columns;
  out.layout.text_key = c.text;
  out.layout.pair_key = c.pair;
  out.layout.more_text_keys = c.more_text;
  out.layout.text_delimiter = c.text_delimiter;
  JsonlReader reader(bytes, out.path);
  JsonlRecord rec;
  Collector collect(out, opts);
  bool first = true;
  while (reader.next(rec)) {
    const nlohmann::json& obj = rec.value;
    // The first record decides whether an optional label column is there.
    if (first) out.has_labels = !c.label.empty() && (obj.contains(c.label) || !opts.labels_optional);
    first = false;
    std::string text = json_text(obj, c.text, out.path, rec.line);
    join_more_texts(text, obj, out.layout, out.path, rec.line);
    std::string pair = c.pair.empty() ? std::string() : json_text(obj, c.pair, out.path, rec.line);
    RawLabel label;
    if (out.has_labels) {
      const auto it = obj.find(c.label);
      if (it == obj.end())
        fail(out.path, ": line ", rec.line, ": no label field '", c.label, "'", columns_hint(c.label, keys_of(obj)));
      label = label_from_json(*it, out.path, rec.line);
    }
    collect.add(rec.line, rec.begin, std::move(text), std::move(pair), std::move(label), rec.replaced);
  }
}

// One example per line; blank lines are dropped, as HF run_mlm's line_by_line does, unless
// keep_blank_lines.
void scan_text(std::string_view bytes, const ScanOptions& opts, ScannedFile& out) {
  const Columns& c = opts.columns;
  if (!c.pair.empty() || !c.more_text.empty())
    fail(out.path, ": a plain-text file has one text per line, so there is no column '",
         c.pair.empty() ? c.more_text[0] : c.pair, "' (use CSV or JSON Lines for several text columns)");
  if (!c.label.empty() && !opts.labels_optional)
    fail(out.path, ": a plain-text file has no columns, so there is no label column '", c.label,
         "' (use CSV or JSON Lines for labelled data, or no label column for masked LM)");
  Collector collect(out, opts);
  size_t pos = 0, line = 1;
  while (pos < bytes.size()) {
    const size_t nl = bytes.find('\n', pos);
    const size_t end = nl == std::string_view::npos ? bytes.size() : nl;
    std::string_view view = bytes.substr(pos, end - pos);
    if (view.ends_with('\r')) view.remove_suffix(1);
    if (opts.keep_blank_lines || !blank(view)) {
      std::string text(view);
      const size_t replaced = replace_invalid_utf8(text);
      collect.add(line, pos, std::move(text), std::string(), RawLabel(), replaced, opts.keep_blank_lines);
    }
    pos = end + 1;
    ++line;
  }
}

}  // namespace

FileFormat detect_format(const std::string& path, const std::string& format, char delimiter) {
  std::string name = format;
  if (name.empty()) {
    std::string file = lower(std::filesystem::path(path).filename().string());
    if (file.ends_with(".gz")) file.resize(file.size() - 3);
    const std::string ext = std::filesystem::path(file).extension().string();
    name = ext.empty() ? "" : ext.substr(1);
    if (name == "ndjson") name = "jsonl";
    if (name == "txt") name = "text";
    if (name != "csv" && name != "tsv" && name != "json" && name != "jsonl" && name != "text")
      fail(path,
           ": cannot tell the format from the file name (known: .csv, .tsv, .json, .jsonl, .ndjson, .txt, .text, "
           "each optionally .gz); name it so or set the format");
  }
  FileFormat f;
  if (name == "csv") {
    f = {Format::Csv, ','};
  } else if (name == "tsv") {
    f = {Format::Csv, '\t'};
  } else if (name == "json" || name == "jsonl") {
    f = {Format::Jsonl, 0};
  } else if (name == "text") {
    f = {Format::Text, 0};
  } else {
    fail(path, ": unknown format '", format, "' (expected csv, tsv, json, jsonl or text)");
  }
  if (delimiter != 0) {
    if (f.format != Format::Csv) fail(path, ": a delimiter is set, but the file is not CSV/TSV");
    if (delimiter == '"' || delimiter == '\n' || delimiter == '\r')
      fail(path, ": the delimiter cannot be a quote or a line break");
    f.delimiter = delimiter;
  }
  return f;
}

ScannedFile ScannedFile::subset(const std::vector<size_t>& rows) const {
  ScannedFile s;
  s.path = path;
  s.file = file;
  s.layout = layout;
  s.has_labels = has_labels;
  for (size_t r : rows) {
    if (!texts.empty()) s.texts.push_back(texts[r]);
    if (!pairs.empty()) s.pairs.push_back(pairs[r]);
    if (!offsets.empty()) s.offsets.push_back(offsets[r]);
    if (has_labels) s.labels.push_back(labels[r]);
    s.lines.push_back(lines[r]);
  }
  return s;
}

ScannedFile scan_file(const std::string& path, const FileFormat& fmt, const ScanOptions& opts) {
  ScannedFile out;
  out.path = path;
  out.layout.fmt = fmt;
  auto file = std::make_shared<const FileBytes>(path);
  if (!opts.keep_texts && file->compressed())
    fail(path,
         ": streaming reads records at random offsets, which a gzip file cannot do; decompress it "
         "(gunzip -k) or turn streaming off");
  switch (fmt.format) {
    case Format::Csv:
      scan_csv(file->bytes(), opts, out);
      break;
    case Format::Jsonl:
      scan_jsonl(file->bytes(), opts, out);
      break;
    case Format::Text:
      scan_text(file->bytes(), opts, out);
      break;
  }
  if (!opts.keep_texts) out.file = std::move(file);
  return out;
}

void read_record_texts(std::string_view bytes, const RecordLayout& layout, uint64_t offset, std::string& text,
                       std::string& pair) {
  const std::string_view rest = bytes.substr(offset);
  pair.clear();
  switch (layout.fmt.format) {
    case Format::Csv: {
      CsvReader reader(rest, layout.fmt.delimiter, "", layout.csv_fields);
      CsvRecord rec;
      if (!reader.next(rec)) fail("no record at this offset");
      text = std::move(rec.fields[layout.text_col]);
      join_more_texts(text, rec.fields, layout);
      if (layout.pair_col >= 0) pair = std::move(rec.fields[layout.pair_col]);
      break;
    }
    case Format::Jsonl: {
      JsonlReader reader(rest, "");
      JsonlRecord rec;
      if (!reader.next(rec)) fail("no record at this offset");
      text = json_text(rec.value, layout.text_key, "", rec.line);
      join_more_texts(text, rec.value, layout, "", rec.line);
      if (!layout.pair_key.empty()) pair = json_text(rec.value, layout.pair_key, "", rec.line);
      return;  // the reader repaired the line's UTF-8 already
    }
    case Format::Text: {
      std::string_view line = rest.substr(0, rest.find('\n'));
      if (line.ends_with('\r')) line.remove_suffix(1);
      text.assign(line);
      break;
    }
  }
  replace_invalid_utf8(text);
  replace_invalid_utf8(pair);
}

}  // namespace strata::data
