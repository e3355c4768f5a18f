// Sequence-classification batches (and unlabelled ones for prediction): each example's text,
// or text pair, encoded, collated, with its class id (labels [B]) or targets
// (float_labels [B*num_labels]). Encodings are kept after their first use (EncodedTexts).
#pragma once
#include <memory>

#include "data/batch_maker.h"
#include "data/collator.h"
#include "data/dataset.h"
#include "data/text_encoder.h"
#include "data/token_source.h"

namespace strata::data {

class TextBatches final : public BatchMaker {
 public:
  TextBatches(std::shared_ptr<const TextDataset> data, std::shared_ptr<const TextEncoder> encoder,
              CollatorOptions collator);
  size_t size() const override { return data_->size(); }
  Batch make(std::span<const size_t> examples, uint64_t epoch) const override;

 private:
  std::shared_ptr<const TextDataset> data_;
  EncodedTexts texts_;
  int32_t pad_id_;
  CollatorOptions collator_;
};

}  // namespace strata::data
