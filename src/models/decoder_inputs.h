// What an encoder-decoder's decoder reads (BART, T5): the batch's decoder_input_ids when it
// has them (generation), else HF's shift_tokens_right of the labels (Task::Seq2SeqLM with
// labels) or, for the other heads and batches without labels, of input_ids:
// decoder_start_token_id, then the row shifted right by one, -100 read as pad_token_id.
#pragma once
#include <cstdint>
#include <vector>

#include "core/batch.h"
#include "models/config.h"

namespace strata {

// Sets *Td to the decoder's length (decoder_length).
std::vector<int32_t> decoder_inputs(const ModelConfig& c, const Batch& b, int32_t decoder_start_token_id, int* Td);
// The decoder's length: the batch's Td, or T when the decoder reads input_ids.
int decoder_length(const ModelConfig& c, const Batch& b);

}  // namespace strata
