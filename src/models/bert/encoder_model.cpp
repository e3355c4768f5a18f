#include "models/bert/encoder_model.h"

#include <algorithm>

#include "util/error.h"

namespace strata {

namespace {
// Dropout stream numbering: each site of the model draws from its own stream.
constexpr uint64_t kEmbeddingStream = 1;
constexpr uint64_t kLayerStreamBase = 16;  // layer i uses 16 + 4i .. 16 + 4i + 2
constexpr uint64_t kHeadStream = 1u << 20;

// Per-model_type HF names of one encoder layer's modules, relative to the layer prefix.
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
EncoderModel<T>::EncoderModel(const ModelConfig& config) : Model<T>(config) {
  build();
  this->allocate();
}

template <typename T>
void EncoderModel<T>::build() {
  const ModelConfig& c = this->cfg_;
  const int C = c.hidden_size, F = c.intermediate_size;
  const bool distil = c.model_type == "distilbert";
  const bool roberta = c.model_type == "roberta";
  const bool bert = !distil && !roberta;
  const std::string base = c.task == Task::Base ? "" : c.base_prefix();
  const std::string emb = base + "embeddings.";
  size_t first_entry = 0;
  auto close_unit = [&] { unit_params_.push_back(this->entries_since(first_entry)); };

  // Embeddings. nn.Embedding(padding_idx=pad) for words in every model, and for positions in RoBERTa.
  // Under tensor parallelism the word table (and the masked-LM decoder tied to it, with its
  // bias) is vocabulary-parallel; the layers are split as nn/encoder_layer.h says; position and
  // token-type tables, layer norms, the pooler and the other heads are whole on every rank.
  const int P = c.tensor_split.degree;
  const nn::VocabSlice vocab = this->vocab_slice();
  using Init = typename Model<T>::Init;
  embeddings_.C = C;
  embeddings_.word = this->add_embedding(emb + "word_embeddings", c.vocab_size, C, c.pad_token_id,
                                         Model<T>::TableSplit::Rows);
  embeddings_.word_slice = vocab;
  embeddings_.word_padding_idx = c.pad_token_id;
  embeddings_.position_padding_idx = roberta ? c.pad_token_id : -1;
  embeddings_.position = this->add_embedding(emb + "position_embeddings", c.max_position_embeddings, C,
                                             embeddings_.position_padding_idx);
  embeddings_.token_type = distil ? nn::EmbeddingsSpec::kNone
                                  : this->add_embedding(emb + "token_type_embeddings", c.type_vocab_size, C, -1);
  embeddings_.ln = this->add_layernorm(emb + "LayerNorm", C, c.layer_norm_eps);
  embeddings_.dropout = c.hidden_dropout;
  embeddings_.stream = kEmbeddingStream;
  close_unit();

  const LayerNames& ln = distil ? kDistilLayer : kBertLayer;
  const std::string layer_root = base + (distil ? "transformer.layer." : "encoder.layer.");
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = layer_root + std::to_string(i) + ".";
    nn::EncoderLayerSpec s{};
    // q, k, v weights back to back, then their biases: the fused [3C, C] projection (under
    // tensor parallelism each rank's rows of the three, back to back: [3C/P, C]).
    s.qkv.w = this->add_split_param(p + ln.q + ".weight", {C, C}, false, Init::Normal, 0);
    this->add_split_param(p + ln.k + ".weight", {C, C}, false, Init::Normal, 0);
    this->add_split_param(p + ln.v + ".weight", {C, C}, false, Init::Normal, 0);
    s.qkv.b = this->add_split_param(p + ln.q + ".bias", {C}, true, Init::Zero, 0);
    this->add_split_param(p + ln.k + ".bias", {C}, true, Init::Zero, 0);
    this->add_split_param(p + ln.v + ".bias", {C}, true, Init::Zero, 0);
    s.qkv.in = C;
    s.qkv.out = 3 * C / P;
    s.attn_out = this->add_split_linear(p + ln.attn_out, C, C, /*column=*/false);
    s.ln_attn = this->add_layernorm(p + ln.ln_attn, C, c.layer_norm_eps);
    s.ffn_in = this->add_split_linear(p + ln.ffn_in, C, F, /*column=*/true);
    s.ffn_out = this->add_split_linear(p + ln.ffn_out, F, C, /*column=*/false);
    s.ln_out = this->add_layernorm(p + ln.ln_out, C, c.layer_norm_eps);
    s.num_heads = c.num_heads / P;
    s.heads_total = c.num_heads;
    s.head0 = c.tensor_split.rank * s.num_heads;
    s.act = c.act;
    s.attn_dropout = c.attention_dropout;
    s.attn_out_dropout = distil ? 0.0f : c.hidden_dropout;  // DistilBERT has none there
    s.ffn_dropout = c.hidden_dropout;
    s.stream = kLayerStreamBase + 4 * static_cast<uint64_t>(i);
    layers_.push_back(s);
    close_unit();
  }

  head_begin_ = this->table_.total();  // pooler and task head follow the encoder
  heads_.task = c.task;
  const kernels::Activation tanh_act = kernels::Activation::Tanh, relu_act = kernels::Activation::Relu;
  const bool bert_pooler = bert && (c.task == Task::Base || c.task == Task::SequenceClassification);
  const bool roberta_pooler = roberta && c.task == Task::Base;
  nn::LinearSpec pooler{};
  if (bert_pooler || roberta_pooler) pooler = this->add_linear(base + "pooler.dense", C, C);

  switch (c.task) {
    case Task::SequenceClassification: {
      nn::ClassifierHeadSpec& h = heads_.classifier;
      h.stream = kHeadStream;
      h.dropout = c.classifier_dropout;
      if (bert) {
        h.dense = pooler;
        h.act = tanh_act;
        h.out = this->add_linear("classifier", C, c.num_labels);
      } else if (roberta) {
        h.pre_dropout = c.classifier_dropout;
        h.dense = this->add_linear("classifier.dense", C, C);
        h.act = tanh_act;
        h.out = this->add_linear("classifier.out_proj", C, c.num_labels);
      } else {
        h.dense = this->add_linear("pre_classifier", C, C);
        h.act = relu_act;
        h.out = this->add_linear("classifier", C, c.num_labels);
      }
      break;
    }
    case Task::MaskedLM: {
      nn::MaskedLMHeadSpec& h = heads_.masked_lm;
      const std::string word = emb + "word_embeddings.weight";
      std::string bias_name;
      if (bert) {
        h.dense = this->add_linear("cls.predictions.transform.dense", C, C);
        h.act = c.act;
        h.ln = this->add_layernorm("cls.predictions.transform.LayerNorm", C, c.layer_norm_eps);
        bias_name = "cls.predictions.bias";
        this->aliases_ = {{"cls.predictions.decoder.weight", word}, {"cls.predictions.decoder.bias", bias_name}};
      } else if (roberta) {
        h.dense = this->add_linear("lm_head.dense", C, C);
        h.act = kernels::Activation::GeluErf;  // RobertaLMHead calls gelu() whatever hidden_act says
        h.ln = this->add_layernorm("lm_head.layer_norm", C, c.layer_norm_eps);
        bias_name = "lm_head.bias";
        this->aliases_ = {{"lm_head.decoder.weight", word}, {"lm_head.decoder.bias", bias_name}};
      } else {
        h.dense = this->add_linear("vocab_transform", C, C);
        h.act = c.act;
        h.ln = this->add_layernorm("vocab_layer_norm", C, 1e-12);
        bias_name = "vocab_projector.bias";
        this->aliases_ = {{"vocab_projector.weight", word}};
      }
      h.decoder.w = embeddings_.word;
      h.decoder.b = this->add_split_param(bias_name, {c.vocab_size}, true, Init::Zero, 0);
      h.decoder.in = C;
      h.decoder.out = vocab.rows;
      h.vocab = vocab;
      break;
    }
    case Task::TokenClassification:
      // BERT / RoBERTa: dropout(classifier_dropout or hidden_dropout); DistilBERT: dropout(config.dropout).
      heads_.token = {distil ? c.hidden_dropout : c.classifier_dropout, this->add_linear("classifier", C, c.num_labels),
                      kHeadStream};
      break;
    case Task::QuestionAnswering:
      // DistilBERT applies dropout(qa_dropout) before qa_outputs; BERT and RoBERTa apply none.
      heads_.token = {distil ? static_cast<float>(c.raw.value("qa_dropout", 0.1)) : 0.0f,
                      this->add_linear("qa_outputs", C, 2), kHeadStream};
      break;
    case Task::Base: break;
    default: fail(c.model_type, ": no ", task_name(c.task), " head");
  }
  close_unit();
  if (c.task == Task::MaskedLM) unit_params_.back().push_back(0);  // the tied decoder reads the word embeddings
}

template <typename T>
std::vector<size_t> EncoderModel<T>::unit_parameters(int u) const {
  return unit_params_.at(static_cast<size_t>(u));
}

template <typename T>
void EncoderModel<T>::compute_position_ids(const Batch& b, std::vector<int32_t>& pos) const {
  const ModelConfig& c = this->cfg_;
  pos.resize(static_cast<size_t>(b.B) * b.T);
  for (int r = 0; r < b.B; ++r) {
    int count = 0;
    for (int t = 0; t < b.T; ++t) {
      const size_t i = static_cast<size_t>(r) * b.T + t;
      if (c.position_offset > 0) {
        // fairseq's make_positions (RoBERTa): non-pad tokens count up from pad+1, pad tokens sit at pad.
        const bool real = b.input_ids[i] != c.pad_token_id;
        count += real;
        pos[i] = real ? c.pad_token_id + count : c.pad_token_id;
      } else {
        pos[i] = t;
      }
    }
  }
}

template <typename T>
const T* EncoderModel<T>::forward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* input,
                                  ModelState& state) const {
  auto& s = static_cast<EncoderState<T>&>(state);
  const nn::Flat<T> f = this->flat_for_forward();  // forward writes no gradient
  const int N = b.B * b.T, L = num_blocks();
  s.inputs.upload(b);
  const BatchInputs& in = s.inputs;
  if (r.begin == 0) {
    compute_position_ids(b, s.position_ids.host());
    nn::embeddings_forward(embeddings_, f, in.input_ids, s.position_ids.upload(), in.token_type_ids, N, drop,
                           s.embeddings);
  } else {
    s.input.resize(static_cast<size_t>(N) * this->cfg_.hidden_size);
    kernels::copy(input, s.input.data(), s.input.size());
  }
  const T* x = s.blocks.forward(std::max(r.begin, 1) - 1, std::min(r.end - 1, L),
                                 r.begin == 0 ? s.embeddings.out.data() : s.input.data(),
                                 [&](int i, const T* x_in, nn::EncoderLayerSaved<T>& sv) {
                                   nn::encoder_layer_forward(layers_[i], f, x_in, in.attention_mask, b.B, b.T, drop,
                                                             sv, s.scratch);
                                 });
  if (!r.contains(this->head_unit())) return x;
  s.last_hidden = x;
  if (this->cfg_.task == Task::Base) return x;
  return heads_.forward(this->cfg_, f, x, b.B, b.T, drop, s.head);
}

template <typename T>
const T* EncoderModel<T>::infer(const Batch& b, ModelState& state) const {
  auto& s = static_cast<EncoderState<T>&>(state);
  const nn::Flat<T> f = this->flat_for_forward();
  const nn::DropoutCtx no_dropout{false, 0};
  const int N = b.B * b.T;
  s.inputs.upload(b);
  const BatchInputs& in = s.inputs;
  compute_position_ids(b, s.position_ids.host());
  nn::embeddings_forward(embeddings_, f, in.input_ids, s.position_ids.upload(), in.token_type_ids, N, no_dropout,
                         s.embeddings);
  // Sequence classification reads only each sequence's first position, so the last block runs
  // the other positions only as far as its keys and values (most of a shallow model's work).
  const int L = num_blocks();
  const bool first_token_head = this->cfg_.task == Task::SequenceClassification && L > 0 && !(f.tp && f.tp->split());
  // Two block slots in turn: block i reads slot (i-1)%2 and writes slot i%2.
  const T* x = s.embeddings.out.data();
  for (int i = 0; i < L; ++i) {
    nn::EncoderLayerSaved<T>& slot = s.blocks.inference_slot(i);
    if (first_token_head && i == L - 1)
      nn::encoder_layer_forward_first_token(layers_[i], f, x, in.attention_mask, b.B, b.T, slot, s.scratch);
    else
      nn::encoder_layer_forward(layers_[i], f, x, in.attention_mask, b.B, b.T, no_dropout, slot, s.scratch);
    x = slot.out.data();
  }
  s.last_hidden = x;
  if (this->cfg_.task == Task::Base) return x;
  return heads_.forward(this->cfg_, f, x, b.B, first_token_head ? 1 : b.T, no_dropout, s.head);
}

template <typename T>
LossResult EncoderModel<T>::loss(const Batch& b, ModelState& state, double norm) const {
  auto& s = static_cast<EncoderState<T>&>(state);
  return heads_.loss(this->cfg_, b, s.inputs, s.head, norm, this->tp_group());
}

template <typename T>
std::vector<HeadOutput<T>> EncoderModel<T>::head_outputs(const Batch& b, const ModelState& state) const {
  return heads_.outputs(this->cfg_, b, static_cast<const EncoderState<T>&>(state).head);
}

template <typename T>
const T* EncoderModel<T>::backward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* d_output,
                                   ModelState& state, const GradsFinalHook& grads_final) {
  auto& s = static_cast<EncoderState<T>&>(state);
  const nn::Flat<T> f = this->flat_for_backward(state);
  const int N = b.B * b.T, L = num_blocks();
  const size_t NC = static_cast<size_t>(N) * this->cfg_.hidden_size;
  s.d_hidden.resize(NC);
  s.d_hidden_next.resize(NC);
  auto final_from = [&](size_t offset) {
    if (grads_final) grads_final(offset);
  };
  if (r.contains(this->head_unit())) {
    if (this->cfg_.task == Task::Base) fail("backward needs a task head");
    heads_.backward(this->cfg_, f, s.last_hidden, b.B, b.T, drop, s.head, s.d_hidden.data());
    // The table holds embeddings, then layers in order, then pooler and head; the tied word
    // embedding (MLM decoder) sits at offset 0 and is final only after the embeddings.
    final_from(head_begin_);
  } else {
    kernels::copy(d_output, s.d_hidden.data(), NC);
  }
  for (int i = std::min(r.end - 1, L) - 1; i >= std::max(r.begin, 1) - 1; --i) {
    nn::EncoderLayerSaved<T>& sv = s.blocks.for_backward(i, [&](int k, const T* in, nn::EncoderLayerSaved<T>& w) {
      nn::encoder_layer_forward(layers_[k], f, in, s.inputs.attention_mask, b.B, b.T, drop, w, s.scratch);
    });
    nn::encoder_layer_backward(layers_[i], f, s.blocks.input(i), b.B, b.T, drop, sv, s.d_hidden.data(),
                               s.d_hidden_next.data(), s.scratch);
    std::swap(s.d_hidden, s.d_hidden_next);
    final_from(layers_[i].qkv.w);
  }
  if (r.begin > 0) return s.d_hidden.data();
  nn::embeddings_backward(embeddings_, f, s.inputs.input_ids, s.position_ids.data(), s.inputs.token_type_ids, N, drop,
                          s.embeddings, s.d_hidden.data(), s.d_misc);
  final_from(0);
  return nullptr;
}

template <typename T>
typename Model<T>::ActivationTerms EncoderModel<T>::activation_terms(int B, int T_) const {
  const ModelConfig& c = this->cfg_;
  const size_t N = static_cast<size_t>(B) * T_, C = c.hidden_size, NC = N * C;
  const size_t P = static_cast<size_t>(c.tensor_split.degree);
  size_t acts = 2 * NC + 2 * N;  // embeddings: sum, output, LayerNorm statistics
  switch (c.task) {
    case Task::SequenceClassification: acts += 3 * static_cast<size_t>(B) * C + static_cast<size_t>(B) * c.num_labels; break;
    case Task::MaskedLM: acts += 3 * NC + 2 * N + N * (c.vocab_size / P); break;
    case Task::TokenClassification: acts += N * c.num_labels; break;
    case Task::QuestionAnswering: acts += 4 * N; break;
    default: break;
  }
  return {acts, nn::EncoderLayerSaved<T>::block_saved(N, C, c.intermediate_size, B, c.num_heads, T_, P), NC,
          num_blocks()};
}

template <typename T>
size_t EncoderModel<T>::scratch_values(int B, int T_) const {
  const ModelConfig& c = this->cfg_;
  const size_t N = static_cast<size_t>(B) * T_, NC = N * c.hidden_size;
  const size_t P = static_cast<size_t>(c.tensor_split.degree);
  return nn::BlockScratch<T>::values(N, c.hidden_size, c.intermediate_size / P, 3 * c.hidden_size / P)  // blocks
         + 2 * NC + 2 * NC     // hidden-state gradients, head / embedding scratch
         + loss_values(B, T_);  // d(loss)/d(logits)
}

template <typename T>
size_t EncoderModel<T>::loss_values(int B, int T_) const {
  const ModelConfig& c = this->cfg_;
  const size_t N = static_cast<size_t>(B) * T_;
  switch (c.task) {
    case Task::SequenceClassification: return static_cast<size_t>(B) * c.num_labels;
    case Task::MaskedLM: return N * (c.vocab_size / static_cast<size_t>(c.tensor_split.degree));
    case Task::TokenClassification: return N * c.num_labels;
    case Task::QuestionAnswering: return 2 * N;
    default: return 0;
  }
}

template class EncoderModel<float>;
template class EncoderModel<double>;

}  // namespace strata
