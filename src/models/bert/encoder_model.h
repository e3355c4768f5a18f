// BERT, RoBERTa and DistilBERT: one encoder (embeddings + post-LN blocks) with HF parameter
// names per model_type, plus the shared encoder task heads (models/encoder_heads.h).
#pragma once
#include <cstdint>
#include <vector>

#include "models/encoder_heads.h"
#include "models/model.h"
#include "nn/block_activations.h"
#include "nn/embeddings.h"
#include "nn/encoder_layer.h"

namespace strata {

template <typename T>
struct EncoderState : ModelState {
  explicit EncoderState(const nn::ActivationPolicy& policy = {}) : blocks(policy) {}
  size_t offload_pool_bytes() const override { return blocks.offload_pool_bytes(); }

  Buffer<T> input;  // the hidden state entering a range that starts past the embeddings
  DeviceArray<int32_t> position_ids;
  nn::EmbeddingsSaved<T> embeddings;
  nn::BlockActivations<T, nn::EncoderLayerSaved<T>> blocks;
  const T* last_hidden = nullptr;  // input of the head in the last forward
  EncoderHeadState<T> head;
  nn::BlockScratch<T> scratch;  // the blocks' working memory, forward and backward
  // backward scratch, reused across steps
  Buffer<T> d_hidden, d_hidden_next, d_misc;
};

template <typename T>
class EncoderModel final : public Model<T> {
 public:
  explicit EncoderModel(const ModelConfig& config);

  int num_blocks() const override { return static_cast<int>(layers_.size()); }
  std::vector<size_t> unit_parameters(int u) const override;
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
  using Model<T>::forward;
  using Model<T>::backward;

 private:
  std::unique_ptr<ModelState> make_state(const nn::ActivationPolicy& p) const override {
    return std::make_unique<EncoderState<T>>(p);
  }
  void build();
  void compute_position_ids(const Batch& b, std::vector<int32_t>& out) const;

  nn::EmbeddingsSpec embeddings_{};
  std::vector<nn::EncoderLayerSpec> layers_;
  EncoderHeads heads_;
  size_t head_begin_ = 0;  // flat offset of the first pooler / head parameter
  std::vector<std::vector<size_t>> unit_params_;
};

}  // namespace strata
