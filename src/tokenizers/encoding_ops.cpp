#include "tokenizers/encoding_ops.h"

#include <algorithm>

#include "util/error.h"

namespace strata::tok::encoding_ops {

namespace {

Encoding window(const Encoding& e, size_t b, size_t en) {
  auto cut = [&](const auto& v) {
    return std::decay_t<decltype(v)>(v.begin() + static_cast<std::ptrdiff_t>(b),
                                     v.begin() + static_cast<std::ptrdiff_t>(en));
  };
  Encoding w;
  w.ids = cut(e.ids);
  w.type_ids = cut(e.type_ids);
  w.tokens = cut(e.tokens);
  w.offsets = cut(e.offsets);
  w.special_tokens_mask = cut(e.special_tokens_mask);
  w.attention_mask = cut(e.attention_mask);
  return w;
}

template <typename T>
void append(std::vector<T>& a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
}

void concat(Encoding& e, const Encoding& pair) {
  append(e.ids, pair.ids);
  append(e.type_ids, pair.type_ids);
  append(e.tokens, pair.tokens);
  append(e.offsets, pair.offsets);
  append(e.special_tokens_mask, pair.special_tokens_mask);
  append(e.attention_mask, pair.attention_mask);
}

}  // namespace

void truncate(Encoding& e, size_t max_len, size_t stride, bool right) {
  const size_t len = e.ids.size();
  if (max_len >= len) return;
  if (max_len == 0) {
    Encoding all = std::move(e);
    e = Encoding{};
    e.overflowing.push_back(std::move(all));
    return;
  }
  if (stride >= max_len)
    fail("truncation: stride (", stride, ") must be smaller than the length left for the sequence (", max_len,
         ", max_length minus the special tokens)");
  const size_t step = max_len - stride;
  std::vector<std::pair<size_t, size_t>> parts;
  if (right) {
    for (size_t start = 0; start < len; start += step) {
      const size_t stop = std::min(start + max_len, len);
      parts.emplace_back(start, stop);
      if (stop == len) break;
    }
  } else {
    for (size_t k = 0; k < len; k += step) {  // stops at len, len - step, ...
      const size_t stop = len - k;
      const size_t start = stop > max_len ? stop - max_len : 0;
      parts.emplace_back(start, stop);
      if (start == 0) break;
    }
  }
  Encoding first = window(e, parts[0].first, parts[0].second);
  for (size_t i = 1; i < parts.size(); ++i) first.overflowing.push_back(window(e, parts[i].first, parts[i].second));
  e = std::move(first);
}

void merge_with(Encoding& e, const Encoding& pair) {
  std::vector<Encoding> overflowings;
  for (const Encoding& self_o : e.overflowing) {
    Encoding n = self_o;
    merge_with(n, pair);
    overflowings.push_back(std::move(n));
    for (const Encoding& other_o : pair.overflowing) {
      Encoding m = self_o;
      merge_with(m, other_o);
      overflowings.push_back(std::move(m));
    }
  }
  for (const Encoding& other_o : pair.overflowing) {
    Encoding n = e;
    merge_with(n, other_o);
    overflowings.push_back(std::move(n));
  }
  concat(e, pair);
  e.overflowing = std::move(overflowings);
}

Encoding merge(std::vector<Encoding>& encodings) {
  Encoding out;
  for (const Encoding& e : encodings) merge_with(out, e);
  return out;
}

void pad(Encoding& e, size_t target, int32_t pad_id, int32_t pad_type_id, const std::string& pad_token, bool right) {
  for (Encoding& o : e.overflowing) pad(o, target, pad_id, pad_type_id, pad_token, right);
  if (e.ids.size() >= target) return;
  const size_t n = target - e.ids.size();
  auto grow = [&](auto& v, const auto& value) { v.insert(right ? v.end() : v.begin(), n, value); };
  grow(e.ids, pad_id);
  grow(e.type_ids, pad_type_id);
  grow(e.tokens, pad_token);
  grow(e.attention_mask, 0);
  grow(e.special_tokens_mask, 1);
  grow(e.offsets, std::pair<size_t, size_t>(0, 0));
}

void truncate_encodings(Encoding& first, std::optional<Encoding>& second, const TruncationParams& p) {
  if (p.max_length == 0) {
    truncate(first, 0, p.stride, p.right);
    if (second) truncate(*second, 0, p.stride, p.right);
    return;
  }
  const size_t total = first.ids.size() + (second ? second->ids.size() : 0);
  if (total <= p.max_length) return;
  const size_t to_remove = total - p.max_length;
  if (p.strategy == TruncationStrategy::LongestFirst) {
    if (!second) {
      truncate(first, total - to_remove, p.stride, p.right);
      return;
    }
    size_t n1 = first.ids.size(), n2 = second->ids.size();
    const bool swap = n1 > n2;
    if (swap) std::swap(n1, n2);
    n2 = n1 > p.max_length ? n1 : std::max(n1, p.max_length - n1);
    if (n1 + n2 > p.max_length) {
      n1 = p.max_length / 2;
      n2 = n1 + p.max_length % 2;
    }
    if (swap) std::swap(n1, n2);
    truncate(first, n1, p.stride, p.right);
    truncate(*second, n2, p.stride, p.right);
    return;
  }
  Encoding* target = &first;
  if (p.strategy == TruncationStrategy::OnlySecond) {
    if (!second) fail("Truncation error: Second sequence not provided");
    target = &*second;
  }
  const size_t len = target->ids.size();
  if (len <= to_remove) fail("Truncation error: Sequence to truncate too short to respect the provided max_length");
  truncate(*target, len - to_remove, p.stride, p.right);
}

void pad_encodings(std::vector<Encoding>& batch, const PaddingParams& p) {
  if (batch.empty()) return;
  size_t length = p.max_length;
  if (p.strategy == PaddingStrategy::Longest) {
    length = 0;
    for (const Encoding& e : batch) length = std::max(length, e.ids.size());
  }
  if (p.pad_to_multiple_of > 0 && length % p.pad_to_multiple_of > 0)
    length += p.pad_to_multiple_of - length % p.pad_to_multiple_of;
  for (Encoding& e : batch) pad(e, length, p.pad_id, p.pad_type_id, p.pad_token, p.right);
}

}  // namespace strata::tok::encoding_ops
