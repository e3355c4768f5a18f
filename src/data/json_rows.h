// The rows of a CSV or JSON Lines file as JSON objects, for tasks whose columns are not plain
// text (question answering's answers dict, token classification's word and tag lists): JSON
// Lines rows as they are; a CSV record as an object of strings keyed by the header, so a
// structured CSV cell holds JSON text and the task parses it (json_cell). Invalid UTF-8 is
// repaired (utf8.h) and counted.
#pragma once
#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/record_scan.h"

namespace strata::data {

struct RowStats {
  size_t rows = 0;
  size_t utf8_replaced = 0, first_replaced_line = 0;
};

// Calls fn(row, line) for every record, line being the 1-based line it starts on. Throws
// strata::Error naming the file for malformed records and for plain-text files, which have no
// columns.
RowStats for_each_row(const std::string& path, const FileFormat& fmt,
                      const std::function<void(const nlohmann::json& row, size_t line)>& fn);

// The dataset policy's one warning per file for repaired UTF-8 (to stderr when warn is empty).
void warn_replaced_utf8(const RowStats& stats, const std::string& path, const WarnFn& warn);

// The value of column `key` of `row`: an error naming file, line and the columns there are
// (with the nearest name) when it is missing.
const nlohmann::json& row_field(const nlohmann::json& row, const std::string& key, const std::string& path,
                                size_t line);

// A structured value: itself, or when it is a string (a CSV cell), the JSON it holds; an error
// naming file, line and column, and saying what was `expected`, when that string is not JSON.
nlohmann::json json_cell(const nlohmann::json& value, const std::string& key, const std::string& path, size_t line,
                         const std::string& expected);

// A column that must hold a string.
std::string string_field(const nlohmann::json& row, const std::string& key, const std::string& path, size_t line);

}  // namespace strata::data
