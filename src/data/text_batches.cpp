#include "data/text_batches.h"

namespace strata::data {

TextBatches::TextBatches(std::shared_ptr<const TextDataset> data, std::shared_ptr<const TextEncoder> encoder,
                         CollatorOptions collator)
    : data_(data), texts_(data, encoder), pad_id_(encoder->pad_id()), collator_(collator) {}

Batch TextBatches::make(std::span<const size_t> examples, uint64_t) const {
  std::vector<Encoded> rows;
  rows.reserve(examples.size());
  for (size_t i : examples) rows.push_back(texts_.get(i));
  Batch b = collate(std::move(rows), collator_, pad_id_);
  if (!data_->has_labels()) return b;
  for (size_t i : examples) {
    if (data_->single_label()) {
      b.labels.push_back(data_->label(i));
    } else {
      const auto t = data_->targets(i);
      b.float_labels.insert(b.float_labels.end(), t.begin(), t.end());
    }
  }
  return b;
}

}  // namespace strata::data
