// GPT-2 (HF GPT2Model / GPT2LMHeadModel / GPT2ForSequenceClassification /
// GPT2ForTokenClassification): token + learned position embeddings, pre-LN causal blocks
// (nn/decoder_layer.h), final LayerNorm ln_f, task head.
//
// Units: 0 = embeddings (wte, wpe, embd dropout), 1..L = blocks, L+1 = the head unit, which
// starts with ln_f: the hidden state between units is always the un-normalised residual
// stream, and the Base model's head unit is ln_f alone (its output is HF's last_hidden_state).
#pragma once
#include <cstdint>
#include <vector>

#include "models/model.h"
#include "nn/block_activations.h"
#include "nn/decoder_layer.h"
#include "nn/heads.h"
#include "nn/vocab_parallel.h"

namespace strata {

template <typename T>
class Gpt2Decoder;

template <typename T>
struct Gpt2State : ModelState {
  explicit Gpt2State(const nn::ActivationPolicy& policy = {}) : blocks(policy) {}
  size_t offload_pool_bytes() const override { return blocks.offload_pool_bytes(); }

  Buffer<T> input;  // the hidden state entering a range that starts past the embeddings
  DeviceArray<int32_t> position_ids;
  Buffer<T> embeddings;  // [N, C] after embd dropout
  nn::BlockActivations<T, nn::DecoderLayerSaved<T>> blocks;
  const T* last_hidden = nullptr;  // input of the head unit (ln_f) in the last forward
  // head unit
  Buffer<T> final_hidden, final_mean, final_rstd;  // ln_f output [N, C] and stats
  DeviceArray<int32_t> pooled_rows;                // sequence classification: row r * T + the pooled position
  Buffer<T> pooled;                                // [B, C]
  Buffer<T> logits, dlogits;  // causal LM under tensor parallelism: this rank's vocabulary columns
  Buffer<T> gathered_logits;  // ... and all of them, gathered by an inference pass for head_outputs
  nn::VocabParallelCeScratch<T> ce;
  Buffer<int32_t> local_ids;
  DeviceArray<int32_t> shifted_labels;  // causal LM: labels[:, 1:], -100 at each row's end
  nn::BlockScratch<T> scratch;  // the blocks' working memory, forward and backward
  // backward scratch, reused across steps
  Buffer<T> d_hidden, d_hidden_next, d_final, d_pooled, head_scratch;
};

template <typename T>
class Gpt2Model final : public Model<T> {
 public:
  explicit Gpt2Model(const ModelConfig& config);

  int num_blocks() const override { return static_cast<int>(layers_.size()); }
  std::vector<size_t> unit_parameters(int u) const override { return unit_params_.at(static_cast<size_t>(u)); }
  const T* forward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* input,
                   ModelState& state) const override;
  LossResult loss(const Batch& b, ModelState& state, double norm = 0) const override;
  const T* backward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* d_output, ModelState& state,
                    const GradsFinalHook& grads_final = {}) override;
  std::vector<HeadOutput<T>> head_outputs(const Batch& b, const ModelState& state) const override;
  const T* infer(const Batch& b, ModelState& state) const override;
  std::unique_ptr<CausalDecoder<T>> new_cached_decoder() const override;  // causal LM only
  typename Model<T>::ActivationTerms activation_terms(int B, int T_) const override;
  size_t scratch_values(int B, int T_) const override;
  size_t loss_values(int B, int T_) const override;
  using Model<T>::forward;
  using Model<T>::backward;

 private:
  template <typename>
  friend class Gpt2Decoder;  // reads the layer specs below
  std::unique_ptr<ModelState> make_state(const nn::ActivationPolicy& p) const override {
    return std::make_unique<Gpt2State<T>>(p);
  }
  void build();
  // How a Conv1D is cut over the tensor-parallel ranks (Megatron): not at all, by output
  // columns (the q | k | v projection in three parts), or by input rows.
  enum class Split { None, Column, ColumnQkv, Row };
  nn::LinearSpec add_conv1d(const std::string& name, int in, int out, double std = -1, Split split = Split::None);
  bool split() const { return this->cfg_.tensor_split.split(); }
  void embed(const Batch& b, const nn::DropoutCtx& drop, Gpt2State<T>& s) const;
  const T* head_forward(const Batch& b, const nn::DropoutCtx& drop, const T* h, Gpt2State<T>& s) const;

  size_t wte_ = 0, wpe_ = 0;
  nn::VocabSlice vocab_;  // this rank's rows of wte (all of them unsplit)
  std::vector<nn::DecoderLayerSpec> layers_;
  nn::LayerNormSpec ln_f_{};
  nn::LinearSpec lm_head_{};  // tied: w = wte
  nn::LinearSpec score_{};    // sequence classification, no bias
  nn::TokenHeadSpec token_{};
  size_t head_begin_ = 0;  // flat offset of ln_f, the head unit's first own parameter
  std::vector<std::vector<size_t>> unit_params_;
};

}  // namespace strata
