// Question answering batches: QaFeatures (qa_features.h) collated into padded Batches. The
// loader's dataset is the features, not the examples: Batch::example_ids (set by the
// DataLoader) are feature indices, and QaFeature::example maps each to its example.
// Training features also fill start_positions / end_positions [B].
#pragma once
#include <memory>

#include "data/batch_maker.h"
#include "data/collator.h"
#include "data/qa_features.h"

namespace strata::data {

class QaBatches final : public BatchMaker {
 public:
  // pad_id: pad_token_id(tokenizer); collator.max_seq_length and pad_to_max_length should be
  // those the features were made with.
  QaBatches(std::shared_ptr<const QaFeatures> features, int32_t pad_id, CollatorOptions collator);
  size_t size() const override { return features_->features.size(); }
  Batch make(std::span<const size_t> examples, uint64_t epoch) const override;

 private:
  std::shared_ptr<const QaFeatures> features_;
  int32_t pad_id_;
  CollatorOptions collator_;
};

}  // namespace strata::data
