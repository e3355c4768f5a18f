#include "models/albert/albert_model.h"

#include <algorithm>

#include "models/batch_checks.h"
#include "util/error.h"

namespace strata {

namespace {
// Dropout stream numbering: each site of the model draws from its own stream. Layer
// *applications* are numbered, not groups, so that repeats of a shared layer draw different
// masks (as HF's dropout modules do on every call).
constexpr uint64_t kEmbeddingStream = 1;
constexpr uint64_t kLayerStreamBase = 16;  // application k uses 16 + 4k .. 16 + 4k + 2
constexpr uint64_t kHeadStream = 1u << 20;
constexpr uint64_t kSopStream = kHeadStream + 8;  // the classifier head uses two streams
}  // namespace

template <typename T>
AlbertModel<T>::AlbertModel(const ModelConfig& config) : Model<T>(config) {
  build();
  this->allocate();
}

template <typename T>
void AlbertModel<T>::build() {
  const ModelConfig& c = this->cfg_;
  const int H = c.hidden_size, E = c.embedding_size, F = c.intermediate_size, L = c.num_layers;
  const int G = c.num_hidden_groups;
  // parse_albert checks this; a ModelConfig built in code must satisfy it too.
  if (G < 1 || L % G != 0 || c.inner_group_num < 1)
    fail("albert: num_hidden_layers (", L, ") must be a multiple of num_hidden_groups (", G,
         ") and inner_group_num (", c.inner_group_num, ") >= 1");
  using Init = typename Model<T>::Init;
  const std::string base = c.task == Task::Base ? "" : c.base_prefix();
  const std::string emb = base + "embeddings.";
  size_t first_entry = 0;
  auto take_entries = [&] {
    std::vector<size_t> ids;
    for (size_t i = first_entry; i < this->table_.entries().size(); ++i) ids.push_back(i);
    first_entry = this->table_.entries().size();
    return ids;
  };

  // Unit 0: embeddings at width E, then embedding_hidden_mapping_in E -> H (no dropout after it).
  embeddings_.C = E;
  embeddings_.word = this->add_embedding(emb + "word_embeddings", c.vocab_size, E, c.pad_token_id);
  embeddings_.word_padding_idx = c.pad_token_id;
  embeddings_.position_padding_idx = -1;
  embeddings_.position = this->add_embedding(emb + "position_embeddings", c.max_position_embeddings, E, -1);
  embeddings_.token_type = this->add_embedding(emb + "token_type_embeddings", c.type_vocab_size, E, -1);
  embeddings_.ln = this->add_layernorm(emb + "LayerNorm", E, c.layer_norm_eps);
  embeddings_.dropout = c.hidden_dropout;
  embeddings_.stream = kEmbeddingStream;
  mapping_in_ = this->add_linear(base + "encoder.embedding_hidden_mapping_in", E, H);
  unit_params_.push_back(take_entries());

  // The shared groups, each stored once.
  std::vector<std::vector<nn::EncoderLayerSpec>> groups(static_cast<size_t>(G));
  std::vector<std::vector<size_t>> group_entries;
  for (int g = 0; g < G; ++g) {
    group_begin_.push_back(this->table_.total());
    for (int j = 0; j < c.inner_group_num; ++j) {
      const std::string p =
          base + "encoder.albert_layer_groups." + std::to_string(g) + ".albert_layers." + std::to_string(j) + ".";
      nn::EncoderLayerSpec s{};
      // q, k, v weights back to back, then their biases: the fused [3H, H] projection.
      s.qkv.w = this->add_param(p + "attention.query.weight", {H, H}, false, Init::Normal);
      this->add_param(p + "attention.key.weight", {H, H}, false, Init::Normal);
      this->add_param(p + "attention.value.weight", {H, H}, false, Init::Normal);
      s.qkv.b = this->add_param(p + "attention.query.bias", {H}, true, Init::Zero);
      this->add_param(p + "attention.key.bias", {H}, true, Init::Zero);
      this->add_param(p + "attention.value.bias", {H}, true, Init::Zero);
      s.qkv.in = H;
      s.qkv.out = 3 * H;
      s.attn_out = this->add_linear(p + "attention.dense", H, H);
      s.ln_attn = this->add_layernorm(p + "attention.LayerNorm", H, c.layer_norm_eps);
      s.ffn_in = this->add_linear(p + "ffn", H, F);
      s.ffn_out = this->add_linear(p + "ffn_output", F, H);
      s.ln_out = this->add_layernorm(p + "full_layer_layer_norm", H, c.layer_norm_eps);
      s.num_heads = c.num_heads;
      s.act = c.act;
      s.attn_dropout = c.attention_dropout;  // AlbertAttention.attention_dropout
      s.attn_out_dropout = c.hidden_dropout;  // AlbertAttention.output_dropout
      s.ffn_dropout = 0.0f;                   // AlbertLayer.dropout exists but forward never applies it
      groups[static_cast<size_t>(g)].push_back(s);
    }
    group_entries.push_back(take_entries());
  }
  // Units 1..L: repeat i runs group i / (L / G); its unit lists the shared entries again.
  for (int i = 0; i < L; ++i) {
    const int g = group_of_repeat(i);
    unit_params_.push_back(group_entries[static_cast<size_t>(g)]);
    for (int j = 0; j < c.inner_group_num; ++j) {
      nn::EncoderLayerSpec s = groups[static_cast<size_t>(g)][static_cast<size_t>(j)];
      s.stream = kLayerStreamBase + 4 * static_cast<uint64_t>(i * c.inner_group_num + j);
      applications_.push_back(s);
    }
  }

  head_begin_ = this->table_.total();  // pooler and task head follow the encoder
  heads_.task = c.task == Task::PreTraining ? Task::MaskedLM : c.task;
  const bool pooler_present =
      c.task == Task::Base || c.task == Task::SequenceClassification || c.task == Task::PreTraining;
  nn::LinearSpec pooler{};
  if (pooler_present) pooler = this->add_linear(base + "pooler", H, H);  // AlbertModel.pooler, tanh

  auto pooled_classifier = [&](const std::string& name, uint64_t stream) {
    nn::ClassifierHeadSpec h{};
    h.pre_dropout = 0.0f;
    h.dense = pooler;
    h.act = kernels::Activation::Tanh;
    h.dropout = c.classifier_dropout;  // classifier_dropout_prob
    h.out = this->add_linear(name, H, c.num_labels);
    h.stream = stream;
    return h;
  };

  switch (c.task) {
    case Task::SequenceClassification: heads_.classifier = pooled_classifier("classifier", kHeadStream); break;
    case Task::MaskedLM:
    case Task::PreTraining: {
      // AlbertMLMHead: decoder(LayerNorm(act(dense(h)))), dense narrowing H -> E.
      nn::MaskedLMHeadSpec& h = heads_.masked_lm;
      h.dense = this->add_linear("predictions.dense", H, E);
      h.act = c.act;
      h.ln = this->add_layernorm("predictions.LayerNorm", E, c.layer_norm_eps);
      h.decoder.w = embeddings_.word;
      h.decoder.b = this->add_param("predictions.bias", {c.vocab_size}, true, Init::Zero);
      h.decoder.in = E;
      h.decoder.out = c.vocab_size;
      this->aliases_ = {{"predictions.decoder.weight", emb + "word_embeddings.weight"},
                        {"predictions.decoder.bias", "predictions.bias"}};
      if (c.task == Task::PreTraining) {
        if (c.num_labels != 2)
          fail("albert pretraining: the sentence-order head would have num_labels = ", c.num_labels,
               " outputs; AlbertForPreTraining's loss needs 2 (set num_labels to 2 or drop id2label)");
        // AlbertSOPHead: classifier(dropout(pooled)).
        sop_heads_.task = Task::SequenceClassification;
        sop_heads_.classifier = pooled_classifier("sop_classifier.classifier", kSopStream);
      }
      break;
    }
    case Task::TokenClassification:
      heads_.token = {c.classifier_dropout, this->add_linear("classifier", H, c.num_labels), kHeadStream};
      break;
    case Task::QuestionAnswering: heads_.token = {0.0f, this->add_linear("qa_outputs", H, 2), kHeadStream}; break;
    case Task::Base: break;
    default: fail(c.model_type, ": no ", task_name(c.task), " head");
  }
  unit_params_.push_back(take_entries());
  if (c.task == Task::MaskedLM || c.task == Task::PreTraining)
    unit_params_.back().push_back(0);  // the tied decoder reads the word embeddings
}

template <typename T>
std::vector<size_t> AlbertModel<T>::unit_parameters(int u) const {
  return unit_params_.at(static_cast<size_t>(u));
}

// ALBERT's positions: 0..T-1 in every row.
template <typename T>
const int32_t* AlbertModel<T>::position_ids(const Batch& b, AlbertState<T>& s) {
  std::vector<int32_t>& pos = s.position_ids.host();
  pos.resize(static_cast<size_t>(b.B) * b.T);
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i % static_cast<size_t>(b.T));
  return s.position_ids.upload();
}

template <typename T>
const T* AlbertModel<T>::forward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* input,
                                 ModelState& state) const {
  auto& s = static_cast<AlbertState<T>&>(state);
  const ModelConfig& c = this->cfg_;
  const nn::Flat<T> f{this->params_.data(), nullptr};  // forward writes no gradient
  const int N = b.B * b.T, L = num_blocks();
  const size_t NH = static_cast<size_t>(N) * c.hidden_size;
  s.inputs.upload(b);
  const BatchInputs& in = s.inputs;
  if (r.begin == 0) {
    nn::embeddings_forward(embeddings_, f, in.input_ids, position_ids(b, s), in.token_type_ids, N, drop, s.embeddings);
    s.mapped.resize(NH);
    nn::linear_forward(mapping_in_, f, s.embeddings.out.data(), s.mapped.data(), N);
  } else {
    s.input.resize(NH);
    kernels::copy(input, s.input.data(), NH);
  }
  // The applications of r's repeats.
  const T* x = s.applications.forward((std::max(r.begin, 1) - 1) * inner(), std::min(r.end - 1, L) * inner(),
                                      r.begin == 0 ? s.mapped.data() : s.input.data(),
                                      [&](int k, const T* x_in, nn::EncoderLayerSaved<T>& sv) {
                                        nn::encoder_layer_forward(application(k), f, x_in, in.attention_mask, b.B, b.T,
                                                                  drop, sv, s.scratch);
                                      });
  if (!r.contains(this->head_unit())) return x;
  s.last_hidden = x;
  if (c.task == Task::Base) return x;
  const T* out = heads_.forward(c, f, x, b.B, b.T, drop, s.head);
  if (c.task == Task::PreTraining) sop_heads_.forward(c, f, x, b.B, b.T, drop, s.sop);
  return out;
}

template <typename T>
const T* AlbertModel<T>::infer(const Batch& b, ModelState& state) const {
  auto& s = static_cast<AlbertState<T>&>(state);
  const ModelConfig& c = this->cfg_;
  const nn::Flat<T> f{this->params_.data(), nullptr};
  const nn::DropoutCtx no_dropout{false, 0};
  const int N = b.B * b.T;
  s.inputs.upload(b);
  const BatchInputs& in = s.inputs;
  nn::embeddings_forward(embeddings_, f, in.input_ids, position_ids(b, s), in.token_type_ids, N, no_dropout,
                         s.embeddings);
  s.mapped.resize(static_cast<size_t>(N) * c.hidden_size);
  nn::linear_forward(mapping_in_, f, s.embeddings.out.data(), s.mapped.data(), N);
  // Two layer slots in turn: application k reads slot (k-1)%2 and writes slot k%2.
  const T* x = s.mapped.data();
  for (int k = 0; k < static_cast<int>(applications_.size()); ++k) {
    nn::EncoderLayerSaved<T>& slot = s.applications.inference_slot(k);
    nn::encoder_layer_forward(application(k), f, x, in.attention_mask, b.B, b.T, no_dropout, slot, s.scratch);
    x = slot.out.data();
  }
  s.last_hidden = x;
  if (c.task == Task::Base) return x;
  const T* out = heads_.forward(c, f, x, b.B, b.T, no_dropout, s.head);
  if (c.task == Task::PreTraining) sop_heads_.forward(c, f, x, b.B, b.T, no_dropout, s.sop);
  return out;
}

// Pretraining, as AlbertForPreTraining: loss = mean MLM cross entropy over labelled tokens +
// mean SOP cross entropy over labelled rows. With norm <= 0 (one batch) that is exactly HF's
// total; the returned norm is the MLM label count (label_count's per-token count).
// With a global norm (gradient accumulation: norm = the MLM labels of all micro-batches), the
// MLM term is sum / norm, so the micro-batches add up to the MLM mean of the whole batch, and
// this batch's SOP mean is weighted by its share of the MLM labels (local / norm): the
// micro-batches then add up to a label-weighted average of their SOP means, which is HF's SOP
// mean of the whole batch when every micro-batch has the same ratio of SOP rows to MLM labels
// (e.g. equal-sized micro-batches with the same masking rate). A micro-batch without MLM
// labels counts as one label, so its SOP term is not dropped altogether.
template <typename T>
LossResult AlbertModel<T>::loss(const Batch& b, ModelState& state, double norm) const {
  auto& s = static_cast<AlbertState<T>&>(state);
  const ModelConfig& c = this->cfg_;
  if (c.task != Task::PreTraining) return heads_.loss(c, b, s.inputs, s.head, norm);
  if (b.sentence_order_label.size() != static_cast<size_t>(b.B))
    fail("pretraining loss: the batch needs sentence_order_label, one 0/1 value per row (", b.B,
         " rows); AlbertForPreTraining's loss is masked-LM + sentence-order prediction");
  const LossResult mlm = heads_.loss(c, b, s.inputs, s.head, norm);
  const double local = std::max(1.0, label_count(c, b));
  const double sop_rows = std::max(
      1.0, static_cast<double>(std::count_if(b.sentence_order_label.begin(), b.sentence_order_label.end(),
                                             [](int32_t l) { return l != -100; })));
  const double sop_norm = norm > 0 ? sop_rows * norm / local : sop_rows;
  const int classes = sop_heads_.classifier.out.out;
  s.sop.dlogits.resize(static_cast<size_t>(b.B) * classes);
  const double sop = kernels::cross_entropy(s.sop.classifier.logits.data(), s.inputs.sentence_order_label,
                                            s.sop.dlogits.data(), b.B, classes, sop_norm);
  return {mlm.loss + sop, mlm.norm};
}

template <typename T>
std::vector<HeadOutput<T>> AlbertModel<T>::head_outputs(const Batch& b, const ModelState& state) const {
  const auto& s = static_cast<const AlbertState<T>&>(state);
  const ModelConfig& c = this->cfg_;
  if (c.task != Task::PreTraining) return heads_.outputs(c, b, s.head);
  return {{"prediction_logits", {b.B, b.T, heads_.masked_lm.decoder.out}, s.head.masked_lm.logits.data()},
          {"sop_logits", {b.B, sop_heads_.classifier.out.out}, s.sop.classifier.logits.data()}};
}

template <typename T>
const T* AlbertModel<T>::backward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* d_output,
                                  ModelState& state, const GradsFinalHook& grads_final) {
  auto& s = static_cast<AlbertState<T>&>(state);
  const ModelConfig& c = this->cfg_;
  const nn::Flat<T> f{this->params_.data(), this->gradients_of(state)};
  const int N = b.B * b.T, L = num_blocks();
  const size_t NH = static_cast<size_t>(N) * c.hidden_size;
  s.d_hidden.resize(NH);
  s.d_hidden_next.resize(NH);
  auto final_from = [&](size_t offset) {
    if (grads_final) grads_final(offset);
  };
  if (r.contains(this->head_unit())) {
    if (c.task == Task::Base) fail("backward needs a task head");
    heads_.backward(c, f, s.last_hidden, b.B, b.T, drop, s.head, s.d_hidden.data());
    if (c.task == Task::PreTraining) {
      s.d_sop.resize(NH);
      sop_heads_.backward(c, f, s.last_hidden, b.B, b.T, drop, s.sop, s.d_sop.data());
      kernels::add(s.d_hidden.data(), s.d_sop.data(), s.d_hidden.data(), NH);
    }
    // Table: embeddings + mapping, groups in order, then pooler and head. The tied word
    // embedding (MLM decoder) sits at offset 0 and is final only after the embeddings.
    final_from(head_begin_);
  } else {
    kernels::copy(d_output, s.d_hidden.data(), NH);
  }
  const int per_group = L / c.num_hidden_groups;
  for (int k = std::min(r.end - 1, L) * inner() - 1; k >= (std::max(r.begin, 1) - 1) * inner(); --k) {
    nn::EncoderLayerSaved<T>& sv =
        s.applications.for_backward(k, [&](int j, const T* in, nn::EncoderLayerSaved<T>& w) {
          nn::encoder_layer_forward(application(j), f, in, s.inputs.attention_mask, b.B, b.T, drop, w, s.scratch);
        });
    nn::encoder_layer_backward(application(k), f, s.applications.input(k), b.B, b.T, drop, sv, s.d_hidden.data(),
                               s.d_hidden_next.data(), s.scratch);
    std::swap(s.d_hidden, s.d_hidden_next);
    // A group's gradients are final after its last use in backward: its first repeat's first layer.
    const int repeat = k / inner();
    if (k % inner() == 0 && repeat % per_group == 0)
      final_from(group_begin_[static_cast<size_t>(group_of_repeat(repeat))]);
  }
  if (r.begin > 0) return s.d_hidden.data();
  s.d_emb.resize(static_cast<size_t>(N) * c.embedding_size);
  nn::linear_backward(mapping_in_, f, s.embeddings.out.data(), s.d_hidden.data(), s.d_emb.data(), N);
  nn::embeddings_backward(embeddings_, f, s.inputs.input_ids, s.position_ids.data(), s.inputs.token_type_ids, N, drop,
                          s.embeddings, s.d_emb.data(), s.d_misc);
  final_from(0);
  return nullptr;
}

template <typename T>
typename Model<T>::ActivationTerms AlbertModel<T>::activation_terms(int B, int T_) const {
  const ModelConfig& c = this->cfg_;
  const size_t N = static_cast<size_t>(B) * T_, H = c.hidden_size, E = c.embedding_size;
  const size_t NH = N * H, NE = N * E;
  size_t acts = 2 * NE + 2 * N  // embeddings: sum, output, LayerNorm statistics
                + NH;           // embedding_hidden_mapping_in output
  const size_t pooled = 3 * static_cast<size_t>(B) * H + static_cast<size_t>(B) * c.num_labels;
  switch (c.task) {
    case Task::SequenceClassification: acts += pooled; break;
    case Task::MaskedLM: acts += 3 * NE + 2 * N + N * c.vocab_size; break;
    case Task::PreTraining: acts += 3 * NE + 2 * N + N * c.vocab_size + pooled; break;
    case Task::TokenClassification: acts += N * c.num_labels; break;
    case Task::QuestionAnswering: acts += 4 * N; break;
    default: break;
  }
  return {acts, nn::EncoderLayerSaved<T>::block_saved(N, H, c.intermediate_size, B, c.num_heads, T_), NH,
          static_cast<int>(applications_.size())};
}

template <typename T>
size_t AlbertModel<T>::scratch_values(int B, int T_) const {
  const ModelConfig& c = this->cfg_;
  const size_t N = static_cast<size_t>(B) * T_, NH = N * c.hidden_size, NE = N * c.embedding_size;
  size_t head = 0;  // the head's backward scratch
  switch (c.task) {
    case Task::MaskedLM: head = 2 * NE; break;
    case Task::PreTraining: head = 2 * NE + NH; break;
    case Task::TokenClassification:
    case Task::QuestionAnswering: head = NH; break;
    default: break;
  }
  return nn::BlockScratch<T>::values(N, c.hidden_size, c.intermediate_size, 3 * static_cast<size_t>(c.hidden_size))
         + 2 * NH                          // hidden-state gradients
         + 2 * NE                          // d(mapping input), embeddings scratch
         + head + loss_values(B, T_);      // d(loss)/d(logits)
}

template <typename T>
size_t AlbertModel<T>::loss_values(int B, int T_) const {
  const ModelConfig& c = this->cfg_;
  const size_t N = static_cast<size_t>(B) * T_;
  switch (c.task) {
    case Task::SequenceClassification: return static_cast<size_t>(B) * c.num_labels;
    case Task::MaskedLM: return N * c.vocab_size;
    case Task::PreTraining: return N * c.vocab_size + static_cast<size_t>(B) * c.num_labels;
    case Task::TokenClassification: return N * c.num_labels;
    case Task::QuestionAnswering: return 2 * N;
    default: return 0;
  }
}

template class AlbertModel<float>;
template class AlbertModel<double>;

}  // namespace strata
