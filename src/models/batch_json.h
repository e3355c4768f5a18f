// BATCH.json for `strata step`: {"input_ids": [[...]], "attention_mask": [[...]],
// "token_type_ids": [[...]] (optional), "labels": [...] or [[...]] (optional)}.
#pragma once
#include <string>

#include "models/batch_checks.h"

namespace strata {

Batch read_batch_json(const std::string& path, const ModelConfig& cfg);

}  // namespace strata
