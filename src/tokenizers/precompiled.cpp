// Precompiled: sentencepiece's normalization rules as a compiled charsmap (its
// "precompiled_charsmap", base64 in tokenizer.json): a little-endian u32 trie size, a Darts
// double-array trie over UTF-8 bytes, then a blob of NUL-terminated replacement strings the
// trie's values point into. The lookup follows sentencepiece's Darts::DoubleArray and HF's
// Precompiled normalizer, including its grapheme-first quirk: a grapheme shorter than 6 bytes
// is replaced as a whole by the rule of its *shortest* matching prefix; otherwise each
// character is looked up on its own.
#include <cstring>

#include "tokenizers/normalizers.h"
#include "util/error.h"

namespace strata::tok {

namespace {

std::string base64_decode(const std::string& in, const std::string& where) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(in.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < in.size() && in[i] != '='; ++i) {
    const int v = value(in[i]);
    if (v < 0) fail(where, ".precompiled_charsmap: invalid base64 character at offset ", i);
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  for (; i < in.size(); ++i)
    if (in[i] != '=') fail(where, ".precompiled_charsmap: invalid base64 padding");
  return out;
}

class Precompiled final : public Normalizer {
 public:
  Precompiled(const std::string& charsmap_base64, const std::string& where) {
    const std::string blob = base64_decode(charsmap_base64, where);
    if (blob.size() < 4) fail(where, ".precompiled_charsmap: too short for a charsmap");
    uint32_t trie_bytes;
    std::memcpy(&trie_bytes, blob.data(), 4);  // little-endian on every platform strata targets
    if (trie_bytes % 4 != 0 || 4 + static_cast<size_t>(trie_bytes) > blob.size())
      fail(where, ".precompiled_charsmap: trie size ", trie_bytes, " does not fit the ", blob.size(), "-byte charsmap");
    units_.resize(trie_bytes / 4);
    std::memcpy(units_.data(), blob.data() + 4, trie_bytes);
    normalized_ = blob.substr(4 + trie_bytes);
    if (!uni::is_valid_utf8(normalized_)) fail(where, ".precompiled_charsmap: replacement strings are not UTF-8");
    if (units_.empty()) fail(where, ".precompiled_charsmap: empty trie");
  }

  void normalize(NormalizedString& s) const override {
    const std::string& t = s.get();
    std::vector<uni::CharChange> dest;
    dest.reserve(t.size() + 8);
    bool modified = false;
    const std::vector<size_t> bounds = uni::grapheme_bounds(t);
    for (size_t g = 0; g + 1 < bounds.size(); ++g) {
      const std::string_view grapheme = std::string_view(t).substr(bounds[g], bounds[g + 1] - bounds[g]);
      std::string_view norm;
      if (grapheme.size() < 6 && transform(grapheme, &norm)) {
        modified = true;
        replace(dest, grapheme, norm);
        continue;
      }
      for (size_t i = 0; i < grapheme.size();) {
        size_t len;
        const char32_t c = uni::decode(grapheme, i, &len);
        const std::string_view part = grapheme.substr(i, len);
        i += len;
        if (transform(part, &norm)) {
          modified = true;
          replace(dest, part, norm);
        } else {
          dest.push_back({c, 0});
        }
      }
    }
    if (modified) s.transform(dest, 0);
  }

 private:
  // Darts unit fields.
  static bool has_leaf(uint32_t u) { return (u >> 8) & 1; }
  static uint32_t value(uint32_t u) { return u & ((1u << 31) - 1); }
  static uint32_t label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
  static uint32_t offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

  // The replacement of the first (shortest) rule that is a prefix of `chunk`.
  bool transform(std::string_view chunk, std::string_view* out) const {
    size_t pos = offset(units_[0]);
    for (unsigned char c : chunk) {
      if (c == 0) break;
      pos ^= c;
      if (pos >= units_.size()) return false;
      const uint32_t unit = units_[pos];
      if (label(unit) != c) return false;
      pos ^= offset(unit);
      if (pos >= units_.size()) return false;
      if (has_leaf(unit)) return normalized_at(value(units_[pos]), out);
    }
    return false;
  }

  bool normalized_at(size_t index, std::string_view* out) const {
    if (index > normalized_.size()) return false;
    const size_t end = normalized_.find('\0', index);
    *out = std::string_view(normalized_).substr(index, (end == std::string::npos ? normalized_.size() : end) - index);
    return true;
  }

  // HF's `replace`: the new characters replace the old ones one for one; extra new ones are
  // insertions, and a shorter replacement removes the surplus old ones with its last character
  // (or with the character before it when the replacement is empty).
  static void replace(std::vector<uni::CharChange>& dest, std::string_view old_part, std::string_view new_part) {
    int32_t old_count = 0, new_count = 0;
    for (size_t i = 0; i < old_part.size(); i += uni::seq_len(static_cast<unsigned char>(old_part[i]))) ++old_count;
    for (size_t i = 0; i < new_part.size();) {
      size_t len;
      dest.push_back({uni::decode(new_part, i, &len), 0});
      i += len;
      ++new_count;
    }
    const int32_t diff = new_count - old_count;
    if (diff > 0) {
      for (int32_t k = 0; k < diff; ++k) dest[dest.size() - 1 - static_cast<size_t>(k)].change = 1;
    } else if (diff < 0 && !dest.empty()) {
      dest.back().change += diff;
    }
  }

  std::vector<uint32_t> units_;
  std::string normalized_;
};

}  // namespace

std::unique_ptr<Normalizer> make_precompiled(const std::string& charsmap_base64, const std::string& where) {
  return std::make_unique<Precompiled>(charsmap_base64, where);
}

}  // namespace strata::tok
