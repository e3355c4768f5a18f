#include "models/encoder_model.h"

#include <algorithm>

#include "util/error.h"
#include "util/rng.h"

namespace strata {

namespace {
// Dropout stream numbering: each site of the model draws from its own stream.
constexpr uint64_t kEmbeddingStream = 1;
constexpr uint64_t kLayerStreamBase = 16;  // layer i uses 16 + 4i .. 16 + 4i + 2
constexpr uint64_t kHeadStream = 1u << 20;

// Per-family HF names of one encoder layer's modules, relative to the layer prefix.
struct LayerNames {
  const char *q, *k, *v, *attn_out, *ln_attn, *ffn_in, *ffn_out, *ln_out;
};
constexpr LayerNames kBertLayer{"attention.self.query", "attention.self.key", "attention.self.value",
                                "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense",
                                "output.dense", "output.LayerNorm"};
constexpr LayerNames kDistilLayer{"attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin",
                                  "sa_layer_norm", "ffn.lin1", "ffn.lin2", "output_layer_norm"};
}  // namespace

template <typename T>
EncoderModel<T>::EncoderModel(const ModelConfig& config) : cfg_(config) {
  build();
  params_.resize(table_.total());
  grads_.resize(table_.total());
  params_.zero();
  grads_.zero();
}

template <typename T>
nn::LinearSpec EncoderModel<T>::add_linear(const std::string& name, int in, int out) {
  nn::LinearSpec s{};
  s.w = table_.add(name + ".weight", {out, in}, false);
  init_.push_back({Init::Normal, -1});
  s.b = table_.add(name + ".bias", {out}, true);
  init_.push_back({Init::Zero, -1});
  s.in = in;
  s.out = out;
  return s;
}

template <typename T>
nn::LayerNormSpec EncoderModel<T>::add_layernorm(const std::string& name, int C, double eps) {
  nn::LayerNormSpec s{};
  s.gamma = table_.add(name + ".weight", {C}, true);
  init_.push_back({Init::One, -1});
  s.beta = table_.add(name + ".bias", {C}, true);
  init_.push_back({Init::Zero, -1});
  s.C = C;
  s.eps = eps;
  return s;
}

template <typename T>
size_t EncoderModel<T>::add_embedding(const std::string& name, int rows, int C, int padding_idx) {
  const size_t off = table_.add(name + ".weight", {rows, C}, false);
  init_.push_back({Init::Normal, padding_idx});
  return off;
}

template <typename T>
void EncoderModel<T>::build() {
  const ModelConfig& c = cfg_;
  const int C = c.hidden_size, F = c.intermediate_size;
  const bool distil = c.family == Family::DistilBert;
  const bool roberta = c.family == Family::Roberta;
  const std::string base = c.task == Task::Base ? "" : c.base_prefix();
  const std::string emb = base + "embeddings.";

  // Embeddings. nn.Embedding(padding_idx=pad) for words in every family, and for positions in RoBERTa.
  embeddings_.C = C;
  embeddings_.word = add_embedding(emb + "word_embeddings", c.vocab_size, C, c.pad_token_id);
  embeddings_.word_padding_idx = c.pad_token_id;
  embeddings_.position_padding_idx = roberta ? c.pad_token_id : -1;
  embeddings_.position =
      add_embedding(emb + "position_embeddings", c.max_position_embeddings, C, embeddings_.position_padding_idx);
  embeddings_.token_type = distil ? nn::EmbeddingsSpec::kNone
                                  : add_embedding(emb + "token_type_embeddings", c.type_vocab_size, C, -1);
  embeddings_.ln = add_layernorm(emb + "LayerNorm", C, c.layer_norm_eps);
  embeddings_.dropout = c.hidden_dropout;
  embeddings_.stream = kEmbeddingStream;

  const LayerNames& ln = distil ? kDistilLayer : kBertLayer;
  const std::string layer_root = base + (distil ? "transformer.layer." : "encoder.layer.");
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = layer_root + std::to_string(i) + ".";
    nn::EncoderLayerSpec s{};
    // q, k, v weights back to back, then their biases: the fused [3C, C] projection.
    s.qkv.w = table_.add(p + ln.q + ".weight", {C, C}, false);
    table_.add(p + ln.k + ".weight", {C, C}, false);
    table_.add(p + ln.v + ".weight", {C, C}, false);
    s.qkv.b = table_.add(p + ln.q + ".bias", {C}, true);
    table_.add(p + ln.k + ".bias", {C}, true);
    table_.add(p + ln.v + ".bias", {C}, true);
    for (int j = 0; j < 3; ++j) init_.push_back({Init::Normal, -1});
    for (int j = 0; j < 3; ++j) init_.push_back({Init::Zero, -1});
    s.qkv.in = C;
    s.qkv.out = 3 * C;
    s.attn_out = add_linear(p + ln.attn_out, C, C);
    s.ln_attn = add_layernorm(p + ln.ln_attn, C, c.layer_norm_eps);
    s.ffn_in = add_linear(p + ln.ffn_in, C, F);
    s.ffn_out = add_linear(p + ln.ffn_out, F, C);
    s.ln_out = add_layernorm(p + ln.ln_out, C, c.layer_norm_eps);
    s.num_heads = c.num_heads;
    s.act = c.act;
    s.attn_dropout = c.attention_dropout;
    s.attn_out_dropout = distil ? 0.0f : c.hidden_dropout;  // DistilBERT has none there
    s.ffn_dropout = c.hidden_dropout;
    s.stream = kLayerStreamBase + 4 * static_cast<uint64_t>(i);
    layers_.push_back(s);
  }

  head_begin_ = table_.total();  // pooler and task head follow the encoder
  kernels::Activation tanh_act = kernels::Activation::Tanh, relu_act = kernels::Activation::Relu;
  const bool bert_pooler = c.family == Family::Bert && c.task != Task::MaskedLM;
  const bool roberta_pooler = roberta && c.task == Task::Base;
  nn::LinearSpec pooler{};
  if (bert_pooler || roberta_pooler) pooler = add_linear(base + "pooler.dense", C, C);

  if (c.task == Task::SequenceClassification) {
    nn::ClassifierHeadSpec& h = classifier_;
    h.stream = kHeadStream;
    h.dropout = c.classifier_dropout;
    if (c.family == Family::Bert) {
      h.dense = pooler;
      h.act = tanh_act;
      h.out = add_linear("classifier", C, c.num_labels);
    } else if (roberta) {
      h.pre_dropout = c.classifier_dropout;
      h.dense = add_linear("classifier.dense", C, C);
      h.act = tanh_act;
      h.out = add_linear("classifier.out_proj", C, c.num_labels);
    } else {
      h.dense = add_linear("pre_classifier", C, C);
      h.act = relu_act;
      h.out = add_linear("classifier", C, c.num_labels);
    }
  } else if (c.task == Task::MaskedLM) {
    nn::MaskedLMHeadSpec& h = masked_lm_;
    const std::string word = emb + "word_embeddings.weight";
    std::string bias_name;
    if (c.family == Family::Bert) {
      h.dense = add_linear("cls.predictions.transform.dense", C, C);
      h.act = c.act;
      h.ln = add_layernorm("cls.predictions.transform.LayerNorm", C, c.layer_norm_eps);
      bias_name = "cls.predictions.bias";
      aliases_ = {{"cls.predictions.decoder.weight", word}, {"cls.predictions.decoder.bias", bias_name}};
    } else if (roberta) {
      h.dense = add_linear("lm_head.dense", C, C);
      h.act = kernels::Activation::GeluErf;  // RobertaLMHead calls gelu() whatever hidden_act says
      h.ln = add_layernorm("lm_head.layer_norm", C, c.layer_norm_eps);
      bias_name = "lm_head.bias";
      aliases_ = {{"lm_head.decoder.weight", word}, {"lm_head.decoder.bias", bias_name}};
    } else {
      h.dense = add_linear("vocab_transform", C, C);
      h.act = c.act;
      h.ln = add_layernorm("vocab_layer_norm", C, 1e-12);
      bias_name = "vocab_projector.bias";
      aliases_ = {{"vocab_projector.weight", word}};
    }
    h.decoder.w = embeddings_.word;
    h.decoder.b = table_.add(bias_name, {c.vocab_size}, true);
    init_.push_back({Init::Zero, -1});
    h.decoder.in = C;
    h.decoder.out = c.vocab_size;
  }
}

template <typename T>
void EncoderModel<T>::init_parameter(std::string_view name, uint64_t seed) {
  const ParamEntry& e = table_.at(name);
  const size_t idx = static_cast<size_t>(&e - table_.entries().data());
  const InitRule& rule = init_[idx];
  T* p = params_.data() + e.offset;
  switch (rule.kind) {
    case Init::One: std::fill(p, p + e.numel, T(1)); break;
    case Init::Zero: std::fill(p, p + e.numel, T(0)); break;
    case Init::Normal: {
      const CounterRng rng(seed, idx);
#pragma omp parallel for schedule(static)
      for (size_t i = 0; i < e.numel; ++i) p[i] = static_cast<T>(rng.normal(i) * cfg_.initializer_range);
      if (rule.padding_row >= 0) {
        const size_t cols = static_cast<size_t>(e.shape[1]);
        std::fill(p + rule.padding_row * cols, p + (rule.padding_row + 1) * cols, T(0));
      }
      break;
    }
  }
}

template <typename T>
void EncoderModel<T>::init_weights(uint64_t seed) {
  for (const ParamEntry& e : table_.entries()) init_parameter(e.name, seed);
}

template <typename T>
void EncoderModel<T>::compute_position_ids(const Batch& b, std::vector<int32_t>& pos) const {
  pos.resize(static_cast<size_t>(b.B) * b.T);
  for (int r = 0; r < b.B; ++r) {
    int count = 0;
    for (int t = 0; t < b.T; ++t) {
      const size_t i = static_cast<size_t>(r) * b.T + t;
      if (cfg_.family == Family::Roberta) {
        // fairseq's make_positions: non-pad tokens count up from pad+1, pad tokens sit at pad.
        const bool real = b.input_ids[i] != cfg_.pad_token_id;
        count += real;
        pos[i] = real ? cfg_.pad_token_id + count : cfg_.pad_token_id;
      } else {
        pos[i] = t;
      }
    }
  }
}

template <typename T>
const T* EncoderModel<T>::last_hidden(const Activations<T>& acts) const {
  return acts.layers.empty() ? acts.embeddings.out.data() : acts.layers.back().out.data();
}

template <typename T>
size_t EncoderModel<T>::output_size(const Batch& b) const {
  const size_t N = static_cast<size_t>(b.B) * b.T;
  switch (cfg_.task) {
    case Task::SequenceClassification: return static_cast<size_t>(b.B) * cfg_.num_labels;
    case Task::MaskedLM: return N * cfg_.vocab_size;
    case Task::Base: return N * cfg_.hidden_size;
  }
  return 0;
}

template <typename T>
const T* EncoderModel<T>::forward(const Batch& b, const nn::DropoutCtx& drop, Activations<T>& acts) const {
  const nn::Flat<T> f{params_.data(), const_cast<T*>(grads_.data())};
  const int N = b.B * b.T;
  compute_position_ids(b, acts.position_ids);
  nn::embeddings_forward(embeddings_, f, b.input_ids.data(), acts.position_ids.data(), b.token_type_ids.data(), N,
                         drop, acts.embeddings);
  acts.layers.resize(layers_.size());
  const T* x = acts.embeddings.out.data();
  for (size_t i = 0; i < layers_.size(); ++i) {
    nn::encoder_layer_forward(layers_[i], f, x, b.attention_mask.data(), b.B, b.T, drop, acts.layers[i]);
    x = acts.layers[i].out.data();
  }
  switch (cfg_.task) {
    case Task::SequenceClassification:
      nn::classifier_head_forward(classifier_, f, x, b.B, b.T, drop, acts.classifier);
      return acts.classifier.logits.data();
    case Task::MaskedLM:
      nn::masked_lm_head_forward(masked_lm_, f, x, N, acts.masked_lm);
      return acts.masked_lm.logits.data();
    case Task::Base: return x;
  }
  return x;
}

template <typename T>
LossResult EncoderModel<T>::loss(const Batch& b, Activations<T>& acts, double norm) const {
  if (norm <= 0) norm = label_count(cfg_, b);
  if (norm <= 0) norm = 1;  // nothing labelled: loss 0, gradient 0
  acts.dlogits.resize(output_size(b));
  T* d = acts.dlogits.data();
  switch (cfg_.task) {
    case Task::MaskedLM:
      if (b.labels.empty()) fail("masked-LM loss: the batch has no labels");
      return {kernels::cross_entropy(acts.masked_lm.logits.data(), b.labels.data(), d, b.B * b.T, cfg_.vocab_size,
                                     norm),
              norm};
    case Task::SequenceClassification: {
      const T* logits = acts.classifier.logits.data();
      const size_t n = static_cast<size_t>(b.B) * cfg_.num_labels;
      switch (resolve_problem_type(cfg_, b)) {
        case ProblemType::SingleLabel:
          if (b.labels.empty()) fail("classification loss: the batch has no labels");
          return {kernels::cross_entropy(logits, b.labels.data(), d, b.B, cfg_.num_labels, norm), norm};
        case ProblemType::Regression:
          if (b.float_labels.empty()) fail("regression loss: the batch has no targets");
          return {kernels::mse(logits, b.float_labels.data(), d, n, norm), norm};
        case ProblemType::MultiLabel:
          if (b.float_labels.empty()) fail("multi-label loss: the batch has no targets");
          return {kernels::bce_with_logits(logits, b.float_labels.data(), d, n, norm), norm};
        case ProblemType::Unset: break;
      }
      break;
    }
    case Task::Base: break;
  }
  fail("a ", cfg_.architecture(), " has no task head, so it has no loss; use a ...ForSequenceClassification or "
       "...ForMaskedLM model");
}

template <typename T>
bool EncoderModel<T>::is_base_parameter(const ParamEntry& e) const {
  return cfg_.task == Task::Base || e.name.starts_with(cfg_.base_prefix());
}

template <typename T>
void EncoderModel<T>::backward(const Batch& b, const nn::DropoutCtx& drop, Activations<T>& acts, bool head_only,
                               const std::function<void(size_t)>& grads_final_from) {
  const nn::Flat<T> f{params_.data(), grads_.data()};
  const int N = b.B * b.T;
  const size_t NC = static_cast<size_t>(N) * cfg_.hidden_size;
  acts.d_hidden.resize(NC);
  acts.d_hidden_next.resize(NC);
  const T* h = last_hidden(acts);
  auto final_from = [&](size_t offset) {
    if (grads_final_from) grads_final_from(offset);
  };
  switch (cfg_.task) {
    case Task::SequenceClassification:
      nn::classifier_head_backward(classifier_, f, b.B, b.T, drop, acts.classifier, acts.dlogits.data(),
                                   acts.d_hidden.data());
      break;
    case Task::MaskedLM:
      nn::masked_lm_head_backward(masked_lm_, f, h, N, acts.masked_lm, acts.dlogits.data(), acts.d_hidden.data(),
                                  acts.d_misc);
      break;
    case Task::Base: fail("backward needs a task head");
  }
  // The table holds embeddings, then layers in order, then pooler and head; the tied word
  // embedding (MLM decoder) sits at offset 0 and is final only after the embeddings.
  final_from(head_begin_);
  if (head_only) {
    final_from(0);
    return;
  }
  for (size_t i = layers_.size(); i-- > 0;) {
    const T* x = i == 0 ? acts.embeddings.out.data() : acts.layers[i - 1].out.data();
    nn::encoder_layer_backward(layers_[i], f, x, b.B, b.T, drop, acts.layers[i], acts.d_hidden.data(),
                               acts.d_hidden_next.data(), acts.scratch);
    std::swap(acts.d_hidden, acts.d_hidden_next);
    final_from(layers_[i].qkv.w);
  }
  nn::embeddings_backward(embeddings_, f, b.input_ids.data(), acts.position_ids.data(), b.token_type_ids.data(), N,
                          drop, acts.embeddings, acts.d_hidden.data(), acts.d_misc);
  final_from(0);
}

template class EncoderModel<float>;
template class EncoderModel<double>;

}  // namespace strata
