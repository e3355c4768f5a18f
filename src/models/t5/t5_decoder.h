// T5's incremental decoder for generation over one source: the encoder runs once, each decoder
// block projects the encoder's output into its cross-attention keys and values once (one row
// that every decoder row shares), and keeps its self-attention keys and values per row
// (nn/seq2seq_decode.h). A step embeds the new positions and computes the causal relative
// position bias of their queries against every key so far once (the first block's table, which
// every block adds, as in the full forward); cross-attention has no bias, and no score is scaled.
// Each row's last position goes through final_layer_norm and the LM head (tied and scaled by
// d_model^-0.5, or lm_head of its own). Gives the full forward's logits up to the rounding of
// differently shaped products (tests/test_t5.cpp). A tensor-parallel model decodes through its
// split layers, every rank of the group fed the same ids and given the gathered logits.
#pragma once
#include <vector>

#include "models/causal_decoder.h"
#include "models/t5/t5_model.h"
#include "nn/seq2seq_decode.h"

namespace strata {

template <typename T>
class T5Decoder final : public CausalDecoder<T> {
 public:
  T5Decoder(const T5Model<T>& m, const std::vector<int32_t>& source);
  void reset(int B, int capacity) override;
  const T* append(const int32_t* ids, int n) override;
  void reorder(const std::vector<int32_t>& rows) override;
  int length() const override { return len_; }

 private:
  const T5Model<T>& m_;
  int source_len_ = 0, B_ = 0, capacity_ = 0, len_ = 0;
  std::vector<nn::KeyValueCache<T>> self_, cross_;  // one per decoder block
  T5StackSaved<T> new_rows_;  // the new positions' embeddings and position bias
  T5StackSaved<T> last_;      // each row's last position through final_layer_norm
  nn::AttentionSublayerSaved<T> self_step_, cross_step_;
  nn::FfnSublayerSaved<T> ffn_;
  nn::Seq2SeqScratch<T> scratch_;
  Buffer<T> tmp_, last_hidden_, scaled_, logits_;
  Buffer<T> whole_;  // tensor parallelism: the logits of every rank's vocabulary columns
  DeviceArray<int32_t> last_rows_;
  std::vector<T> host_logits_;  // on a GPU
};

}  // namespace strata
