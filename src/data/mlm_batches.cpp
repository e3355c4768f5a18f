#include "data/mlm_batches.h"

#include "util/error.h"

namespace strata::data {

MlmBatches::MlmBatches(std::shared_ptr<const TokenSource> source, const TextEncoder& encoder, CollatorOptions collator,
                       double mlm_probability, uint64_t seed)
    : source_(std::move(source)), collator_(collator), pad_id_(encoder.pad_id()) {
  if (!encoder.mask_id()) fail("masked LM needs a mask token, and the tokenizer has neither [MASK] nor <mask>");
  if (!(mlm_probability > 0 && mlm_probability < 1))
    fail("mlm_probability: expected a value in (0, 1), got ", mlm_probability);
  mlm_.probability = mlm_probability;
  mlm_.seed = seed;
  mlm_.mask_id = *encoder.mask_id();
  mlm_.vocab_size = encoder.vocab_size();
}

Batch MlmBatches::make(std::span<const size_t> examples, uint64_t epoch) const {
  std::vector<Encoded> rows;
  std::vector<std::vector<int32_t>> labels;
  rows.reserve(examples.size());
  labels.reserve(examples.size());
  for (size_t i : examples) {
    Encoded e = source_->get(i);
    truncate(e, collator_.max_seq_length);  // before masking: only kept tokens are drawn
    labels.push_back(mask_tokens(e, mlm_, epoch, i));
    rows.push_back(std::move(e));
  }
  return collate(std::move(rows), collator_, pad_id_, std::move(labels));
}

}  // namespace strata::data
