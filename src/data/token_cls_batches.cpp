#include "data/token_cls_batches.h"

namespace strata::data {

TokenClsBatches::TokenClsBatches(std::shared_ptr<const TokenClsDataset> data, std::shared_ptr<const WordEncoder> encoder,
                                 TagSet tags, bool label_all_tokens, CollatorOptions collator)
    : data_(std::move(data)),
      encoder_(std::move(encoder)),
      tags_(std::move(tags)),
      label_all_tokens_(label_all_tokens),
      collator_(collator) {}

Batch TokenClsBatches::make(std::span<const size_t> examples, uint64_t) const {
  std::vector<Encoded> rows;
  std::vector<std::vector<int32_t>> labels;
  rows.reserve(examples.size());
  labels.reserve(examples.size());
  for (size_t i : examples) {
    WordEncoding we = encoder_->encode(data_->words[i]);
    labels.push_back(align_labels(we.word_ids, data_->tags[i], tags_, label_all_tokens_));
    rows.push_back(std::move(we.enc));
  }
  return collate(std::move(rows), collator_, encoder_->pad_id(), std::move(labels));
}

}  // namespace strata::data
