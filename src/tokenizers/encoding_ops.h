// What HF's Encoding does to itself: truncation into overflowing windows, merging (with the
// cross product of overflowing windows), padding; and truncate_encodings for single / pair input.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "tokenizers/tokenizer.h"

namespace strata::tok::encoding_ops {

// Keeps the first (right) or last (left) max_len tokens; the rest become overflowing windows
// of max_len tokens overlapping by `stride`.
void truncate(Encoding& e, size_t max_len, size_t stride, bool right);
// Appends `pair`; overflowing windows combine as in Encoding::merge_with.
void merge_with(Encoding& e, const Encoding& pair);
Encoding merge(std::vector<Encoding>& encodings);
void pad(Encoding& e, size_t target, int32_t pad_id, int32_t pad_type_id, const std::string& pad_token, bool right);
// HF's truncate_encodings (strategies longest_first / only_first / only_second).
void truncate_encodings(Encoding& first, std::optional<Encoding>& second, const TruncationParams& p);
void pad_encodings(std::vector<Encoding>& batch, const PaddingParams& p);

}  // namespace strata::tok::encoding_ops
