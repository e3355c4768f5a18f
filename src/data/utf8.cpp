#include "data/utf8.h"

#include <cstdint>

namespace strata::data {

namespace {

// Length of the well-formed sequence starting at s[i], or 0 if it is ill-formed; in that
// case *consumed is the length of the maximal subpart (>= 1) to replace by one U+FFFD.
size_t valid_sequence(std::string_view s, size_t i, size_t* consumed) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t lead = b(i);
  *consumed = 1;
  if (lead < 0x80) return 1;
  size_t len;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (Unicode Table 3-7)
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    len = 3;
    if (lead == 0xE0) lo = 0xA0;  // no overlong forms
    if (lead == 0xED) hi = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    len = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) return 0;
    const uint8_t c = b(i + k);
    if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return 0;
    *consumed = k + 1;
  }
  return len;
}

}  // namespace

size_t replace_invalid_utf8(std::string& s) {
  size_t i = 0, consumed = 0;
  // Fast path: most texts are valid, and then nothing is copied.
  while (i < s.size()) {
    const size_t n = valid_sequence(s, i, &consumed);
    if (n == 0) break;
    i += n;
  }
  if (i == s.size()) return 0;
  std::string out(s, 0, i);
  size_t replaced = 0;
  while (i < s.size()) {
    const size_t n = valid_sequence(s, i, &consumed);
    if (n) {
      out.append(s, i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      ++replaced;
      i += consumed;
    }
  }
  s = std::move(out);
  return replaced;
}

}  // namespace strata::data
