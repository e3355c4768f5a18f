#include "models/batch_checks.h"

#include "util/error.h"

namespace strata {

ProblemType resolve_problem_type(const ModelConfig& c, const Batch& b) {
  if (c.problem_type != ProblemType::Unset) return c.problem_type;
  if (c.num_labels == 1) return ProblemType::Regression;
  return b.float_labels.empty() ? ProblemType::SingleLabel : ProblemType::MultiLabel;
}

int max_sequence_length(const ModelConfig& c) {
  return c.max_position_embeddings - c.position_offset;
}

namespace {

// Sequence to sequence: labels and decoder_input_ids, each absent or [B x Td].
void check_targets(const ModelConfig& c, const Batch& b, const std::string& src) {
  if (b.labels.empty() && b.decoder_input_ids.empty()) return;
  const int max_t = max_sequence_length(c);
  if (b.Td <= 0) fail(src, ": sequence-to-sequence targets need their length Td (> 0)");
  if (b.Td > max_t) fail(src, ": target length ", b.Td, " exceeds the decoder's ", max_t, " positions");
  const size_t n = static_cast<size_t>(b.B) * b.Td;
  for (const auto& [field, v] : {std::pair{"labels", &b.labels}, std::pair{"decoder_input_ids", &b.decoder_input_ids}}) {
    if (v->empty()) continue;
    if (v->size() != n) fail(src, ": ", field, " must be [", b.B, " x ", b.Td, "] (one row per input row)");
    const bool labels = v == &b.labels;
    for (size_t i = 0; i < n; ++i)
      if (!(labels && (*v)[i] == -100) && ((*v)[i] < 0 || (*v)[i] >= c.vocab_size))
        fail(src, ": ", field, "[", i / b.Td, "][", i % b.Td, "] = ", (*v)[i], " is ", labels ? "neither -100 nor " : "not ",
             "a token id < ", c.vocab_size);
  }
}

}  // namespace

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
  if (per_token_labels(c.task)) {
    const bool tags = c.task == Task::TokenClassification;
    const int classes = tags ? c.num_labels : c.vocab_size;
    if (c.task == Task::PreTraining && !b.sentence_order_label.empty()) {
      if (b.sentence_order_label.size() != static_cast<size_t>(b.B))
        fail(src, ": sentence_order_label must hold one 0/1 value per row (", b.B, ")");
      for (int i = 0; i < b.B; ++i)
        if (b.sentence_order_label[i] != 0 && b.sentence_order_label[i] != 1 && b.sentence_order_label[i] != -100)
          fail(src, ": sentence_order_label[", i, "] = ", b.sentence_order_label[i], "; expected 0 or 1");
    }
    if (b.labels.empty()) return;
    if (b.labels.size() != n)
      fail(src, ": ", task_name(c.task), " labels must be [", b.B, " x ", b.T, "] ", tags ? "tag" : "token",
           " ids or -100");
    for (size_t i = 0; i < n; ++i)
      if (b.labels[i] != -100 && (b.labels[i] < 0 || b.labels[i] >= classes))
        fail(src, ": labels[", i / b.T, "][", i % b.T, "] = ", b.labels[i], " is neither -100 nor a ",
             tags ? "tag" : "token", " id < ", classes);
  } else if (c.task == Task::Seq2SeqLM) {
    check_targets(c, b, src);
  } else if (c.task == Task::QuestionAnswering) {
    if (b.start_positions.empty() && b.end_positions.empty()) return;
    if (b.start_positions.size() != static_cast<size_t>(b.B) || b.end_positions.size() != static_cast<size_t>(b.B))
      fail(src, ": question answering needs start_positions and end_positions, one per row (", b.B, ")");
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
  if (c.task == Task::QuestionAnswering) {  // rows whose start is inside the sequence (HF ignores position T)
    double n = 0;
    for (int32_t p : b.start_positions) n += p < b.T;
    return n;
  }
  if (c.task == Task::CausalLM) {  // labels are shifted: position 0 of each row is never a target
    double n = 0;
    for (size_t i = 0; i < b.labels.size(); ++i) n += (i % b.T) != 0 && b.labels[i] != -100;
    return n;
  }
  if (per_token_labels(c.task) || c.task == Task::Seq2SeqLM || resolve_problem_type(c, b) == ProblemType::SingleLabel) {
    double n = 0;
    for (int32_t l : b.labels) n += l != -100;
    return n;
  }
  return static_cast<double>(b.float_labels.size());
}

}  // namespace strata
