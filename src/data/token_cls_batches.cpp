#include "data/token_cls_batches.h"

#include <algorithm>

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
  std::vector<std::vector<int32_t>> labels, word_ids;
  rows.reserve(examples.size());
  for (size_t i : examples) {
    WordEncoding we = encoder_->encode(data_->words[i]);
    if (data_->has_tags) labels.push_back(align_labels(we.word_ids, data_->tags[i], tags_, label_all_tokens_));
    word_ids.push_back(std::move(we.word_ids));
    rows.push_back(std::move(we.enc));
  }
  Batch b = collate(std::move(rows), collator_, encoder_->pad_id(), std::move(labels));
  b.word_ids.assign(static_cast<size_t>(b.B) * b.T, -1);
  for (size_t r = 0; r < word_ids.size(); ++r)
    std::copy_n(word_ids[r].begin(), std::min<size_t>(word_ids[r].size(), b.T), b.word_ids.begin() + r * b.T);
  return b;
}

}  // namespace strata::data
