// One batch of model inputs, as the data loader or `strata step` produce it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/config.h"

namespace strata {

struct Batch {
  int B = 0, T = 0;
  std::vector<int32_t> input_ids;       // [B*T]
  std::vector<int32_t> attention_mask;  // [B*T], 1 = attend, 0 = padding
  std::vector<int32_t> token_type_ids;  // [B*T]; zeros when the input had none
  std::vector<int32_t> labels;          // class ids [B] (single-label) or token ids / -100 [B*T] (masked LM)
  std::vector<double> float_labels;     // targets [B*num_labels] (regression, multi-label)
  std::vector<size_t> example_ids;      // dataset index of each row, where the loader knows it
};

// The loss a sequence-classification batch gets: config.problem_type if set, else HF's rule
// (one label -> regression; integer labels -> single-label; float labels -> multi-label).
ProblemType resolve_problem_type(const ModelConfig& c, const Batch& b);

// Checks the batch against the model: shapes, token ids inside the vocabulary, token types,
// mask values, sequence length vs position embeddings, labels vs task. `source` names the
// input in error messages.
void check_batch(const ModelConfig& c, const Batch& b, const std::string& source);

// The loss normaliser for this batch alone: labelled rows (single-label), labelled tokens
// (masked LM) or target elements (regression, multi-label). Accumulation sums these over
// micro-batches.
double label_count(const ModelConfig& c, const Batch& b);

}  // namespace strata
