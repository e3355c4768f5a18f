#include "data/lm_batches.h"

#include "util/error.h"

namespace strata::data {

LmBatches::LmBatches(std::shared_ptr<const TokenSource> source, const TextEncoder& encoder, CollatorOptions collator,
                     std::optional<MaskedLm> mlm)
    : source_(std::move(source)), collator_(collator), pad_id_(encoder.pad_id()) {
  if (!mlm) return;
  if (!encoder.mask_id()) fail("masked LM needs a mask token, and the tokenizer has neither [MASK] nor <mask>");
  if (!(mlm->probability > 0 && mlm->probability < 1))
    fail("mlm_probability: expected a value in (0, 1), got ", mlm->probability);
  MlmOptions& o = mlm_.emplace();
  o.probability = mlm->probability;
  o.seed = mlm->seed;
  o.mask_id = *encoder.mask_id();
  o.vocab_size = encoder.vocab_size();
  if (mlm->whole_word) o.continues_word = word_continuation_table(encoder);
}

Batch LmBatches::make(std::span<const size_t> examples, uint64_t epoch) const {
  std::vector<Encoded> rows;
  std::vector<std::vector<int32_t>> labels;
  rows.reserve(examples.size());
  labels.reserve(examples.size());
  for (size_t i : examples) {
    Encoded e = source_->get(i);
    truncate(e, collator_.max_seq_length);  // before masking: only kept tokens are drawn
    labels.push_back(mlm_ ? mask_tokens(e, *mlm_, epoch, i) : e.ids);
    rows.push_back(std::move(e));
  }
  return collate(std::move(rows), collator_, pad_id_, std::move(labels));  // labels -100 at padding
}

}  // namespace strata::data
