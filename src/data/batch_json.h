// BATCH.json for `strata step`: {"input_ids": [[...]], "attention_mask": [[...]],
// "token_type_ids": [[...]] (optional), "labels": [...] or [[...]] (optional)}.
#pragma once
#include <string>

#include "models/batch.h"

namespace strata::data {

Batch read_batch_json(const std::string& path, const ModelConfig& cfg);

}  // namespace strata::data
