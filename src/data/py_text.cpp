#include "data/py_text.h"

#include <utf8proc.h>

namespace strata::data::py {

namespace {

int category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

bool cased(char32_t c) {
  const int k = category(c);
  return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT;
}

bool case_ignorable(char32_t c) {
  switch (c) {
    case U'\'': case U'.': case U':': case 0x00B7: case 0x0387: case 0x05F4: case 0x2018: case 0x2019:
    case 0x2024: case 0x2027: case 0xFE13: case 0xFE52: case 0xFE55: case 0xFF07: case 0xFF0E: case 0xFF1A:
      return true;
    default:
      break;
  }
  const int k = category(c);
  return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_ME || k == UTF8PROC_CATEGORY_CF ||
         k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_SK;
}

// CPython's handle_capital_sigma: final when a cased letter precedes (skipping case-ignorable
// ones) and none follows.
bool final_sigma(const std::u32string& s, size_t i) {
  size_t j = i;
  while (j > 0 && case_ignorable(s[j - 1])) --j;
  if (j == 0 || !cased(s[j - 1])) return false;
  for (j = i + 1; j < s.size() && case_ignorable(s[j]); ++j) {
  }
  return j == s.size() || !cased(s[j]);
}

}  // namespace

bool isspace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool isalnum(char32_t c) {
  const int k = category(c);
  return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) ||
         (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO);
}

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  for (size_t i = 0; i < s.size();) {
    utf8proc_int32_t c;
    const utf8proc_ssize_t n = utf8proc_iterate(p + i, static_cast<utf8proc_ssize_t>(s.size() - i), &c);
    if (n <= 0) {  // not valid UTF-8: the byte as U+FFFD, as errors="replace" would
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(static_cast<char32_t>(c));
    i += static_cast<size_t>(n);
  }
  return out;
}

std::string encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  utf8proc_uint8_t buf[4];
  for (char32_t c : s) {
    const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
  }
  return out;
}

std::string lstrip(std::string_view s) {
  const std::u32string u = decode(s);
  size_t i = 0;
  while (i < u.size() && isspace(u[i])) ++i;
  return encode(std::u32string_view(u).substr(i));
}

std::string rstrip(std::string_view s) {
  const std::u32string u = decode(s);
  size_t n = u.size();
  while (n > 0 && isspace(u[n - 1])) --n;
  return encode(std::u32string_view(u).substr(0, n));
}

std::vector<std::string> split(std::string_view s) {
  const std::u32string u = decode(s);
  std::vector<std::string> out;
  for (size_t i = 0; i < u.size();) {
    while (i < u.size() && isspace(u[i])) ++i;
    const size_t b = i;
    while (i < u.size() && !isspace(u[i])) ++i;
    if (i > b) out.push_back(encode(std::u32string_view(u).substr(b, i - b)));
  }
  return out;
}

std::string lower(std::string_view s) {
  const std::u32string u = decode(s);
  std::u32string out;
  out.reserve(u.size());
  for (size_t i = 0; i < u.size(); ++i) {
    const char32_t c = u[i];
    if (c == 0x0130) {
      out += U"i\u0307";
    } else if (c == 0x03A3) {
      out.push_back(final_sigma(u, i) ? 0x03C2 : 0x03C3);
    } else {
      out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
  }
  return encode(out);
}

}  // namespace strata::data::py
