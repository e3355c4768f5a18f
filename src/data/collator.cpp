#include "data/collator.h"

#include <algorithm>
#include <cassert>

#include "util/error.h"

namespace strata::data {

void truncate(Encoded& e, size_t max_len, std::vector<int32_t>* token_labels) {
  const size_t n = e.ids.size();
  if (max_len == 0 || n <= max_len) return;
  auto cut = [&](auto& v) {
    if (v.empty()) return;
    if (!e.special_mask.empty() && e.special_mask[n - 1]) v[max_len - 1] = v[n - 1];
    v.resize(max_len);
  };
  cut(e.ids);
  cut(e.type_ids);
  if (token_labels) cut(*token_labels);
  cut(e.special_mask);  // last: the others read its final entry
}

Batch collate(std::vector<Encoded> rows, const CollatorOptions& opts, int32_t pad_id,
              std::vector<std::vector<int32_t>> token_labels) {
  assert(token_labels.empty() || token_labels.size() == rows.size());
  if (opts.pad_to_max_length && opts.max_seq_length == 0) fail("pad_to_max_length needs max_seq_length > 0");
  Batch b;
  b.B = static_cast<int>(rows.size());
  if (rows.empty()) return b;
  size_t longest = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    truncate(rows[r], opts.max_seq_length, token_labels.empty() ? nullptr : &token_labels[r]);
    longest = std::max(longest, rows[r].ids.size());
  }
  size_t T = opts.pad_to_max_length ? opts.max_seq_length : longest;
  if (opts.pad_to_multiple_of > 0)
    T = (T + opts.pad_to_multiple_of - 1) / opts.pad_to_multiple_of * opts.pad_to_multiple_of;
  b.T = static_cast<int>(T);
  const size_t n = rows.size() * T;
  b.input_ids.assign(n, pad_id);
  b.attention_mask.assign(n, 0);
  b.token_type_ids.assign(n, 0);
  if (!token_labels.empty()) b.labels.assign(n, -100);
  for (size_t r = 0; r < rows.size(); ++r) {
    const Encoded& e = rows[r];
    const size_t base = r * T;
    std::copy(e.ids.begin(), e.ids.end(), b.input_ids.begin() + static_cast<std::ptrdiff_t>(base));
    std::fill_n(b.attention_mask.begin() + static_cast<std::ptrdiff_t>(base), e.ids.size(), 1);
    std::copy(e.type_ids.begin(), e.type_ids.end(), b.token_type_ids.begin() + static_cast<std::ptrdiff_t>(base));
    if (!token_labels.empty())
      std::copy(token_labels[r].begin(), token_labels[r].end(), b.labels.begin() + static_cast<std::ptrdiff_t>(base));
  }
  return b;
}

}  // namespace strata::data
