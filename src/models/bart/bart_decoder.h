// BART's incremental decoder for generation over one source: the encoder runs once, each
// decoder layer projects the encoder's output into its cross-attention keys and values once
// (one row that every decoder row shares), and keeps its self-attention keys and values per
// row (nn/seq2seq_decode.h). A step runs the decoder on the new positions only; each row's last
// position goes through the tied LM head with final_logits_bias. Gives the full forward's
// logits up to the rounding of differently shaped products (tests/test_bart.cpp). A
// tensor-parallel model decodes through its split layers, and every rank of the group, fed the
// same ids, gets the logits gathered over the whole vocabulary.
#pragma once
#include <vector>

#include "models/bart/bart_model.h"
#include "models/causal_decoder.h"
#include "nn/seq2seq_decode.h"

namespace strata {

template <typename T>
class BartDecoder final : public CausalDecoder<T> {
 public:
  BartDecoder(const BartModel<T>& m, const std::vector<int32_t>& source);
  void reset(int B, int capacity) override;
  const T* append(const int32_t* ids, int n) override;
  void reorder(const std::vector<int32_t>& rows) override;
  int length() const override { return len_; }

 private:
  const BartModel<T>& m_;
  int source_len_ = 0, B_ = 0, capacity_ = 0, len_ = 0;
  std::vector<nn::KeyValueCache<T>> self_, cross_;  // one per decoder layer
  BartEmbeddingSaved<T> emb_;
  nn::AttentionSublayerSaved<T> self_step_, cross_step_;
  nn::FfnSublayerSaved<T> ffn_;
  nn::Seq2SeqScratch<T> scratch_;
  Buffer<T> tmp_, last_, logits_, whole_;  // logits_: this rank's vocabulary columns; whole_: all (split)
  DeviceArray<int32_t> last_rows_;
  std::vector<T> host_logits_;  // on a GPU
};

}  // namespace strata
