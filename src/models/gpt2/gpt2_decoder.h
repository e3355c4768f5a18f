// GPT-2's incremental decoder: the keys and values of every block are kept per row
// (nn::DecoderLayerCache), so each new token runs the blocks on one position and attends to
// the cached ones, instead of recomputing the prefix. Only each row's last position goes
// through ln_f and the tied lm_head. Gives infer()'s logits up to the rounding of differently
// shaped products (tests/test_generate.cpp).
#pragma once
#include <vector>

#include "models/causal_decoder.h"
#include "models/gpt2/gpt2_model.h"

namespace strata {

template <typename T>
class Gpt2Decoder final : public CausalDecoder<T> {
 public:
  explicit Gpt2Decoder(const Gpt2Model<T>& m) : m_(m) {}
  void reset(int B, int capacity) override;
  const T* append(const int32_t* ids, int n) override;
  void reorder(const std::vector<int32_t>& rows) override;  // permutes every block's cache
  int length() const override { return len_; }

 private:
  const Gpt2Model<T>& m_;
  int B_ = 0, capacity_ = 0, len_ = 0;
  std::vector<nn::DecoderLayerCache<T>> caches_;  // one per block
  Buffer<T> moved_;                               // reorder's copy of one cache's k or v
  nn::DecoderLayerSaved<T> slots_[2];             // block i writes slot i % 2 (as infer does)
  nn::BlockScratch<T> scratch_;                   // the blocks' MLP activation
  DeviceArray<int32_t> ids_, positions_;
  std::vector<T> host_logits_;  // on a GPU
  Buffer<T> x_;                                   // embeddings of the new positions [B*n, C]
  Buffer<T> last_, final_, mean_, rstd_, logits_;  // each row's last position [B, C] .. [B, V]
};

}  // namespace strata
