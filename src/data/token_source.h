// Masked-LM examples as token ids: either each text encoded on demand (HF run_mlm's
// --line_by_line) or the texts' tokens concatenated and cut into fixed blocks (its default,
// group_texts).
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "data/dataset.h"
#include "data/text_encoder.h"

namespace strata::data {

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual size_t size() const = 0;
  virtual Encoded get(size_t i) const = 0;  // safe from several threads
};

// One example per text, encoded (and truncated) by the encoder when a batch first needs it and
// kept, so that later epochs and evaluations reuse it: HF tokenizes a dataset once, with
// datasets.map, before training. Tokenizing on the loader's thread in every epoch took a share
// of the 2 cores the step's threads run on. Encodings are kept up to `budget_bytes` in all;
// past it, the rest are encoded each time. The encoding is a pure function of the text, so a
// kept one is the same as a fresh one.
class EncodedTexts final : public TokenSource {
 public:
  static constexpr size_t kDefaultBudgetBytes = size_t{256} << 20;

  EncodedTexts(std::shared_ptr<const TextDataset> data, std::shared_ptr<const TextEncoder> encoder,
               size_t budget_bytes = kDefaultBudgetBytes);
  size_t size() const override { return data_->size(); }
  Encoded get(size_t i) const override;
  size_t kept_bytes() const;

 private:
  Encoded encode(size_t i) const;

  std::shared_ptr<const TextDataset> data_;
  std::shared_ptr<const TextEncoder> encoder_;
  size_t budget_bytes_;
  mutable std::mutex mu_;  // guards kept_ and kept_bytes_: loader workers share this source
  mutable std::vector<std::optional<Encoded>> kept_;
  mutable size_t kept_bytes_ = 0;
};

// HF group_texts, as run_mlm.py / run_clm.py apply it: every text encoded whole (special
// tokens included, as the tokenizer adds them per text; the encoder must not truncate), then
// the texts taken in groups of texts_per_group in dataset order (datasets.map(batched=True)
// hands group_texts 1000 texts at a time), each group's tokens concatenated and cut into
// blocks of block_size tokens, the group's remainder shorter than a block dropped (a group
// with fewer tokens than a block gives none). texts_per_group 0: the whole dataset is one
// group. No block at all is an error. Blocks are single-segment (token types 0) and keep the
// special-token marks, so [CLS]/[SEP] inside a block are never masked. Held in memory: 5
// bytes per token.
class TokenBlocks final : public TokenSource {
 public:
  static constexpr size_t kHfTextsPerGroup = 1000;  // datasets.map's default batch_size

  // Encodes on `num_threads` threads (0: one); the result does not depend on the count.
  TokenBlocks(const TextDataset& data, const TextEncoder& encoder, size_t block_size, int num_threads,
              size_t texts_per_group = kHfTextsPerGroup);
  size_t size() const override { return num_blocks_; }
  Encoded get(size_t i) const override;

 private:
  size_t block_, num_blocks_ = 0;
  std::vector<int32_t> ids_;
  std::vector<uint8_t> special_;
};

}  // namespace strata::data
