// ALBERT (HF AlbertModel and heads, transformers 4.36.2): BERT's post-LN block with
//   - factorised embeddings: word / position / token-type tables of width E = embedding_size,
//     LayerNorm and dropout at width E, then embedding_hidden_mapping_in E -> H;
//   - cross-layer sharing: num_hidden_layers repeats over num_hidden_groups groups of
//     inner_group_num layers each; repeat i runs group i / (num_hidden_layers / num_hidden_groups).
//   - no dropout after the FFN (AlbertLayer defines one and never applies it).
// Units: 0 = embeddings + embedding_hidden_mapping_in (its output has width H), 1..L = the
// repeats, L+1 = the head. A shared parameter appears once in the table; its gradient is the
// sum over the repeats that read it (each repeat's backward adds into the same flat slots).
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
struct AlbertState : ModelState {
  explicit AlbertState(const nn::ActivationPolicy& policy = {}) : applications(policy) {}
  size_t offload_pool_bytes() const override { return applications.offload_pool_bytes(); }

  Buffer<T> input;  // the hidden state entering a range that starts past the embeddings
  DeviceArray<int32_t> position_ids;
  nn::EmbeddingsSaved<T> embeddings;  // width E
  Buffer<T> mapped;                   // embedding_hidden_mapping_in output [N, H]: unit 0's output
  // One block per layer application (num_hidden_layers * inner_group_num).
  nn::BlockActivations<T, nn::EncoderLayerSaved<T>> applications;
  const T* last_hidden = nullptr;
  EncoderHeadState<T> head;  // the task head; for pretraining the MLM head
  EncoderHeadState<T> sop;   // pretraining: sentence-order head on the pooled output
  nn::BlockScratch<T> scratch;  // the blocks' working memory, forward and backward
  // backward scratch
  Buffer<T> d_hidden, d_hidden_next, d_sop, d_emb, d_misc;
};

template <typename T>
class AlbertModel final : public Model<T> {
 public:
  explicit AlbertModel(const ModelConfig& config);

  int num_blocks() const override { return this->cfg_.num_layers; }
  std::vector<size_t> unit_parameters(int u) const override;
  const T* forward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* input,
                   ModelState& state) const override;
  // Pretraining: MLM mean + SOP mean as HF (see the .cpp for a global norm).
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
    return std::make_unique<AlbertState<T>>(p);
  }
  void build();
  static const int32_t* position_ids(const Batch& b, AlbertState<T>& s);  // uploaded into s
  int inner() const { return this->cfg_.inner_group_num; }
  int group_of_repeat(int i) const { return i / (this->cfg_.num_layers / this->cfg_.num_hidden_groups); }
  // The layer spec of application k (repeat k / inner, layer k % inner of its group), with
  // dropout streams of that application.
  const nn::EncoderLayerSpec& application(int k) const { return applications_[static_cast<size_t>(k)]; }

  nn::EmbeddingsSpec embeddings_{};
  nn::LinearSpec mapping_in_{};
  std::vector<nn::EncoderLayerSpec> applications_;  // per application: shared offsets, own streams
  std::vector<size_t> group_begin_;                 // flat offset of each group's first parameter
  EncoderHeads heads_;      // the task head (pretraining: its masked LM)
  EncoderHeads sop_heads_;  // pretraining: sequence classification over the pooler
  size_t head_begin_ = 0;
  std::vector<std::vector<size_t>> unit_params_;
};

}  // namespace strata
