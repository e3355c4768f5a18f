// UTF-8 and Unicode character properties for the tokenizers, as the HF tokenizers library
// (Rust) defines them. Categories, case mappings, decompositions and grapheme boundaries come
// from utf8proc (Unicode 15.0); only what utf8proc does not expose is spelled out here: the
// White_Space property, the CJK blocks BERT isolates, and the Unicode version (age) of
// characters, because some of HF's crates still classify with Unicode 8.0 / 9.0 data.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::tok::uni {

// Length of the UTF-8 sequence that starts with `lead` (valid input only).
inline size_t seq_len(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

// Decodes the code point at s[i] of valid UTF-8; *len receives its byte length.
inline char32_t decode(std::string_view s, size_t i, size_t* len) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *len = 1;
    return b0;
  }
  if (b0 < 0xE0) {
    *len = 2;
    return ((b0 & 0x1Fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu);
  }
  if (b0 < 0xF0) {
    *len = 3;
    return ((b0 & 0x0Fu) << 12) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6) |
           (static_cast<unsigned char>(s[i + 2]) & 0x3Fu);
  }
  *len = 4;
  return ((b0 & 0x07u) << 18) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 12) |
         ((static_cast<unsigned char>(s[i + 2]) & 0x3Fu) << 6) | (static_cast<unsigned char>(s[i + 3]) & 0x3Fu);
}

inline size_t encoded_len(char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

void append_utf8(std::string& out, char32_t c);

// Each maximal ill-formed subsequence becomes one U+FFFD (the Unicode "substitution of maximal
// subparts", as Rust's String::from_utf8_lossy and Python's errors="replace" do).
std::string make_valid_utf8(std::string_view s);
bool is_valid_utf8(std::string_view s);

bool is_whitespace_slow(char32_t c);  // is_whitespace past ASCII
// White_Space (Rust char::is_whitespace, regex \s)
inline bool is_whitespace(char32_t c) {
  return c < 0x80 ? c == ' ' || (c >= 0x09 && c <= 0x0D) : is_whitespace_slow(c);
}

// These four see the Unicode version of the crates HF uses for them: 8.0 for the first three
// (unicode_categories), 9.0 for the last (unicode-normalization-alignments).
bool is_other(char32_t c);            // Cc, Cf or Co (unicode_categories' is_other)
bool is_punctuation(char32_t c);      // ASCII punctuation or a P* category
bool is_mark_nonspacing(char32_t c);  // Mn
bool is_combining_mark(char32_t c);   // Mn, Mc or Me
bool is_letter(char32_t c);           // L*  (regex \p{L})
bool is_number(char32_t c);           // N*  (regex \p{N}, Rust char::is_numeric)
bool is_word_char(char32_t c);        // regex \w: alphabetic, marks, Nd, Pc, joiners
bool is_chinese_char(char32_t c);     // the CJK blocks BertNormalizer pads with spaces
int category(char32_t c);             // utf8proc_category_t

// Rust char::to_lowercase: the full lowercase mapping (U+0130 is the only code point with an
// unconditional multi-character one). Writes 1 or 2 code points, returns the count.
int to_lowercase(char32_t c, char32_t out[2]);

// A character of a normalized string and how it relates to the one it replaces, as HF's
// NormalizedString::transform expects: 0 replaces one character, +1 is inserted, -n replaces
// one character and removes the n following ones.
struct CharChange {
  char32_t c;
  int32_t change;
};

// NFD / NFKD / NFC / NFKC of a valid UTF-8 string with Unicode 9.0 data and the alignment
// changes of HF's unicode-normalization-alignments: a decomposition's first character replaces
// the source character, the others are inserted; canonical reordering carries the changes
// along; a composition adds up the changes of what it combines.
void normalize_nf(std::string_view s, bool compat, bool compose, std::vector<CharChange>& out);
// Quick test: true when normalize_nf would return every character unchanged.
bool nf_is_identity(std::string_view s, bool compat, bool compose);

// Extended grapheme cluster boundaries (UAX #29) of a valid UTF-8 string: byte offsets of the
// cluster starts, then s.size().
std::vector<size_t> grapheme_bounds(std::string_view s);

}  // namespace strata::tok::uni
