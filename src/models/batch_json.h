// BATCH.json for `strata step`: {"input_ids": [[...]], "attention_mask": [[...]], optional
// "token_type_ids": [[...]], "labels": [...] or [[...]], "start_positions" / "end_positions":
// [...] (question answering), "sentence_order_label": [...] (ALBERT pretraining)}.
#pragma once
#include <string>

#include "models/batch_checks.h"

namespace strata {

Batch read_batch_json(const std::string& path, const ModelConfig& cfg);

}  // namespace strata
