// Language-model batches: token-source examples (token_source.h), truncated, collated, with
// labels [B*T] that are -100 at padding and
//  - masked LM: corrupted as mlm_masking.h says, labelled at the chosen positions only;
//  - causal LM (HF run_clm.py): every token labelled with its own id. Not shifted here: the
//    model's loss predicts token t+1 from position t, as HF's *ForCausalLM do. Grouped blocks
//    are all full, so padding only comes with line_by_line examples of different lengths.
#pragma once
#include <memory>
#include <optional>

#include "data/batch_maker.h"
#include "data/collator.h"
#include "data/mlm_masking.h"
#include "data/token_source.h"

namespace strata::data {

struct MaskedLm {
  double probability = 0.15;
  uint64_t seed = 42;
  bool whole_word = false;  // DataCollatorForWholeWordMask instead of per-token masking
};

class LmBatches final : public BatchMaker {
 public:
  // Causal LM without `mlm`. Takes the pad id from `encoder`, and for masked LM the mask id,
  // the vocabulary size and, for whole words, the word boundaries (word_continuation_table);
  // masked LM with an encoder that has no mask token is an error.
  LmBatches(std::shared_ptr<const TokenSource> source, const TextEncoder& encoder, CollatorOptions collator,
            std::optional<MaskedLm> mlm);
  size_t size() const override { return source_->size(); }
  Batch make(std::span<const size_t> examples, uint64_t epoch) const override;

 private:
  std::shared_ptr<const TokenSource> source_;
  CollatorOptions collator_;
  int32_t pad_id_;
  std::optional<MlmOptions> mlm_;
};

}  // namespace strata::data
