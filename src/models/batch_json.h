// BATCH.json for `strata step`: {"input_ids": [[...]], "attention_mask": [[...]], optional
// "token_type_ids": [[...]], "labels": [...] or [[...]], "start_positions" / "end_positions":
// [...] (question answering), "sentence_order_label": [...] (ALBERT pretraining)}. For a
// sequence-to-sequence model labels are [[...]] of the targets' own length, and optional
// "decoder_input_ids" [[...]] of that length replace the labels shifted right.
#pragma once
#include <string>

#include "models/batch_checks.h"

namespace strata {

Batch read_batch_json(const std::string& path, const ModelConfig& cfg);

}  // namespace strata
