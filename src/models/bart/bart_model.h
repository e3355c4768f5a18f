// BART (HF BartModel / BartForConditionalGeneration / BartForSequenceClassification): shared
// token embeddings scaled by sqrt(d_model) when scale_embedding, learned positions with HF's
// offset of 2, layernorm_embedding after each stack's embeddings, post-LN encoder layers
// (self-attention, FFN) and decoder layers (causal self-attention, cross-attention over the
// encoder's output with its padding mask, FFN), nn/seq2seq_layer.h. The LM head is the shared
// embedding (tied) plus the final_logits_bias buffer; the classification head pools the
// decoder's state at each row's last eos token.
//
// Units: 0 = the encoder's embeddings, 1..Le the encoder layers, Le+1..Le+Ld the decoder layers
// (the decoder's embeddings run with its first layer), Le+Ld+1 the head. Every decoder layer's
// cross-attention reads the encoder's output, so the boundary after a decoder-side unit is
// [decoder hidden state B*Td*C ; encoder output B*Ts*C] (after an encoder-side one, B*Ts*C),
// and the gradient going back carries d(encoder output), to which each decoder layer adds, to
// the encoder's last layer. The layers of each stack run through a BlockActivations of their
// own (nn/seq2seq_block.h), which keeps, recomputes or offloads them as the policy says.
//
// final_logits_bias is a buffer in HF, not a parameter: it is in the table (checkpoints carry
// it) with no_decay set, and backward never gives it a gradient, so AdamW leaves it as it is.
//
// Tensor parallelism (Megatron-style, docs/parallelism.md): every attention (self and cross) is
// split by heads and every FFN by its width, as nn/seq2seq_layer.h says; the shared table is
// vocabulary-parallel for the lookups and the tied LM head, final_logits_bias split with the
// vocabulary, the loss vocabulary-parallel; positions, layer norms and the classification head
// are whole on every rank.
#pragma once
#include <cstdint>
#include <vector>

#include "models/bart/bart_config.h"
#include "models/model.h"
#include "nn/block_activations.h"
#include "nn/heads.h"
#include "nn/seq2seq_block.h"
#include "nn/vocab_parallel.h"

namespace strata {

using BartEncoderLayerSpec = nn::Seq2SeqEncoderBlockSpec;
using BartDecoderLayerSpec = nn::Seq2SeqDecoderBlockSpec;

// Token + position embeddings, then layernorm_embedding and dropout, of one stack.
struct BartEmbeddingSpec {
  size_t positions;  // [max_position_embeddings + 2, C]
  nn::LayerNormSpec ln;
  uint64_t stream;
};

template <typename T>
struct BartEmbeddingSaved {
  DeviceArray<int32_t> ids, position_ids;
  Buffer<int32_t> local_ids;  // backward's scratch: the ids as rows of this rank's table slice
  Buffer<T> sum, mean, rstd, out;  // LN input, statistics, output after dropout
};

template <typename T>
struct BartState : ModelState {
  explicit BartState(const nn::ActivationPolicy& policy = {}) : enc(policy), dec(policy) {}
  size_t offload_pool_bytes() const override { return enc.offload_pool_bytes() + dec.offload_pool_bytes(); }

  Buffer<T> input;  // the boundary entering a range that starts past the embeddings
  BartEmbeddingSaved<T> enc_emb, dec_emb;
  nn::BlockActivations<T, nn::Seq2SeqEncoderBlockSaved<T>> enc;
  nn::BlockActivations<T, nn::Seq2SeqDecoderBlockSaved<T>> dec;  // numbered Le.. (the policy counts both stacks)
  const T* enc_out = nullptr;     // the encoder's output the decoder layers read [B*Ts, C]
  const T* head_input = nullptr;  // the decoder's output [B*Td, C]
  Buffer<T> output;               // a range ending on the decoder side hands on [decoder hidden ; encoder output]
  int Td = 0;                     // decoder length (the targets', or T when the decoder reads input_ids)
  DeviceArray<int32_t> pooled_rows;  // sequence classification: row r * Td + the position of r's last eos
  Buffer<T> pooled;               // [B, C]
  nn::ClassifierHeadSaved<T> classifier;
  Buffer<T> logits, dlogits;  // LM: this rank's vocabulary columns under tensor parallelism
  Buffer<T> gathered_logits;  // ... and every rank's, gathered by an inference pass for head_outputs
  nn::VocabParallelCeScratch<T> ce;
  nn::Seq2SeqScratch<T> scratch;
  Buffer<T> d_dec, d_dec_next, d_enc, d_enc_next, d_pooled, d_input;
};

template <typename T>
class BartDecoder;  // models/bart/bart_decoder.h

template <typename T>
class BartModel final : public Model<T> {
 public:
  explicit BartModel(const ModelConfig& config);

  int num_blocks() const override { return bart_.encoder_layers + bart_.decoder_layers; }
  std::vector<size_t> unit_parameters(int u) const override { return unit_params_.at(static_cast<size_t>(u)); }
  size_t boundary_values(int B, int T_, int Td, int u) const override;
  using Model<T>::boundary_values;
  const T* forward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* input,
                   ModelState& state) const override;
  LossResult loss(const Batch& b, ModelState& state, double norm = 0) const override;
  const T* backward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* d_output, ModelState& state,
                    const GradsFinalHook& grads_final = {}) override;
  std::vector<HeadOutput<T>> head_outputs(const Batch& b, const ModelState& state) const override;
  const T* infer(const Batch& b, ModelState& state) const override;
  typename Model<T>::ActivationTerms activation_terms(int B, int T_) const override;
  size_t scratch_values(int B, int T_) const override;
  size_t loss_values(int B, int T_) const override;
  std::unique_ptr<CausalDecoder<T>> new_cached_seq2seq_decoder(const std::vector<int32_t>& source) const override;
  using Model<T>::forward;
  using Model<T>::backward;

 private:
  template <typename>
  friend class BartDecoder;
  std::unique_ptr<ModelState> make_state(const nn::ActivationPolicy& p) const override {
    return std::make_unique<BartState<T>>(p);
  }
  void build();
  nn::AttentionSublayerSpec add_attention(const std::string& p, const std::string& ln, int heads, bool causal,
                                          uint64_t stream);
  nn::FfnSublayerSpec add_ffn(const std::string& p, int F, uint64_t stream);
  // first_position: the position of the first of each row's T_ ids (incremental decoding).
  void embed(const BartEmbeddingSpec& e, const std::vector<int32_t>& ids, int B, int T_, const nn::DropoutCtx& drop,
             BartEmbeddingSaved<T>& s, int first_position = 0) const;
  // The encoder over b's input_ids; returns its output [B*T, C] (held by the state).
  const T* encode(const Batch& b, const nn::DropoutCtx& drop, BartState<T>& s) const;
  void embed_backward(const BartEmbeddingSpec& e, nn::Flat<T> f, int B, int T_, const nn::DropoutCtx& drop,
                      BartEmbeddingSaved<T>& s, T* d) const;
  const T* head_forward(const Batch& b, const nn::DropoutCtx& drop, const T* h, BartState<T>& s) const;
  // The LM head over N rows of the decoder's output h: the tied shared table and
  // final_logits_bias, this rank's vocabulary columns into `logits` [N, V/P].
  void lm_head_forward(const T* h, int N, Buffer<T>& logits) const;

  BartConfig bart_;
  T embed_scale_;
  size_t shared_ = 0;
  nn::VocabSlice vocab_;  // this rank's rows of the shared table (all of them unsplit)
  BartEmbeddingSpec enc_emb_{}, dec_emb_{};
  std::vector<BartEncoderLayerSpec> enc_;
  std::vector<BartDecoderLayerSpec> dec_;
  size_t final_logits_bias_ = nn::LinearSpec::kNoBias;
  nn::ClassifierHeadSpec classifier_{};
  std::vector<std::vector<size_t>> unit_params_;
};

}  // namespace strata
