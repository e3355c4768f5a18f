// BERT, RoBERTa and DistilBERT: one encoder (embeddings + post-LN blocks) with HF parameter
// names per family, plus a task head. Parameters and gradients live in one flat buffer
// each, described by table(). Activations are owned by the caller (see Activations).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "models/batch_checks.h"
#include "models/config.h"
#include "models/param_table.h"
#include "nn/embeddings.h"
#include "nn/encoder_layer.h"
#include "nn/heads.h"

namespace strata {

template <typename T>
struct Activations {
  std::vector<int32_t> position_ids;
  nn::EmbeddingsSaved<T> embeddings;
  std::vector<nn::EncoderLayerSaved<T>> layers;
  nn::ClassifierHeadSaved<T> classifier;
  nn::MaskedLMHeadSaved<T> masked_lm;
  Buffer<T> dlogits;
  // backward scratch, reused across steps
  nn::EncoderLayerScratch<T> scratch;
  Buffer<T> d_hidden, d_hidden_next, d_misc;
};

struct LossResult {
  double loss;  // sum of per-label losses / norm
  double norm;
};

template <typename T>
class EncoderModel {
 public:
  explicit EncoderModel(const ModelConfig& config);

  const ModelConfig& config() const { return cfg_; }
  const ParamTable& table() const { return table_; }
  Buffer<T>& params() { return params_; }
  const Buffer<T>& params() const { return params_; }
  Buffer<T>& grads() { return grads_; }
  // The names HF may also store for tied parameters (e.g. cls.predictions.decoder.weight),
  // each with the table name it aliases.
  const std::vector<std::pair<std::string, std::string>>& tied_aliases() const { return aliases_; }

  // HF's _init_weights: Linear / Embedding weights ~ N(0, initializer_range), padding rows
  // and biases 0, LayerNorm weight 1. Deterministic in (seed, parameter), any thread count.
  void init_weights(uint64_t seed);
  void init_parameter(std::string_view name, uint64_t seed);  // one tensor, same rule and stream

  // Runs the model; returns the logits ([B, num_labels] or [B*T, V]) or, for Task::Base,
  // the last hidden state [B*T, C].
  const T* forward(const Batch& batch, const nn::DropoutCtx& drop, Activations<T>& acts) const;
  size_t output_size(const Batch& batch) const;
  // Loss of the last forward, and d(loss)/d(logits) into acts.dlogits; norm <= 0 means this
  // batch's own label_count().
  LossResult loss(const Batch& batch, Activations<T>& acts, double norm = 0) const;
  // Accumulates d(loss)/d(params) into grads(), from acts.dlogits. head_only stops after the
  // task head (a frozen base model needs no encoder gradients). `grads_final_from(offset)`,
  // if set, is called as backward proceeds: every gradient at flat offset >= `offset` is then
  // final (data parallelism starts reducing those buckets while backward continues).
  void backward(const Batch& batch, const nn::DropoutCtx& drop, Activations<T>& acts, bool head_only = false,
                const std::function<void(size_t)>& grads_final_from = {});
  // True for parameters of the base model (embeddings, encoder, BERT's pooler): what
  // freeze_base_model freezes, as HF's `model.base_model.requires_grad_(False)` does.
  bool is_base_parameter(const ParamEntry& e) const;

 private:
  nn::LinearSpec add_linear(const std::string& name, int in, int out);
  nn::LayerNormSpec add_layernorm(const std::string& name, int C, double eps);
  size_t add_embedding(const std::string& name, int rows, int C, int padding_idx);
  void build();
  void compute_position_ids(const Batch& batch, std::vector<int32_t>& out) const;
  const T* last_hidden(const Activations<T>& acts) const;

  enum class Init { Normal, One, Zero };
  struct InitRule {
    Init kind;
    int padding_row;  // -1: none
  };

  ModelConfig cfg_;
  ParamTable table_;
  std::vector<InitRule> init_;  // parallel to table_.entries()
  std::vector<std::pair<std::string, std::string>> aliases_;
  Buffer<T> params_, grads_;
  nn::EmbeddingsSpec embeddings_{};
  std::vector<nn::EncoderLayerSpec> layers_;
  nn::ClassifierHeadSpec classifier_{};
  nn::MaskedLMHeadSpec masked_lm_{};
  size_t head_begin_ = 0;  // flat offset of the first pooler / head parameter
};

}  // namespace strata
