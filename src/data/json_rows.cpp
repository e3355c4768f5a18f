#include "data/json_rows.h"

#include <cstdio>

#include "data/csv_reader.h"
#include "data/file_bytes.h"
#include "data/jsonl_reader.h"
#include "data/record_scan.h"
#include "data/utf8.h"
#include "util/console.h"
#include "util/error.h"

namespace strata::data {

RowStats for_each_row(const std::string& path, const FileFormat& fmt,
                      const std::function<void(const nlohmann::json& row, size_t line)>& fn) {
  const FileBytes file(path);
  RowStats stats;
  auto count = [&](size_t replaced, size_t line) {
    if (replaced && stats.utf8_replaced == 0) stats.first_replaced_line = line;
    stats.utf8_replaced += replaced;
    ++stats.rows;
  };
  if (fmt.format == Format::Jsonl) {
    JsonlReader reader(file.bytes(), path);
    JsonlRecord rec;
    while (reader.next(rec)) {
      count(rec.replaced, rec.line);
      fn(rec.value, rec.line);
    }
    return stats;
  }
  if (fmt.format != Format::Csv)
    fail(path, ": a plain-text file has no columns; this task reads CSV or JSON Lines (.csv, .tsv, .jsonl, .json)");
  CsvReader reader(file.bytes(), fmt.delimiter, path);
  CsvRecord rec;
  if (!reader.next(rec)) fail(path, ": the file is empty (expected a header row naming the columns)");
  const std::vector<std::string> header = rec.fields;
  nlohmann::json row = nlohmann::json::object();
  while (reader.next(rec)) {
    size_t replaced = 0;
    for (size_t i = 0; i < header.size(); ++i) {
      replaced += replace_invalid_utf8(rec.fields[i]);
      row[header[i]] = std::move(rec.fields[i]);
    }
    count(replaced, rec.line);
    fn(row, rec.line);
  }
  return stats;
}

void warn_replaced_utf8(const RowStats& stats, const std::string& path, const WarnFn& warn) {
  if (stats.utf8_replaced == 0) return;
  const std::string msg = cat(path, ": ", stats.utf8_replaced, " invalid UTF-8 sequence(s) replaced by U+FFFD (first at line ",
                              stats.first_replaced_line, ")");
  if (warn) {
    warn(msg);
  } else {
    console_warning(msg);
  }
}

const nlohmann::json& row_field(const nlohmann::json& row, const std::string& key, const std::string& path,
                                size_t line) {
  const auto it = row.find(key);
  if (it != row.end()) return *it;
  std::vector<std::string> keys;
  for (const auto& [k, v] : row.items()) keys.push_back(k);
  fail(path, ": line ", line, ": no column '", key, "'", columns_hint(key, keys));
}

nlohmann::json json_cell(const nlohmann::json& value, const std::string& key, const std::string& path, size_t line,
                         const std::string& expected) {
  if (!value.is_string()) return value;
  const std::string& text = value.get_ref<const std::string&>();
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {  // parse_error, or out_of_range for 1e400
    fail(path, ": line ", line, ": column '", key, "' holds the text '", text.substr(0, 60), text.size() > 60 ? "...'" : "'",
         ", which is not JSON; expected ", expected, " (in a CSV cell, as JSON text)");
  }
}

std::string string_field(const nlohmann::json& row, const std::string& key, const std::string& path, size_t line) {
  const nlohmann::json& v = row_field(row, key, path, line);
  if (!v.is_string()) fail(path, ": line ", line, ": column '", key, "' is a JSON ", v.type_name(), "; expected a string");
  return v.get<std::string>();
}

}  // namespace strata::data
