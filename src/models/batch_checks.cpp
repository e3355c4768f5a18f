#include "models/batch_checks.h"

#include "util/error.h"

namespace strata {

ProblemType resolve_problem_type(const ModelConfig& c, const Batch& b) {
  if (c.problem_type != ProblemType::Unset) return c.problem_type;
  if (c.num_labels == 1) return ProblemType::Regression;
  return b.float_labels.empty() ? ProblemType::SingleLabel : ProblemType::MultiLabel;
}

int max_sequence_length(const ModelConfig& c) {
  return c.family == Family::Roberta ? c.max_position_embeddings - c.pad_token_id - 1 : c.max_position_embeddings;
}

void check_batch(const ModelConfig& c, const Batch& b, const std::string& src) {
  const size_t n = static_cast<size_t>(b.B) * b.T;
  if (b.B <= 0 || b.T <= 0) fail(src, ": empty batch");
  if (b.input_ids.size() != n || b.attention_mask.size() != n || b.token_type_ids.size() != n)
    fail(src, ": input_ids, attention_mask and token_type_ids must all be [", b.B, " x ", b.T, "]");
  const int max_t = max_sequence_length(c);
  if (b.T > max_t)
    fail(src, ": sequence length ", b.T, " exceeds the model's ", max_t, " positions (max_position_embeddings ",
         c.max_position_embeddings, ")");
  for (size_t i = 0; i < n; ++i) {
    const int row = static_cast<int>(i / b.T), col = static_cast<int>(i % b.T);
    if (b.input_ids[i] < 0 || b.input_ids[i] >= c.vocab_size)
      fail(src, ": input_ids[", row, "][", col, "] = ", b.input_ids[i], " is outside the vocabulary [0, ",
           c.vocab_size, ")");
    if (b.attention_mask[i] != 0 && b.attention_mask[i] != 1)
      fail(src, ": attention_mask[", row, "][", col, "] = ", b.attention_mask[i], "; expected 0 or 1");
    const int types = c.type_vocab_size > 0 ? c.type_vocab_size : 1;
    if (b.token_type_ids[i] < 0 || b.token_type_ids[i] >= types)
      fail(src, ": token_type_ids[", row, "][", col, "] = ", b.token_type_ids[i], "; expected 0..", types - 1,
           c.type_vocab_size == 0 ? " (this model has no token types)" : "");
  }
  if (c.task == Task::MaskedLM) {
    if (b.labels.empty()) return;
    if (b.labels.size() != n) fail(src, ": masked-LM labels must be [", b.B, " x ", b.T, "] token ids or -100");
    for (size_t i = 0; i < n; ++i)
      if (b.labels[i] != -100 && (b.labels[i] < 0 || b.labels[i] >= c.vocab_size))
        fail(src, ": labels[", i / b.T, "][", i % b.T, "] = ", b.labels[i], " is neither -100 nor a token id < ",
             c.vocab_size);
  } else if (c.task == Task::SequenceClassification) {
    if (b.labels.empty() && b.float_labels.empty()) return;
    switch (resolve_problem_type(c, b)) {
      case ProblemType::SingleLabel:
        if (b.labels.size() != static_cast<size_t>(b.B))
          fail(src, ": single-label classification needs one integer label per row (", b.B, ")");
        for (int i = 0; i < b.B; ++i)
          if (b.labels[i] != -100 && (b.labels[i] < 0 || b.labels[i] >= c.num_labels))
            fail(src, ": labels[", i, "] = ", b.labels[i], " is not a class id in [0, ", c.num_labels, ")");
        break;
      case ProblemType::MultiLabel:
      case ProblemType::Regression:
        if (b.float_labels.size() != static_cast<size_t>(b.B) * c.num_labels)
          fail(src, ": ", problem_type_name(resolve_problem_type(c, b)), " needs ", c.num_labels,
               " target value(s) per row, ", b.B, " rows");
        break;
      case ProblemType::Unset: break;
    }
  }
}

double label_count(const ModelConfig& c, const Batch& b) {
  if (c.task == Task::MaskedLM || resolve_problem_type(c, b) == ProblemType::SingleLabel) {
    double n = 0;
    for (int32_t l : b.labels) n += l != -100;
    return n;
  }
  return static_cast<double>(b.float_labels.size());
}

}  // namespace strata
