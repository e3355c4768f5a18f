// What a model makes of a batch: its loss type, its checks, its loss normaliser.
#pragma once
#include <string>

#include "core/batch.h"
#include "models/config.h"

namespace strata {

// The loss a sequence-classification batch gets: config.problem_type if set, else HF's rule
// (one label -> regression; integer labels -> single-label; float labels -> multi-label).
ProblemType resolve_problem_type(const ModelConfig& c, const Batch& b);

// The longest sequence the model takes: max_position_embeddings, less RoBERTa's position
// offset (pad_token_id + 1).
int max_sequence_length(const ModelConfig& c);

// Checks the batch against the model: shapes, token ids inside the vocabulary, token types,
// mask values, sequence length vs position embeddings, labels vs task. `source` names the
// input in error messages.
void check_batch(const ModelConfig& c, const Batch& b, const std::string& source);

// The loss normaliser for this batch alone: labelled rows (single-label), labelled tokens
// (masked LM) or target elements (regression, multi-label). Accumulation sums these over
// micro-batches.
double label_count(const ModelConfig& c, const Batch& b);

}  // namespace strata
