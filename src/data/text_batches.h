// Sequence-classification batches (and unlabelled ones for prediction): each example's text,
// or text pair, encoded, collated, with its class id (labels [B]) or targets
// (float_labels [B*num_labels]).
#pragma once
#include <memory>

#include "data/batch_maker.h"
#include "data/collator.h"
#include "data/dataset.h"
#include "data/text_encoder.h"

namespace strata::data {

class TextBatches final : public BatchMaker {
 public:
  TextBatches(std::shared_ptr<const TextDataset> data, std::shared_ptr<const TextEncoder> encoder,
              CollatorOptions collator);
  size_t size() const override { return data_->size(); }
  Batch make(std::span<const size_t> examples, uint64_t epoch) const override;

 private:
  std::shared_ptr<const TextDataset> data_;
  std::shared_ptr<const TextEncoder> encoder_;
  CollatorOptions collator_;
};

}  // namespace strata::data
