// Token classification batches: each example's words encoded as pre-split words
// (word_encoder.h), its tags aligned to the tokens (align_labels), collated with labels [B*T]
// padded with -100. Encoding happens here, on the loader's threads, as for TextBatches.
#pragma once
#include <memory>

#include "data/batch_maker.h"
#include "data/collator.h"
#include "data/token_cls_data.h"
#include "data/word_encoder.h"

namespace strata::data {

class TokenClsBatches final : public BatchMaker {
 public:
  TokenClsBatches(std::shared_ptr<const TokenClsDataset> data, std::shared_ptr<const WordEncoder> encoder, TagSet tags,
                  bool label_all_tokens, CollatorOptions collator);
  size_t size() const override { return data_->size(); }
  Batch make(std::span<const size_t> examples, uint64_t epoch) const override;

 private:
  std::shared_ptr<const TokenClsDataset> data_;
  std::shared_ptr<const WordEncoder> encoder_;
  TagSet tags_;
  bool label_all_tokens_;
  CollatorOptions collator_;
};

}  // namespace strata::data
