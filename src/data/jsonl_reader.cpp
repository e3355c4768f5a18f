#include "data/jsonl_reader.h"

#include "data/utf8.h"
#include "util/error.h"

namespace strata::data {

namespace {

// nlohmann's what() is "[json.exception.parse_error.N] parse error at ...: <reason>"; keep
// the reason, since the position is reported relative to the file.
std::string reason(const nlohmann::json::parse_error& e) {
  const std::string_view what = e.what();
  const size_t start = what.find("parse error");
  const size_t colon = what.find(": ", start == std::string_view::npos ? 0 : start);
  return std::string(colon == std::string_view::npos ? what : what.substr(colon + 2));
}

bool blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

}  // namespace

bool JsonlReader::next(JsonlRecord& out) {
  while (pos_ < s_.size()) {
    const size_t nl = s_.find('\n', pos_);
    const size_t end = nl == std::string_view::npos ? s_.size() : nl;
    const std::string_view line = s_.substr(pos_, end - pos_);
    const size_t begin = pos_, number = line_;
    pos_ = nl == std::string_view::npos ? s_.size() : nl + 1;
    ++line_;
    if (blank(line)) continue;
    std::string text(line);
    out.replaced = replace_invalid_utf8(text);
    try {
      out.value = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      fail(source_, ": invalid JSON at line ", number, ", column ", e.byte == 0 ? 1 : e.byte, ": ", reason(e),
           " (JSON Lines holds one complete JSON object per line)");
    } catch (const nlohmann::json::out_of_range& e) {  // a number past a double's range: 1e400
      fail(source_, ": invalid JSON at line ", number, ": ", e.what());
    }
    if (!out.value.is_object())
      fail(source_, ": line ", number, ": expected a JSON object, got ", out.value.type_name());
    out.line = number;
    out.begin = begin;
    return true;
  }
  return false;
}

}  // namespace strata::data
