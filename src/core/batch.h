// One batch of model inputs and targets, as the data loader or `strata step` make it. A
// plain value type shared by data/, models/ and train/ (the lowest room: it includes nothing
// of theirs).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata {

struct Batch {
  int B = 0, T = 0;
  std::vector<int32_t> input_ids;       // [B*T]
  std::vector<int32_t> attention_mask;  // [B*T], 1 = attend, 0 = padding
  std::vector<int32_t> token_type_ids;  // [B*T]; zeros when the input had none
  // Class ids [B] (sequence classification), or per position [B*T] with -100 = ignored:
  // token ids (masked / causal LM; causal-LM labels are unshifted, the loss shifts them),
  // or tag ids (token classification).
  // Sequence to sequence (Task::Seq2SeqLM): labels are the targets [B*Td] instead, -100 =
  // ignored, and the decoder reads them shifted right (HF's shift_tokens_right).
  std::vector<int32_t> labels;
  // Sequence to sequence: the decoder's length, and its inputs [B*Td] when given explicitly
  // (generation; HF's decoder_input_ids) instead of derived from the labels. 0 without targets.
  int Td = 0;
  std::vector<int32_t> decoder_input_ids;
  std::vector<double> float_labels;     // targets [B*num_labels] (regression, multi-label)
  std::vector<int32_t> start_positions, end_positions;  // [B] answer span (question answering)
  std::vector<int32_t> sentence_order_label;            // [B] ALBERT sentence-order prediction
  // [B*T] token classification: the word each token came from, -1 for special tokens and
  // padding (HF's word_ids()), so predictions map back to words without labels.
  std::vector<int32_t> word_ids;
  std::vector<size_t> example_ids;      // dataset index of each row, where the loader knows it
};

}  // namespace strata
