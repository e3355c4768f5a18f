// T5 (HF T5Model / T5ForConditionalGeneration): one shared token table (no padding row, no
// scaling) for both stacks; pre-RMS-norm blocks (T5LayerNorm: no mean, no bias) with residuals,
// nn/seq2seq_layer.h: encoder blocks (self-attention with the padding mask, FFN), decoder blocks
// (causal self-attention, cross-attention over the encoder's output with its padding mask, FFN).
// No position embeddings: each stack's first block holds relative_attention_bias
// [num_buckets, num_heads], whose bias (bidirectional buckets in the encoder, causal in the
// decoder; models/t5/relative_position.h) is added to the scores of every self-attention of the
// stack, so its gradient sums over all of them; cross-attention has none. Scores are not
// divided by sqrt(d_kv) (T5 folds that into its init), and the heads' width num_heads * d_kv
// may differ from d_model. Each stack ends with final_layer_norm and dropout; dropout_rate also
// drops the embeddings, the attention probabilities, each sublayer's output and the FFN's
// activation. FFN: relu (wi, wo) or gated (gelu_new(wi_0) * wi_1, wo), no biases anywhere.
// LM head: tied to the shared table with the decoder's output scaled by d_model^-0.5 (T5), or
// lm_head.weight of its own and no scaling (v1.1 / flan-t5), as t5_config.h decides.
//
// Units: 0 = the shared embedding (and the encoder's dropout), 1..Le the encoder blocks (the
// last one ends with the encoder's final_layer_norm), Le+1..Le+Ld the decoder blocks (the first
// reads the decoder's embeddings; the last ends with its final_layer_norm), Le+Ld+1 the LM head.
// Boundaries and the gradient of the encoder's output go between units as for BART
// (models/bart/bart_model.h). A range recomputes each stack's position bias that its blocks
// add (a function of the parameters, cheap), and each block scatters its share of the bias's
// gradient into the table, so that a model run as several ranges adds them in the same order
// as one range.
//
// Tensor parallelism (Megatron-style, docs/parallelism.md): every attention is split by heads and
// every FFN by d_ff (nn/seq2seq_layer.h), relative_attention_bias by its head columns, the shared
// table vocabulary-parallel for the lookups (and the tied head), an untied lm_head by the same
// vocabulary rows, the loss vocabulary-parallel; the RMS norms are whole on every rank.
#pragma once
#include <cstdint>
#include <vector>

#include "models/model.h"
#include "models/t5/t5_config.h"
#include "nn/block_activations.h"
#include "nn/seq2seq_block.h"
#include "nn/vocab_parallel.h"

namespace strata {

using T5EncoderBlockSpec = nn::Seq2SeqEncoderBlockSpec;
using T5DecoderBlockSpec = nn::Seq2SeqDecoderBlockSpec;

// One stack's relative position bias table, final norm and dropout streams.
struct T5StackSpec {
  size_t relative_bias;  // [num_buckets, num_heads]
  bool bidirectional;
  nn::RmsNormSpec final_norm;
  uint64_t embedding_stream, final_stream;
};

// What a stack keeps besides its blocks' saved tensors.
template <typename T>
struct T5StackSaved {
  DeviceArray<int32_t> ids;      // token ids [B*T] (the decoder's: models/decoder_inputs.h)
  Buffer<int32_t> local_ids;  // backward's scratch: the ids as rows of this rank's table slice
  Buffer<T> emb;                 // embeddings after dropout [B*T, C]
  DeviceArray<int32_t> buckets;  // [T*T]
  Buffer<T> bias;                // [T*T, NH] (this rank's heads)
  const T* last = nullptr;       // the last block's output (final_layer_norm's input)
  Buffer<T> final_rstd, out;     // final_layer_norm's statistics, its output after dropout [B*T, C]
};

template <typename T>
struct T5State : ModelState {
  explicit T5State(const nn::ActivationPolicy& policy = {}) : enc(policy), dec(policy) {}
  size_t offload_pool_bytes() const override { return enc.offload_pool_bytes() + dec.offload_pool_bytes(); }

  Buffer<T> input;  // the boundary entering a range that starts past the embeddings
  T5StackSaved<T> enc_stack, dec_stack;
  nn::BlockActivations<T, nn::Seq2SeqEncoderBlockSaved<T>> enc;
  nn::BlockActivations<T, nn::Seq2SeqDecoderBlockSaved<T>> dec;  // numbered Le.. (the policy counts both stacks)
  const T* enc_out = nullptr;     // the encoder's output the decoder blocks read [B*Ts, C]
  const T* head_input = nullptr;  // the decoder's output [B*Td, C]
  Buffer<T> output;               // a range ending on the decoder side hands on [decoder hidden ; encoder output]
  int Td = 0;         // decoder length
  Buffer<T> scaled;   // tied head: the decoder's output times d_model^-0.5 [B*Td, C]
  Buffer<T> logits, dlogits;  // this rank's vocabulary columns under tensor parallelism
  Buffer<T> gathered_logits;  // ... and every rank's, gathered by an inference pass for head_outputs
  nn::VocabParallelCeScratch<T> ce;
  nn::Seq2SeqScratch<T> scratch;
  Buffer<T> d_dec, d_dec_next, d_enc, d_enc_next, d_bias, d_input;
};

template <typename T>
class T5Decoder;  // models/t5/t5_decoder.h

template <typename T>
class T5Model final : public Model<T> {
 public:
  explicit T5Model(const ModelConfig& config);

  const T5Config& t5() const { return t5_; }
  bool tied_lm_head() const { return t5_.scale_decoder_outputs; }
  int num_blocks() const override { return t5_.num_layers + t5_.num_decoder_layers; }
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
  friend class T5Decoder;
  std::unique_ptr<ModelState> make_state(const nn::ActivationPolicy& p) const override {
    return std::make_unique<T5State<T>>(p);
  }
  void build();
  nn::AttentionSublayerSpec add_attention(const std::string& p, bool causal, uint64_t stream);
  nn::FfnSublayerSpec add_ffn(const std::string& p, uint64_t stream);
  // The embeddings of s.ids (with dropout) for B rows of T tokens.
  void embed(const T5StackSpec& st, int B, int T_, const nn::DropoutCtx& drop, T5StackSaved<T>& s) const;
  // The stack's position bias for T positions. first_position: the position of the first of
  // them (incremental decoding: the bias is then [T * (first_position + T), NH], the new queries
  // against every key so far).
  void position_bias(const T5StackSpec& st, int T_, T5StackSaved<T>& s, int first_position = 0) const;
  // The encoder over b's input_ids (units 0..Le); returns its output [B*T, C], held by the state.
  const T* encode(const Batch& b, const nn::DropoutCtx& drop, T5State<T>& s) const;
  // final_layer_norm and dropout of the stack's last hidden state x.
  void finish(const T5StackSpec& st, const T* x, int N, const nn::DropoutCtx& drop, T5StackSaved<T>& s) const;
  // The LM head (or the Base model's output) over the decoder's output h; an inference pass
  // (dropout off) gathers the logits of a tensor-parallel model.
  const T* head_forward(const T* h, int Nd, const nn::DropoutCtx& drop, T5State<T>& s) const;
  // The LM head over N rows of the decoder's output h (times d_model^-0.5 into `scaled` when tied):
  // this rank's vocabulary columns into `logits` [N, V/P], returned.
  const T* lm_head_forward(const T* h, int N, Buffer<T>& scaled, Buffer<T>& logits) const;
  // d = d(stack output) in, d(last hidden state) into d_next.
  void finish_backward(const T5StackSpec& st, nn::Flat<T> f, const T* x, int N, const nn::DropoutCtx& drop,
                       const T5StackSaved<T>& s, T* d, T* d_next) const;
  // d = d(embeddings after dropout).
  void embed_backward(const T5StackSpec& st, nn::Flat<T> f, int B, int T_, const nn::DropoutCtx& drop,
                      T5StackSaved<T>& s, T* d) const;
  // One block's share of the position bias's gradient, d_bias [T*T, NH], into the table.
  void position_bias_backward(const T5StackSpec& st, nn::Flat<T> f, int T_, const T5StackSaved<T>& s,
                              const T* d_bias) const;
  int heads() const { return t5_.num_heads / this->cfg_.tensor_split.degree; }  // on this rank

  T5Config t5_;
  T dec_scale_;  // d_model^-0.5 in T (HF multiplies by the Python float, rounded to the tensor's type)
  size_t shared_ = 0;
  nn::VocabSlice vocab_;  // this rank's rows of the shared table and of an untied lm_head (all unsplit)
  size_t lm_head_ = 0;    // untied head's weight (tied: shared_)
  T5StackSpec enc_stack_{}, dec_stack_{};
  std::vector<T5EncoderBlockSpec> enc_;
  std::vector<T5DecoderBlockSpec> dec_;
  std::vector<std::vector<size_t>> unit_params_;
};

}  // namespace strata
