// JSON Lines: one JSON object per line (LF or CRLF); blank lines are skipped. Invalid UTF-8
// is repaired (utf8.h) before parsing, since a JSON parser rejects it outright.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace strata::data {

struct JsonlRecord {
  nlohmann::json value;  // always an object
  size_t line = 0;       // 1-based
  size_t begin = 0;      // byte offset of the line in the view the reader was given
  size_t replaced = 0;   // U+FFFD substituted for invalid UTF-8 in this line
};

class JsonlReader {
 public:
  JsonlReader(std::string_view bytes, std::string source) : s_(bytes), source_(std::move(source)) {}
  // The next object; false at the end. Throws strata::Error "<file>: invalid JSON at line L,
  // column C: <reason>" or "<file>: line L: expected a JSON object, got <type>".
  bool next(JsonlRecord& out);

 private:
  std::string_view s_;
  std::string source_;
  size_t pos_ = 0, line_ = 1;
};

}  // namespace strata::data
