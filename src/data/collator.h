// Collation: encoded examples -> one padded strata::Batch, as HF's DataCollatorWithPadding
// (dynamic: pad to the longest row, optionally rounded up to a multiple of
// pad_to_multiple_of) or run_glue's pad_to_max_length (every batch max_seq_length wide).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/text_encoder.h"
#include "core/batch.h"

namespace strata::data {

struct CollatorOptions {
  size_t max_seq_length = 128;  // rows are truncated to this; 0 = no limit
  bool pad_to_max_length = false;
  size_t pad_to_multiple_of = 0;  // 0 = off; may round T above max_seq_length, as HF does
};

// Cuts e (and its token labels, when given) to max_len tokens. When the last token is special
// ([SEP], </s>) it is kept as the last token, as the tokenizer's own truncation would.
void truncate(Encoded& e, size_t max_len, std::vector<int32_t>* token_labels = nullptr);

// Pads rows into a batch: input_ids (pad_id), attention_mask, token_type_ids (zeros where the
// encoder gave none or for padding). With token_labels (masked LM, one per row), labels is
// [B*T] padded with -100. Zero rows give an empty batch (B = T = 0): the share of a rank that
// got no examples of a last partial batch.
Batch collate(std::vector<Encoded> rows, const CollatorOptions& opts, int32_t pad_id,
              std::vector<std::vector<int32_t>> token_labels = {});

}  // namespace strata::data
