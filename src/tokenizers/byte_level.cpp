#include "tokenizers/byte_level.h"

#include <array>

#include "tokenizers/unicode.h"

namespace strata::tok::byte_level {

namespace {

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 324> to_byte{};  // byte-level characters are all below U+0144

  Tables() {
    to_byte.fill(-1);
    // Printable bytes stand for themselves; the others get 256, 257, ... in byte order.
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_char[static_cast<size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
      to_byte[to_char[static_cast<size_t>(b)]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

bool is_other_class(char32_t c) { return !uni::is_whitespace(c) && !uni::is_letter(c) && !uni::is_number(c); }

}  // namespace

char32_t byte_to_char(unsigned char b) { return tables().to_char[b]; }

int char_to_byte(char32_t c) { return c < tables().to_byte.size() ? tables().to_byte[c] : -1; }

void find_gpt2_matches(std::string_view s, std::vector<Match>& out) {
  out.clear();
  if (s.empty()) {
    out.push_back({0, 0, false});
    return;
  }
  // Code points of s, so the alternatives can look one or two characters ahead.
  thread_local std::vector<char32_t> cp;
  thread_local std::vector<size_t> at;
  cp.clear();
  at.clear();
  for (size_t i = 0; i < s.size();) {
    size_t len;
    at.push_back(i);
    cp.push_back(uni::decode(s, i, &len));
    i += len;
  }
  const size_t n = cp.size();
  at.push_back(s.size());
  auto run = [&](size_t k, bool (*pred)(char32_t)) {
    while (k < n && pred(cp[k])) ++k;
    return k;
  };
  for (size_t i = 0; i < n;) {
    size_t end = i;
    const char32_t c = cp[i];
    const char32_t c1 = i + 1 < n ? cp[i + 1] : 0;
    if (c == '\'' && i + 1 < n && (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd')) {
      end = i + 2;
    } else if (c == '\'' && i + 2 < n &&
               ((c1 == 'r' && cp[i + 2] == 'e') || (c1 == 'v' && cp[i + 2] == 'e') ||
                (c1 == 'l' && cp[i + 2] == 'l'))) {
      end = i + 3;
    } else if (c == ' ' && i + 1 < n && uni::is_letter(c1)) {
      end = run(i + 1, uni::is_letter);
    } else if (uni::is_letter(c)) {
      end = run(i, uni::is_letter);
    } else if (c == ' ' && i + 1 < n && uni::is_number(c1)) {
      end = run(i + 1, uni::is_number);
    } else if (uni::is_number(c)) {
      end = run(i, uni::is_number);
    } else if (c == ' ' && i + 1 < n && is_other_class(c1)) {
      end = run(i + 1, is_other_class);
    } else if (is_other_class(c)) {
      end = run(i, is_other_class);
    } else {
      // c is whitespace. \s+(?!\S): the run, minus its last character when a non-space
      // follows it; a single space before a non-space falls through to \s+.
      end = run(i, uni::is_whitespace);
      if (end < n && end - i > 1) --end;
    }
    out.push_back({at[i], at[end], true});
    i = end;
  }
}

void trim_offsets(Encoding& e, bool add_prefix_space) {
  const char32_t space = byte_to_char(' ');
  auto is_space = [&](char32_t c) { return c == space || uni::is_whitespace(c); };
  for (size_t i = 0; i < e.tokens.size(); ++i) {
    const std::string& tok = e.tokens[i];
    size_t leading = 0, trailing = 0, k = 0, len;
    while (k < tok.size() && is_space(uni::decode(tok, k, &len))) ++leading, k += len;
    for (size_t end = tok.size(); end > 0;) {  // walk back one character at a time
      size_t start = end - 1;
      while (start > 0 && (static_cast<unsigned char>(tok[start]) & 0xC0) == 0x80) --start;
      if (!is_space(uni::decode(tok, start, &len))) break;
      ++trailing;
      end = start;
    }
    if (leading == 0 && trailing == 0) continue;
    auto& [b, en] = e.offsets[i];
    if (leading > 0) {
      const bool is_first = i == 0 || b == 0;
      // The single space add_prefix_space added before the first word is not in the text.
      if (is_first && add_prefix_space && leading == 1) leading = 0;
      b = std::min(b + leading, en);
    }
    if (trailing > 0 && en >= trailing) en = std::max(en - trailing, b);
  }
}

}  // namespace strata::tok::byte_level
