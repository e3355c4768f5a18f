#include "data/qa_batches.h"

namespace strata::data {

QaBatches::QaBatches(std::shared_ptr<const QaFeatures> features, int32_t pad_id, CollatorOptions collator)
    : features_(std::move(features)), pad_id_(pad_id), collator_(collator) {}

Batch QaBatches::make(std::span<const size_t> examples, uint64_t) const {
  std::vector<Encoded> rows;
  rows.reserve(examples.size());
  for (size_t i : examples) rows.push_back(features_->features[i].enc);
  Batch b = collate(std::move(rows), collator_, pad_id_);
  if (!features_->train) return b;
  for (size_t i : examples) {
    b.start_positions.push_back(features_->features[i].start_position);
    b.end_positions.push_back(features_->features[i].end_position);
  }
  return b;
}

}  // namespace strata::data
