// RFC 4180 CSV (and TSV): fields separated by the delimiter, records ended by CRLF or LF (or
// the end of the file); a field in double quotes may hold delimiters, newlines and doubled
// quotes (""). As pandas (HF datasets' CSV reader) does, completely empty lines between
// records are skipped and a quote inside an unquoted field is an ordinary character.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace strata::data {

struct CsvRecord {
  std::vector<std::string> fields;
  size_t line = 0;   // 1-based line of the file where the record starts
  size_t begin = 0;  // its byte offset in the view the reader was given
};

class CsvReader {
 public:
  // `source` names the file in errors. expected_fields 0: take the count from the first
  // record (the header); every later record must have that many.
  CsvReader(std::string_view bytes, char delimiter, std::string source, size_t expected_fields = 0);

  // The next record; false at the end of the input. Throws strata::Error for an unterminated
  // quoted field (naming the line where it opened), a character after a closing quote, or a
  // record whose field count differs from the header's.
  bool next(CsvRecord& out);

 private:
  void quoted_field(std::string& field);
  void unquoted_field(std::string& field);

  std::string_view s_;
  char delim_;
  std::string source_;
  size_t expected_;
  size_t pos_ = 0, line_ = 1;
};

}  // namespace strata::data
