#include "models/gpt2/gpt2_model.h"

#include <algorithm>
#include <cmath>

#include "models/batch_checks.h"
#include "models/encoder_heads.h"
#include "models/gpt2/gpt2_decoder.h"
#include "util/error.h"

namespace strata {

namespace {
// Dropout stream numbering: each site of the model draws from its own stream.
constexpr uint64_t kEmbeddingStream = 1;
constexpr uint64_t kLayerStreamBase = 16;  // layer i uses 16 + 4i .. 16 + 4i + 2
constexpr uint64_t kHeadStream = 1u << 20;
}  // namespace

template <typename T>
Gpt2Model<T>::Gpt2Model(const ModelConfig& config) : Model<T>(config) {
  build();
  this->allocate();
}

template <typename T>
nn::LinearSpec Gpt2Model<T>::add_conv1d(const std::string& name, int in, int out, double std, Split split) {
  using Init = typename Model<T>::Init;
  const int P = this->cfg_.tensor_split.degree;
  const bool column = split == Split::Column || split == Split::ColumnQkv;
  const int parts = split == Split::ColumnQkv ? 3 : 1;
  nn::LinearSpec s{};
  // Conv1D: [in, out]. Column-parallel cuts dim 1 and the bias; row-parallel dim 0, and every
  // rank keeps the whole bias (added once after the sum).
  s.w = this->add_split_param(name + ".weight", {in, out}, false, Init::Normal,
                              split == Split::None ? -1 : (column ? 1 : 0), parts, std);
  s.b = this->add_split_param(name + ".bias", {out}, true, Init::Zero, column ? 0 : -1, parts);
  s.in = split == Split::Row ? in / P : in;
  s.out = column ? out / P : out;
  return s;
}

template <typename T>
void Gpt2Model<T>::build() {
  const ModelConfig& c = this->cfg_;
  const int C = c.hidden_size, F = c.intermediate_size;
  const std::string base = c.task == Task::Base ? "" : c.base_prefix();
  size_t first_entry = 0;
  auto close_unit = [&] { unit_params_.push_back(this->entries_since(first_entry)); };

  // GPT-2's embeddings have no padding_idx: every row is trained. Under tensor parallelism wte
  // is vocabulary-parallel (each rank its rows, for the lookup and the tied LM head); the
  // blocks are split as nn/decoder_layer.h says; wpe, the layer norms and the classification
  // heads are whole on every rank.
  const int P = c.tensor_split.degree;
  vocab_ = this->vocab_slice();
  wte_ = this->add_embedding(base + "wte", c.vocab_size, C, -1, Model<T>::TableSplit::Rows);
  wpe_ = this->add_embedding(base + "wpe", c.max_position_embeddings, C, -1);
  close_unit();

  // HF's _init_weights: every c_proj.weight (attention and MLP) gets std / sqrt(2 n_layer).
  const double proj_std = c.initializer_range / std::sqrt(2.0 * c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = base + "h." + std::to_string(i) + ".";
    nn::DecoderLayerSpec s{};
    s.ln_1 = this->add_layernorm(p + "ln_1", C, c.layer_norm_eps);
    s.c_attn = add_conv1d(p + "attn.c_attn", C, 3 * C, -1, Split::ColumnQkv);
    s.attn_proj = add_conv1d(p + "attn.c_proj", C, C, proj_std, Split::Row);
    s.ln_2 = this->add_layernorm(p + "ln_2", C, c.layer_norm_eps);
    s.c_fc = add_conv1d(p + "mlp.c_fc", C, F, -1, Split::Column);
    s.mlp_proj = add_conv1d(p + "mlp.c_proj", F, C, proj_std, Split::Row);
    s.num_heads = c.num_heads / P;
    s.heads_total = c.num_heads;
    s.head0 = c.tensor_split.rank * s.num_heads;
    s.scale_attn = c.scale_attn_weights;
    s.act = c.act;
    s.attn_dropout = c.attention_dropout;
    s.resid_dropout = c.hidden_dropout;
    s.stream = kLayerStreamBase + 4 * static_cast<uint64_t>(i);
    layers_.push_back(s);
    close_unit();
  }

  head_begin_ = this->table_.total();
  ln_f_ = this->add_layernorm(base + "ln_f", C, c.layer_norm_eps);
  switch (c.task) {
    case Task::Base: break;
    case Task::CausalLM:
      lm_head_ = {wte_, nn::LinearSpec::kNoBias, C, vocab_.rows};
      this->aliases_ = {{"lm_head.weight", base + "wte.weight"}};  // HF stores only wte
      break;
    case Task::SequenceClassification: score_ = this->add_linear("score", C, c.num_labels, /*bias=*/false); break;
    case Task::TokenClassification:
      token_ = {c.classifier_dropout, this->add_linear("classifier", C, c.num_labels), kHeadStream};
      break;
    default: fail(c.model_type, ": no ", task_name(c.task), " head");
  }
  close_unit();
  if (c.task == Task::CausalLM) unit_params_.back().push_back(0);  // the tied lm_head reads wte
}

template <typename T>
void Gpt2Model<T>::embed(const Batch& b, const nn::DropoutCtx& drop, Gpt2State<T>& s) const {
  const int N = b.B * b.T, C = this->cfg_.hidden_size;
  // HF with an attention_mask and no position_ids uses arange(T) for every row.
  std::vector<int32_t>& pos = s.position_ids.host();
  pos.resize(static_cast<size_t>(N));
  for (int n = 0; n < N; ++n) pos[n] = n % b.T;
  s.embeddings.resize(static_cast<size_t>(N) * C);
  s.embeddings.zero();
  const T* p = this->params_.data();
  nn::vocab_parallel_embedding_forward(vocab_, this->tp_group(), s.inputs.input_ids, p + wte_, s.embeddings.data(), N,
                                       C);
  kernels::embedding_forward(s.position_ids.upload(), p + wpe_, s.embeddings.data(), N, C);
  kernels::dropout_forward(s.embeddings.data(), s.embeddings.data(), s.embeddings.size(),
                           drop.p(this->cfg_.embedding_dropout), drop.seed, kEmbeddingStream);
}

template <typename T>
const T* Gpt2Model<T>::head_forward(const Batch& b, const nn::DropoutCtx& drop, const T* h, Gpt2State<T>& s) const {
  const ModelConfig& c = this->cfg_;
  const nn::Flat<T> f = this->flat_for_forward();
  const int N = b.B * b.T, C = c.hidden_size;
  s.last_hidden = h;
  s.final_hidden.resize(static_cast<size_t>(N) * C);
  s.final_mean.resize(N);
  s.final_rstd.resize(N);
  nn::layernorm_forward(ln_f_, f, h, s.final_hidden.data(), s.final_mean.data(), s.final_rstd.data(), N);
  const T* hf = s.final_hidden.data();
  switch (c.task) {
    case Task::Base: return hf;
    case Task::CausalLM:
      s.logits.resize(static_cast<size_t>(N) * vocab_.rows);
      nn::linear_forward(lm_head_, f, hf, s.logits.data(), N);
      // Training never gathers the logits (the loss is vocabulary-parallel); an inference pass
      // (dropout off) does, for the outputs evaluation and prediction read.
      if (split() && !drop.active) {
        s.gathered_logits.resize(static_cast<size_t>(N) * c.vocab_size);
        nn::vocab_parallel_gather(vocab_, this->tp_group(), s.logits.data(), s.gathered_logits.data(), N,
                                  c.vocab_size);
      }
      return s.logits.data();
    case Task::SequenceClassification: {
      // HF pools each row's last non-pad token: (argmax(input_ids == pad) - 1) mod T, so a
      // row without a pad token (or without a pad id, B == 1) uses position T-1.
      if (c.pad_token_id < 0 && b.B > 1)
        fail(c.architecture(), ": cannot handle a batch of ", b.B,
             " sequences when config.json has no pad_token_id (the last token of each row is found from the first "
             "pad token); set pad_token_id in config.json");
      std::vector<int32_t>& pooled_rows = s.pooled_rows.host();
      pooled_rows.resize(static_cast<size_t>(b.B));
      s.pooled.resize(static_cast<size_t>(b.B) * C);
      for (int r = 0; r < b.B; ++r) {
        int first_pad = 0;
        if (c.pad_token_id >= 0)
          for (int t = 0; t < b.T; ++t)
            if (b.input_ids[static_cast<size_t>(r) * b.T + t] == c.pad_token_id) {
              first_pad = t;
              break;
            }
        pooled_rows[r] = r * b.T + ((first_pad - 1) % b.T + b.T) % b.T;
      }
      kernels::gather_rows(hf, s.pooled_rows.upload(), s.pooled.data(), b.B, C);
      s.logits.resize(static_cast<size_t>(b.B) * c.num_labels);
      nn::linear_forward(score_, f, s.pooled.data(), s.logits.data(), b.B);
      return s.logits.data();
    }
    case Task::TokenClassification:
      s.logits.resize(static_cast<size_t>(N) * c.num_labels);
      nn::token_head_forward(token_, f, hf, N, drop, s.head_scratch, s.logits.data());
      return s.logits.data();
    default: break;
  }
  fail("a ", c.architecture(), " has no task head to run");
}

template <typename T>
const T* Gpt2Model<T>::forward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* input,
                               ModelState& state) const {
  auto& s = static_cast<Gpt2State<T>&>(state);
  const nn::Flat<T> f = this->flat_for_forward();  // forward writes no gradient
  const int N = b.B * b.T, L = num_blocks();
  s.inputs.upload(b);
  if (r.begin == 0) {
    embed(b, drop, s);
  } else {
    s.input.resize(static_cast<size_t>(N) * this->cfg_.hidden_size);
    kernels::copy(input, s.input.data(), s.input.size());
  }
  const T* x = s.blocks.forward(std::max(r.begin, 1) - 1, std::min(r.end - 1, L),
                                 r.begin == 0 ? s.embeddings.data() : s.input.data(),
                                 [&](int i, const T* in, nn::DecoderLayerSaved<T>& sv) {
                                   nn::decoder_layer_forward(layers_[i], f, in, s.inputs.attention_mask, b.B, b.T,
                                                             drop, sv, s.scratch);
                                 });
  if (!r.contains(this->head_unit())) return x;
  return head_forward(b, drop, x, s);
}

template <typename T>
const T* Gpt2Model<T>::infer(const Batch& b, ModelState& state) const {
  auto& s = static_cast<Gpt2State<T>&>(state);
  const nn::Flat<T> f = this->flat_for_forward();
  const nn::DropoutCtx no_dropout{false, 0};
  s.inputs.upload(b);
  embed(b, no_dropout, s);
  // Two block slots in turn: block i reads slot (i-1)%2 and writes slot i%2.
  const T* x = s.embeddings.data();
  for (int i = 0; i < num_blocks(); ++i) {
    nn::DecoderLayerSaved<T>& slot = s.blocks.inference_slot(i);
    nn::decoder_layer_forward(layers_[i], f, x, s.inputs.attention_mask, b.B, b.T, no_dropout, slot, s.scratch);
    x = slot.out.data();
  }
  return head_forward(b, no_dropout, x, s);
}

template <typename T>
std::unique_ptr<CausalDecoder<T>> Gpt2Model<T>::new_cached_decoder() const {
  if (this->cfg_.task != Task::CausalLM) return nullptr;
  return std::make_unique<Gpt2Decoder<T>>(*this);
}

template <typename T>
LossResult Gpt2Model<T>::loss(const Batch& b, ModelState& state, double norm) const {
  auto& s = static_cast<Gpt2State<T>&>(state);
  const ModelConfig& c = this->cfg_;
  if (c.task == Task::Base) fail("a ", c.architecture(), " has no task head, so it has no loss; use a model with a task head");
  if (norm <= 0) norm = std::max(1.0, label_count(c, b));
  const int N = b.B * b.T;
  switch (c.task) {
    case Task::CausalLM: {
      if (b.labels.size() != static_cast<size_t>(N)) fail("causal-lm loss: the batch needs one label per position");
      // HF shifts: logits[:, :-1] predict labels[:, 1:]; the last position of each row has no target.
      std::vector<int32_t>& shifted = s.shifted_labels.host();
      shifted.resize(static_cast<size_t>(N));
      for (int r = 0; r < b.B; ++r)
        for (int t = 0; t < b.T; ++t) {
          const size_t i = static_cast<size_t>(r) * b.T + t;
          shifted[i] = t + 1 < b.T ? b.labels[i + 1] : -100;
        }
      const int32_t* targets = s.shifted_labels.upload();
      s.dlogits.resize(static_cast<size_t>(N) * vocab_.rows);
      if (split())
        return {nn::vocab_parallel_cross_entropy(vocab_, this->tp_group(), s.logits.data(), targets, s.dlogits.data(),
                                                 N, norm, s.ce),
                norm};
      return {kernels::cross_entropy(s.logits.data(), targets, s.dlogits.data(), N, c.vocab_size, norm), norm};
    }
    case Task::SequenceClassification: return sequence_classification_loss(c, b, s.inputs, s.logits.data(), s.dlogits, norm);
    case Task::TokenClassification:
      if (b.labels.size() != static_cast<size_t>(N)) fail("token-classification loss: the batch needs one label per position");
      s.dlogits.resize(static_cast<size_t>(N) * c.num_labels);
      return {kernels::cross_entropy(s.logits.data(), s.inputs.labels, s.dlogits.data(), N, c.num_labels, norm), norm};
    default: break;
  }
  fail("a ", c.architecture(), " has no loss");
}

template <typename T>
std::vector<HeadOutput<T>> Gpt2Model<T>::head_outputs(const Batch& b, const ModelState& state) const {
  const auto& s = static_cast<const Gpt2State<T>&>(state);
  const ModelConfig& c = this->cfg_;
  switch (c.task) {
    case Task::CausalLM:
      return {{"logits", {b.B, b.T, c.vocab_size}, split() ? s.gathered_logits.data() : s.logits.data()}};
    case Task::SequenceClassification: return {{"logits", {b.B, c.num_labels}, s.logits.data()}};
    case Task::TokenClassification: return {{"logits", {b.B, b.T, c.num_labels}, s.logits.data()}};
    default: return {};
  }
}

template <typename T>
const T* Gpt2Model<T>::backward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* d_output,
                                ModelState& state, const GradsFinalHook& grads_final) {
  auto& s = static_cast<Gpt2State<T>&>(state);
  const ModelConfig& c = this->cfg_;
  const nn::Flat<T> f = this->flat_for_backward(state);
  const int N = b.B * b.T, L = num_blocks(), C = c.hidden_size;
  const size_t NC = static_cast<size_t>(N) * C;
  s.d_hidden.resize(NC);
  s.d_hidden_next.resize(NC);
  auto final_from = [&](size_t offset) {
    if (grads_final) grads_final(offset);
  };
  if (r.contains(this->head_unit())) {
    s.d_final.resize(NC);
    const T* hf = s.final_hidden.data();
    switch (c.task) {
      case Task::CausalLM:
        nn::linear_backward(lm_head_, f, hf, s.dlogits.data(), s.d_final.data(), N);
        nn::tp_sum(f.tp, s.d_final.data(), NC);  // each rank's vocabulary columns' share
        break;
      case Task::SequenceClassification: {
        s.d_pooled.resize(static_cast<size_t>(b.B) * C);
        nn::linear_backward(score_, f, s.pooled.data(), s.dlogits.data(), s.d_pooled.data(), b.B);
        s.d_final.zero();
        kernels::scatter_rows(s.d_pooled.data(), s.pooled_rows.data(), s.d_final.data(), b.B, C);
        break;
      }
      case Task::TokenClassification:
        nn::token_head_backward(token_, f, hf, N, drop, s.dlogits.data(), s.d_final.data(), s.head_scratch);
        break;
      default: fail("backward needs a task head (", c.architecture(), " has none)");
    }
    nn::layernorm_backward(ln_f_, f, s.last_hidden, s.final_mean.data(), s.final_rstd.data(), s.d_final.data(),
                           s.d_hidden.data(), N);
    // The tied lm_head weight (wte) sits at offset 0 and is final only after the embeddings.
    final_from(head_begin_);
  } else {
    kernels::copy(d_output, s.d_hidden.data(), NC);
  }
  for (int i = std::min(r.end - 1, L) - 1; i >= std::max(r.begin, 1) - 1; --i) {
    nn::DecoderLayerSaved<T>& sv = s.blocks.for_backward(i, [&](int k, const T* in, nn::DecoderLayerSaved<T>& w) {
      nn::decoder_layer_forward(layers_[k], f, in, s.inputs.attention_mask, b.B, b.T, drop, w, s.scratch);
    });
    nn::decoder_layer_backward(layers_[i], f, s.blocks.input(i), b.B, b.T, drop, sv, s.d_hidden.data(),
                               s.d_hidden_next.data(), s.scratch);
    std::swap(s.d_hidden, s.d_hidden_next);
    final_from(layers_[i].ln_1.gamma);
  }
  if (r.begin > 0) return s.d_hidden.data();
  T* d = s.d_hidden.data();
  kernels::dropout_backward(d, d, NC, drop.p(c.embedding_dropout), drop.seed, kEmbeddingStream);
  if (split())
    nn::vocab_parallel_embedding_backward(vocab_, s.inputs.input_ids, d, f.g + wte_, N, C, s.local_ids);
  else
    kernels::embedding_backward(s.inputs.input_ids, d, f.g + wte_, N, C, -1);
  kernels::embedding_backward(s.position_ids.data(), d, f.g + wpe_, N, C, -1);
  final_from(0);
  return nullptr;
}

template <typename T>
typename Model<T>::ActivationTerms Gpt2Model<T>::activation_terms(int B, int T_) const {
  const ModelConfig& c = this->cfg_;
  const size_t N = static_cast<size_t>(B) * T_, C = c.hidden_size, P = static_cast<size_t>(c.tensor_split.degree);
  size_t acts = N * C            // embeddings
                + N * C + 2 * N;  // ln_f output and statistics
  switch (c.task) {
    case Task::CausalLM: acts += N * static_cast<size_t>(vocab_.rows); break;
    case Task::SequenceClassification: acts += static_cast<size_t>(B) * (C + c.num_labels); break;
    case Task::TokenClassification: acts += N * c.num_labels + (c.classifier_dropout > 0 ? N * C : 0); break;
    default: break;
  }
  return {acts, nn::DecoderLayerSaved<T>::block_saved(N, C, c.intermediate_size, B, c.num_heads, T_, P), N * C,
          num_blocks()};
}

template <typename T>
size_t Gpt2Model<T>::scratch_values(int B, int T_) const {
  const ModelConfig& c = this->cfg_;
  const size_t N = static_cast<size_t>(B) * T_, C = c.hidden_size, P = static_cast<size_t>(c.tensor_split.degree);
  const size_t pooled = c.task == Task::SequenceClassification ? static_cast<size_t>(B) * C : 0;
  return nn::BlockScratch<T>::values(N, C, c.intermediate_size / P, 3 * C / P)  // blocks
         + 3 * N * C                                                     // d_hidden, d_hidden_next, d_final
         + pooled                                                        // the pooled token's gradient
         + loss_values(B, T_);                                           // d(loss)/d(logits)
}

template <typename T>
size_t Gpt2Model<T>::loss_values(int B, int T_) const {
  const ModelConfig& c = this->cfg_;
  const size_t N = static_cast<size_t>(B) * T_;
  switch (c.task) {
    case Task::CausalLM: return N * static_cast<size_t>(vocab_.rows);
    case Task::SequenceClassification: return static_cast<size_t>(B) * c.num_labels;
    case Task::TokenClassification: return N * c.num_labels;
    default: return 0;
  }
}

template class Gpt2Model<float>;
template class Gpt2Model<double>;

}  // namespace strata
