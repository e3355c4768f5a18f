// Question answering features, as HF run_qa.py's prepare_train_features and
// prepare_validation_features make them: each example's (question.lstrip(), context) pair is
// tokenized with truncation="only_second", max_length=max_seq_length, stride=doc_stride and
// return_overflowing_tokens, so a long context gives several overlapping windows, each a
// feature. Only right-side padding (pad_on_right) is supported: the question comes first.
//
// The windows are cut here from the whole question and context encodings, as HF tokenizers
// up to 0.22 cut them. tok::Tokenizer's own overflowing windows follow 0.23, whose early stop
// of tokenization under truncation leaves windows covering only the first max_length tokens
// of a long context (huggingface/tokenizers issue #2091): the rest of the context would never
// be seen.
//
// Training features carry the answer span as token positions: the first answer's character
// span mapped through the window's offsets, or both positions at the CLS index (the position
// of [CLS] / <s> in input_ids, else 0) when the example has no answer or the answer is not
// wholly inside the window's context. Evaluation features keep, per token, its character
// span in the context, or none for tokens outside it (question and special tokens), which is
// what post-processing (train/qa_postprocess.h) maps logits back to text with.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "data/qa_examples.h"
#include "data/text_encoder.h"
#include "tokenizers/tokenizer.h"

namespace strata::data {

struct QaFeatureOptions {
  size_t max_seq_length = 384;
  size_t doc_stride = 128;
  // The collator's pad_to_max_length (run_qa's default is true). HF labels features after
  // padding them, and its answer-start scan runs over padding in one edge case (qa_features.cpp),
  // so the positions depend on it.
  bool pad_to_max_length = false;
};

// A context span in code points; begin < 0 marks a token outside the context (HF's None).
struct CharSpan {
  int32_t begin = -1, end = -1;
  bool in_context() const { return begin >= 0; }
};

struct QaFeature {
  size_t example = 0;  // index into QaExamples::examples
  Encoded enc;         // ids, type ids, special mask; unpadded
  int32_t start_position = 0, end_position = 0;  // training features
  std::vector<CharSpan> offsets;                 // evaluation features: one per token
};

struct QaFeatures {
  bool train = false;
  std::vector<QaFeature> features;  // in example order, each example's windows in order
  std::vector<size_t> first;        // example e's features are [first[e], first[e + 1])

  size_t num_examples() const { return first.size() - 1; }
};

// Turns tok's truncation off (sequences are encoded whole): give it a Tokenizer of its own,
// as for TokenizerEncoder. Training features need an answers column. Throws strata::Error
// naming the file and line of an example whose question leaves no room for its context (or
// for more than doc_stride context tokens).
QaFeatures make_qa_features(tok::Tokenizer& tok, const QaExamples& examples, const QaFeatureOptions& opts,
                            bool train);

}  // namespace strata::data
