// Sequence-to-sequence batches, as run_summarization.py's preprocessing and HF's
// DataCollatorForSeq2Seq make them: the source (source_prefix + text) encoded and truncated to
// max_source_length, padded as any text batch; the target encoded (the tokenizer's special
// tokens included: BART's <s> ... </s>, T5's ... </s>), truncated to max_target_length, padded
// with -100 to the longest target (or to max_target_length with pad_to_max_length), into labels
// [B*Td]. The model makes its decoder inputs from the labels (shift right).
//
// Every example is encoded once, when the batches are made, so truncated targets are counted
// and reported once (HF truncates them silently).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/batch_maker.h"
#include "data/collator.h"
#include "data/seq2seq_examples.h"
#include "data/text_encoder.h"

namespace strata::data {

struct Seq2SeqBatchOptions {
  std::string source_prefix;
  size_t max_source_length = 1024, max_target_length = 128;
  bool pad_to_max_length = false;  // both sides to their max length
  size_t pad_to_multiple_of = 0;   // both sides
  bool ignore_pad_token_for_loss = true;  // padded targets -100 (else the pad id, with pad_to_max_length)
};

class Seq2SeqBatches final : public BatchMaker {
 public:
  // `encoder` encodes sources and targets with its own truncation off (max_length 0); warn
  // receives the count of truncated targets (default: stderr).
  Seq2SeqBatches(std::shared_ptr<const Seq2SeqExamples> examples, const TextEncoder& encoder, Seq2SeqBatchOptions o,
                 const WarnFn& warn = {});
  size_t size() const override { return sources_.size(); }
  Batch make(std::span<const size_t> examples, uint64_t epoch) const override;

  const Seq2SeqExamples& examples() const { return *examples_; }

 private:
  std::shared_ptr<const Seq2SeqExamples> examples_;
  std::vector<Encoded> sources_;
  std::vector<std::vector<int32_t>> targets_;  // empty without targets
  int32_t pad_id_;
  Seq2SeqBatchOptions o_;
};

}  // namespace strata::data
