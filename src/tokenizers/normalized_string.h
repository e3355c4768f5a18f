// HF's NormalizedString: a piece of the input after normalization, with, for every byte of
// the normalized text, the byte range of the original input it came from. Offsets of tokens
// are found through these alignments, so every operation here updates them exactly as the
// Rust implementation does (including its quirks: outputs must match it byte for byte).
//
// Alignments are absolute byte offsets into the whole input sequence (HF keeps them relative
// to the piece plus a shift; the two are equivalent and absolute ones make slicing a copy).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizers/unicode.h"

namespace strata::tok {

struct Align {
  uint32_t b, e;
};

// One piece of a pattern search: the pieces cover the searched string in order, each either a
// match of the pattern or the text between matches.
struct Match {
  size_t b, e;
  bool is_match;
};

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// Every character for which pred(c) holds is its own match (HF's Pattern for Fn(char) -> bool).
template <typename Pred>
void find_char_matches(std::string_view s, Pred pred, std::vector<Match>& out) {
  out.clear();
  if (s.empty()) {
    out.push_back({0, 0, false});
    return;
  }
  size_t last = 0;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const char32_t c = uni::decode(s, i, &len);
    if (pred(c)) {
      if (last < i) out.push_back({last, i, false});
      out.push_back({i, i + len, true});
      last = i + len;
    }
    i += len;
  }
  if (last < s.size()) out.push_back({last, s.size(), false});
}

// Non-overlapping occurrences of a literal, leftmost first (an escaped regex in HF).
void find_literal_matches(std::string_view s, std::string_view literal, std::vector<Match>& out);

class NormalizedString {
 public:
  NormalizedString() = default;
  // The whole of `original` (valid UTF-8), unnormalized; offsets start at 0.
  explicit NormalizedString(std::string_view original);

  const std::string& get() const { return norm_; }
  bool empty() const { return norm_.empty(); }
  uint32_t original_begin() const { return orig_b_; }
  // Original byte range of normalized bytes [b, e) (e > b).
  Align original_range(size_t b, size_t e) const { return {align_[b].b, align_[e - 1].e}; }

  // Replaces the normalized text by `dest` (see uni::CharChange) after skipping
  // `initial_offset` characters, as NormalizedString::transform does.
  void transform(const std::vector<uni::CharChange>& dest, size_t initial_offset);
  void filter(bool (*keep)(char32_t));
  void map(char32_t (*f)(char32_t));
  void lowercase();
  void normalize_unicode(bool compat, bool compose);  // NFD / NFKD / NFC / NFKC
  // Every byte b becomes the character f(b), aligned as its byte was (HF's byte-level
  // transform: a character's extra bytes are insertions sharing its alignment).
  void map_bytes(char32_t (*f)(unsigned char));
  void prepend(std::string_view s);
  void strip(bool left, bool right);
  // Replaces every matched piece by `content`.
  void replace(const std::vector<Match>& matches, std::string_view content);

  NormalizedString slice(size_t b, size_t e) const;
  // Splits on the matched pieces, treating them as `behavior` says; empty pieces stay in.
  void split(const std::vector<Match>& matches, SplitBehavior behavior, std::vector<NormalizedString>& out) const;

 private:
  // Replaces every character c by f(c) when that keeps every byte length (alignments stay);
  // false, and nothing changed, otherwise.
  bool replace_chars_in_place(char32_t (*f)(char32_t));
  void transform_range(size_t nb, size_t ne, const uni::CharChange* dest, size_t n, size_t initial_offset);

  std::string norm_;
  std::vector<Align> align_;  // one per byte of norm_
  uint32_t orig_b_ = 0;       // start of this piece in the original input
};

}  // namespace strata::tok
