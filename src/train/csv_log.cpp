#include "train/csv_log.h"

#include <algorithm>

#include "io/files.h"
#include "util/error.h"

namespace strata {

namespace {

// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string cell(const nlohmann::json& v) { return csv_field(v.is_string() ? v.get<std::string>() : v.dump()); }

}  // namespace

bool CsvLog::add_columns(const nlohmann::json& entry) {
  bool added = false;
  for (const auto& [key, value] : entry.items()) {
    if (std::find(columns_.begin(), columns_.end(), key) != columns_.end()) continue;
    columns_.push_back(key);
    added = true;
  }
  return added;
}

std::string CsvLog::row(const nlohmann::json& entry) const {
  std::string line;
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (i) line += ',';
    const auto it = entry.find(columns_[i]);
    if (it != entry.end()) line += cell(*it);
  }
  line += '\n';
  return line;
}

void CsvLog::write(const nlohmann::json& entry, const std::vector<nlohmann::json>& history) {
  if (!written_ || add_columns(entry)) {
    // nlohmann::json orders keys alphabetically; the first appearance across the history
    // fixes each column's place, so the order is the same on every rewrite.
    for (const nlohmann::json& e : history) add_columns(e);
    std::string text;
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (i) text += ',';
      text += csv_field(columns_[i]);
    }
    text += "\n";
    for (const nlohmann::json& e : history) text += row(e);
    io::write_file_atomic(path_, text);
    written_ = true;
    return;
  }
  io::append_to_file(path_, row(entry));
}

}  // namespace strata
