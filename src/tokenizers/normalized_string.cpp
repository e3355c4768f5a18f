#include "tokenizers/normalized_string.h"

#include <algorithm>

namespace strata::tok {

void find_literal_matches(std::string_view s, std::string_view literal, std::vector<Match>& out) {
  out.clear();
  if (s.empty()) {
    out.push_back({0, 0, false});
    return;
  }
  size_t last = 0;
  if (!literal.empty()) {
    for (size_t pos = s.find(literal); pos != std::string_view::npos; pos = s.find(literal, pos)) {
      if (last < pos) out.push_back({last, pos, false});
      out.push_back({pos, pos + literal.size(), true});
      pos += literal.size();
      last = pos;
    }
  }
  if (last < s.size()) out.push_back({last, s.size(), false});
}

NormalizedString::NormalizedString(std::string_view original) : norm_(original) {
  align_.resize(original.size());
  for (size_t i = 0; i < original.size();) {
    const size_t len = uni::seq_len(static_cast<unsigned char>(original[i]));
    const Align a{static_cast<uint32_t>(i), static_cast<uint32_t>(i + len)};
    for (size_t k = 0; k < len; ++k) align_[i + k] = a;
    i += len;
  }
}

void NormalizedString::transform_range(size_t nb, size_t ne, const uni::CharChange* dest, size_t n,
                                       size_t initial_offset) {
  // `cur` walks the replaced characters of [nb, ne): HF's `offset`, which also picks the
  // alignment of each new character (the replaced one's, or the previous byte's for inserts).
  size_t cur = nb;
  for (size_t k = 0; k < initial_offset && cur < ne; ++k) cur += uni::seq_len(static_cast<unsigned char>(norm_[cur]));
  const Align none{orig_b_, orig_b_};
  std::string out;
  std::vector<Align> out_align;
  out.reserve(ne - nb + 8);
  out_align.reserve(ne - nb + 8);
  for (size_t k = 0; k < n; ++k) {
    const uni::CharChange& cc = dest[k];
    Align a;
    if (cc.change > 0)
      a = cur < 1 ? none : align_[cur - 1];
    else
      a = cur < align_.size() ? align_[cur] : (align_.empty() ? none : align_.back());
    if (cc.change <= 0 && cur < ne) cur += uni::seq_len(static_cast<unsigned char>(norm_[cur]));
    for (int32_t r = 0; r < -cc.change && cur < ne; ++r) cur += uni::seq_len(static_cast<unsigned char>(norm_[cur]));
    const size_t before = out.size();
    uni::append_utf8(out, cc.c);
    out_align.insert(out_align.end(), out.size() - before, a);
  }
  if (nb == 0 && ne == norm_.size()) {
    norm_.swap(out);
    align_.swap(out_align);
    return;
  }
  norm_.replace(nb, ne - nb, out);
  align_.erase(align_.begin() + static_cast<std::ptrdiff_t>(nb), align_.begin() + static_cast<std::ptrdiff_t>(ne));
  align_.insert(align_.begin() + static_cast<std::ptrdiff_t>(nb), out_align.begin(), out_align.end());
}

void NormalizedString::transform(const std::vector<uni::CharChange>& dest, size_t initial_offset) {
  transform_range(0, norm_.size(), dest.data(), dest.size(), initial_offset);
}

void NormalizedString::filter(bool (*keep)(char32_t)) {
  size_t i = 0;  // the common case keeps everything: nothing to transform
  for (size_t len; i < norm_.size() && keep(uni::decode(norm_, i, &len));) i += len;
  if (i == norm_.size()) return;
  // Each kept character carries the removal of the ones after it (-n); removals before the
  // first kept character are the initial offset.
  std::vector<uni::CharChange> dest;
  dest.reserve(norm_.size());
  int32_t removed = 0;
  size_t removed_start = 0;
  bool have_last = false;
  char32_t last = 0;
  for (i = 0; i < norm_.size();) {
    size_t len;
    const char32_t c = uni::decode(norm_, i, &len);
    i += len;
    if (!keep(c)) {
      ++removed;
      continue;
    }
    if (have_last)
      dest.push_back({last, -removed});
    else
      removed_start = static_cast<size_t>(removed);
    last = c;
    have_last = true;
    removed = 0;
  }
  if (have_last) dest.push_back({last, -removed});
  transform(dest, removed_start);
}

bool NormalizedString::replace_chars_in_place(char32_t (*f)(char32_t)) {
  bool changed = false;
  for (size_t i = 0; i < norm_.size();) {
    size_t len;
    const char32_t c = uni::decode(norm_, i, &len);
    const char32_t m = f(c);
    if (m != c) {
      if (uni::encoded_len(m) != len) return false;
      changed = true;
    }
    i += len;
  }
  if (!changed) return true;
  for (size_t i = 0; i < norm_.size();) {
    size_t len;
    const char32_t m = f(uni::decode(norm_, i, &len));
    if (len == 1) {
      norm_[i] = static_cast<char>(m);
    } else {
      std::string enc;
      uni::append_utf8(enc, m);
      norm_.replace(i, len, enc);
    }
    i += len;
  }
  return true;
}

void NormalizedString::map(char32_t (*f)(char32_t)) {
  if (replace_chars_in_place(f)) return;
  std::vector<uni::CharChange> dest;
  dest.reserve(norm_.size());
  for (size_t i = 0; i < norm_.size();) {
    size_t len;
    const char32_t c = uni::decode(norm_, i, &len);
    i += len;
    dest.push_back({f(c), 0});
  }
  transform(dest, 0);
}

namespace {
char32_t lower_one(char32_t c) {
  char32_t low[2];
  return uni::to_lowercase(c, low) == 1 ? low[0] : c;
}
}  // namespace

void NormalizedString::lowercase() {
  // Characters that lower-case to one character of the same length keep their alignments.
  bool simple = true;
  for (size_t i = 0; i < norm_.size() && simple;) {
    size_t len;
    char32_t low[2];
    const int n = uni::to_lowercase(uni::decode(norm_, i, &len), low);
    simple = n == 1 && uni::encoded_len(low[0]) == len;
    i += len;
  }
  if (simple && replace_chars_in_place(lower_one)) return;
  std::vector<uni::CharChange> dest;
  dest.reserve(norm_.size() + 4);
  for (size_t i = 0; i < norm_.size();) {
    size_t len;
    const char32_t c = uni::decode(norm_, i, &len);
    i += len;
    char32_t low[2];
    const int n = uni::to_lowercase(c, low);
    for (int k = 0; k < n; ++k) dest.push_back({low[k], k > 0 ? 1 : 0});
  }
  transform(dest, 0);
}

void NormalizedString::normalize_unicode(bool compat, bool compose) {
  if (uni::nf_is_identity(norm_, compat, compose)) return;
  std::vector<uni::CharChange> dest;
  uni::normalize_nf(norm_, compat, compose, dest);
  transform(dest, 0);
}

void NormalizedString::map_bytes(char32_t (*f)(unsigned char)) {
  std::string out;
  std::vector<Align> out_align;
  out.reserve(norm_.size() * 2);
  out_align.reserve(norm_.size() * 2);
  for (size_t i = 0; i < norm_.size(); ++i) {
    const size_t before = out.size();
    uni::append_utf8(out, f(static_cast<unsigned char>(norm_[i])));
    out_align.insert(out_align.end(), out.size() - before, align_[i]);
  }
  norm_.swap(out);
  align_.swap(out_align);
}

void NormalizedString::prepend(std::string_view s) {
  if (norm_.empty() || s.empty()) return;
  size_t first_len;
  const char32_t first = uni::decode(norm_, 0, &first_len);
  std::vector<uni::CharChange> dest;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    dest.push_back({uni::decode(s, i, &len), dest.empty() ? 0 : 1});
    i += len;
  }
  dest.push_back({first, 1});
  transform_range(0, first_len, dest.data(), dest.size(), 0);
}

void NormalizedString::strip(bool left, bool right) {
  std::vector<char32_t> chars;
  for (size_t i = 0; i < norm_.size();) {
    size_t len;
    chars.push_back(uni::decode(norm_, i, &len));
    i += len;
  }
  size_t leading = 0, trailing = 0;
  if (left)
    while (leading < chars.size() && uni::is_whitespace(chars[leading])) ++leading;
  if (right)
    while (trailing < chars.size() && uni::is_whitespace(chars[chars.size() - 1 - trailing])) ++trailing;
  if (leading == 0 && trailing == 0) return;
  std::vector<uni::CharChange> dest;
  const size_t count = chars.size();
  for (size_t i = 0; i < count; ++i) {
    if (i < leading || i + trailing >= count) continue;
    // HF compares the character index with the *byte* length here; kept for identical offsets.
    if (i + trailing + 1 == norm_.size())
      dest.push_back({chars[i], -static_cast<int32_t>(trailing)});
    else
      dest.push_back({chars[i], 0});
  }
  transform(dest, leading);
}

void NormalizedString::replace(const std::vector<Match>& matches, std::string_view content) {
  bool any = false;
  for (const Match& m : matches) any |= m.is_match;
  if (!any) return;
  std::string out;
  std::vector<Align> out_align;
  out.reserve(norm_.size());
  out_align.reserve(norm_.size());
  const Align none{orig_b_, orig_b_};
  size_t last = 0;
  for (const Match& m : matches) {
    if (!m.is_match) continue;
    out.append(norm_, last, m.b - last);
    out_align.insert(out_align.end(), align_.begin() + static_cast<std::ptrdiff_t>(last),
                     align_.begin() + static_cast<std::ptrdiff_t>(m.b));
    // Inserted characters take the alignment of the byte before them: the match's last one.
    const Align a = m.e < 1 ? none : align_[m.e - 1];
    out += content;
    out_align.insert(out_align.end(), content.size(), a);
    last = m.e;
  }
  out.append(norm_, last, std::string::npos);
  out_align.insert(out_align.end(), align_.begin() + static_cast<std::ptrdiff_t>(last), align_.end());
  norm_.swap(out);
  align_.swap(out_align);
}

NormalizedString NormalizedString::slice(size_t b, size_t e) const {
  NormalizedString s;
  s.norm_.assign(norm_, b, e - b);
  s.align_.assign(align_.begin() + static_cast<std::ptrdiff_t>(b), align_.begin() + static_cast<std::ptrdiff_t>(e));
  s.orig_b_ = e > b ? align_[b].b : orig_b_;
  return s;
}

void NormalizedString::split(const std::vector<Match>& matches, SplitBehavior behavior,
                             std::vector<NormalizedString>& out) const {
  struct Piece {
    size_t b, e;
    bool remove;
  };
  thread_local std::vector<Piece> pieces;
  pieces.clear();
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (const Match& m : matches) pieces.push_back({m.b, m.e, false});
      break;
    case SplitBehavior::Removed:
      for (const Match& m : matches) pieces.push_back({m.b, m.e, m.is_match});
      break;
    case SplitBehavior::Contiguous: {
      bool prev = false;
      for (const Match& m : matches) {
        if (m.is_match == prev && !pieces.empty())
          pieces.back().e = m.e;
        else
          pieces.push_back({m.b, m.e, false});
        prev = m.is_match;
      }
      break;
    }
    case SplitBehavior::MergedWithPrevious: {
      bool prev = false;
      for (const Match& m : matches) {
        if (m.is_match && !prev && !pieces.empty())
          pieces.back().e = m.e;
        else
          pieces.push_back({m.b, m.e, false});
        prev = m.is_match;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      bool prev = false;
      for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
        if (it->is_match && !prev && !pieces.empty())
          pieces.back().b = it->b;
        else
          pieces.push_back({it->b, it->e, false});
        prev = it->is_match;
      }
      std::reverse(pieces.begin(), pieces.end());
      break;
    }
  }
  for (const Piece& p : pieces)
    if (!p.remove) out.push_back(slice(p.b, p.e));
}

}  // namespace strata::tok
