// Masked-LM batches: token-source examples, truncated, masked (mlm_masking.h), collated;
// labels [B*T] with -100 at unmasked and padding positions.
#pragma once
#include <memory>

#include "data/batch_maker.h"
#include "data/collator.h"
#include "data/mlm_masking.h"
#include "data/token_source.h"

namespace strata::data {

class MlmBatches final : public BatchMaker {
 public:
  // Takes the pad id, [MASK] id and vocabulary size from `encoder`; an encoder without a
  // mask token is an error.
  MlmBatches(std::shared_ptr<const TokenSource> source, const TextEncoder& encoder, CollatorOptions collator,
             double mlm_probability, uint64_t seed);
  size_t size() const override { return source_->size(); }
  Batch make(std::span<const size_t> examples, uint64_t epoch) const override;

 private:
  std::shared_ptr<const TokenSource> source_;
  CollatorOptions collator_;
  int32_t pad_id_;
  MlmOptions mlm_;
};

}  // namespace strata::data
