#include "data/csv_reader.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"

namespace strata::data {

namespace {

std::string printable(char c) {
  if (c == '\r') return "'\\r'";
  if (c == '\t') return "a tab";
  if (static_cast<unsigned char>(c) < 0x20) return "byte " + std::to_string(static_cast<int>(c));
  return std::string("'") + c + "'";
}

}  // namespace

CsvReader::CsvReader(std::string_view bytes, char delimiter, std::string source, size_t expected_fields)
    : s_(bytes), delim_(delimiter), source_(std::move(source)), expected_(expected_fields) {}

void CsvReader::quoted_field(std::string& field) {
  const size_t open_line = line_;
  ++pos_;  // the opening quote
  for (;;) {
    const size_t q = s_.find('"', pos_);
    if (q == std::string_view::npos)
      fail(source_, ": line ", open_line, ": unterminated quoted field (the quote opened on line ", open_line,
           " is never closed before the end of the file)");
    const std::string_view chunk = s_.substr(pos_, q - pos_);
    line_ += static_cast<size_t>(std::count(chunk.begin(), chunk.end(), '\n'));
    field.append(chunk);
    pos_ = q + 1;
    if (pos_ < s_.size() && s_[pos_] == '"') {  // "" stands for one quote
      field += '"';
      ++pos_;
      continue;
    }
    break;
  }
  if (pos_ == s_.size() || s_[pos_] == delim_ || s_[pos_] == '\n' || s_.substr(pos_, 2) == "\r\n") return;
  fail(source_, ": line ", line_, ": unexpected ", printable(s_[pos_]),
       " after the closing quote of a field (expected the delimiter or the end of the record; a quote inside a "
       "quoted field is written as \"\")");
}

void CsvReader::unquoted_field(std::string& field) {
  size_t end = pos_;
  while (end < s_.size() && s_[end] != delim_ && s_[end] != '\n') ++end;
  size_t stop = end;
  if (end < s_.size() && s_[end] == '\n' && stop > pos_ && s_[stop - 1] == '\r') --stop;  // CRLF
  field.assign(s_.substr(pos_, stop - pos_));
  pos_ = end;
}

bool CsvReader::next(CsvRecord& out) {
  // Skip empty lines (LF or CRLF alone).
  for (;;) {
    if (pos_ < s_.size() && s_[pos_] == '\n') {
      ++pos_;
      ++line_;
    } else if (s_.substr(pos_, 2) == "\r\n") {
      pos_ += 2;
      ++line_;
    } else {
      break;
    }
  }
  if (pos_ >= s_.size()) return false;
  out.line = line_;
  out.begin = pos_;
  size_t n = 0;
  for (;;) {
    if (out.fields.size() <= n) out.fields.emplace_back();
    std::string& field = out.fields[n++];
    field.clear();
    if (pos_ < s_.size() && s_[pos_] == '"')
      quoted_field(field);
    else
      unquoted_field(field);
    if (pos_ < s_.size() && s_[pos_] == delim_) {
      ++pos_;
      continue;
    }
    // End of the record: LF, CRLF or the end of the input.
    if (pos_ < s_.size() && s_[pos_] == '\r') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '\n') {
      ++pos_;
      ++line_;
    }
    break;
  }
  out.fields.resize(n);
  if (expected_ == 0) expected_ = n;
  if (n != expected_)
    fail(source_, ": line ", out.line, ": expected ", expected_, " fields (as in the header), got ", n,
         n > expected_ ? " (an unquoted field containing the delimiter?)" : "");
  return true;
}

}  // namespace strata::data
