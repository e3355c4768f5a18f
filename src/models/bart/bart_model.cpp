#include "models/bart/bart_model.h"

#include <algorithm>
#include <cmath>

#include "models/bart/bart_decoder.h"
#include "models/batch_checks.h"
#include "models/decoder_inputs.h"
#include "models/encoder_heads.h"
#include "util/error.h"

namespace strata {

namespace {
// Dropout streams: each site its own (sublayers take two consecutive streams each).
constexpr uint64_t kEncoderEmbeddingStream = 1;
constexpr uint64_t kDecoderEmbeddingStream = 2;
constexpr uint64_t kLayerStreamBase = 16;  // encoder layer i: 16 + 8i .., decoder layer i: 16 + 8(Le + i) ..
constexpr uint64_t kHeadStream = 1u << 20;
}  // namespace

template <typename T>
BartModel<T>::BartModel(const ModelConfig& config) : Model<T>(config), bart_(bart_config(config)) {
  // HF multiplies by the Python float math.sqrt(d_model), rounded to the tensor's type
  embed_scale_ = static_cast<T>(bart_.scale_embedding ? std::sqrt(static_cast<double>(config.hidden_size)) : 1.0);
  build();
  this->allocate();
}

template <typename T>
nn::AttentionSublayerSpec BartModel<T>::add_attention(const std::string& p, const std::string& ln, int heads,
                                                      bool causal, uint64_t stream) {
  const ModelConfig& c = this->cfg_;
  const int C = c.hidden_size;
  nn::AttentionSublayerSpec s{};
  // HF's BartAttention order: k_proj, v_proj, q_proj, out_proj; the first three column-parallel
  // (this rank's heads), out_proj row-parallel
  s.k = this->add_split_linear(p + ".k_proj", C, C, /*column=*/true);
  s.v = this->add_split_linear(p + ".v_proj", C, C, /*column=*/true);
  s.q = this->add_split_linear(p + ".q_proj", C, C, /*column=*/true);
  s.out = this->add_split_linear(p + ".out_proj", C, C, /*column=*/false);
  s.ln = this->add_layernorm(ln, C, c.layer_norm_eps);
  s.num_heads = heads / c.tensor_split.degree;
  s.causal = causal;
  s.attn_dropout = c.attention_dropout;
  s.dropout = c.hidden_dropout;
  s.stream = stream;
  return s;
}

template <typename T>
nn::FfnSublayerSpec BartModel<T>::add_ffn(const std::string& p, int F, uint64_t stream) {
  const ModelConfig& c = this->cfg_;
  nn::FfnSublayerSpec s{};
  s.fc1 = this->add_split_linear(p + "fc1", c.hidden_size, F, /*column=*/true);
  s.fc2 = this->add_split_linear(p + "fc2", F, c.hidden_size, /*column=*/false);
  s.ln = this->add_layernorm(p + "final_layer_norm", c.hidden_size, c.layer_norm_eps);
  s.act = c.act;
  s.act_dropout = bart_.activation_dropout;
  s.dropout = c.hidden_dropout;
  s.stream = stream;
  return s;
}

template <typename T>
void BartModel<T>::build() {
  const ModelConfig& c = this->cfg_;
  const int C = c.hidden_size, Le = bart_.encoder_layers, Ld = bart_.decoder_layers;
  check_equal_shares(c.tensor_split, c.architecture(),
                     {{"encoder_attention_heads", bart_.encoder_heads},
                      {"decoder_attention_heads", bart_.decoder_heads},
                      {"encoder_ffn_dim", bart_.encoder_ffn},
                      {"decoder_ffn_dim", bart_.decoder_ffn},
                      {"vocab_size", c.vocab_size}});
  const std::string base = c.task == Task::Base ? "" : c.base_prefix();
  size_t first_entry = 0;
  auto close_unit = [&] { unit_params_.push_back(this->entries_since(first_entry)); };
  // Positions are looked up at t + 2 (HF's offset), so the tables have 2 rows more; neither has
  // a padding row. The shared token table has pad_token_id's (no gradient, zero at init).
  const int positions = c.max_position_embeddings + 2;
  vocab_ = this->vocab_slice();
  shared_ = this->add_embedding(base + "shared", c.vocab_size, C, c.pad_token_id, Model<T>::TableSplit::Rows);
  enc_emb_.positions = this->add_embedding(base + "encoder.embed_positions", positions, C, -1);
  enc_emb_.ln = this->add_layernorm(base + "encoder.layernorm_embedding", C, c.layer_norm_eps);
  enc_emb_.stream = kEncoderEmbeddingStream;
  close_unit();
  for (int i = 0; i < Le; ++i) {
    const std::string p = base + "encoder.layers." + std::to_string(i) + ".";
    const uint64_t stream = kLayerStreamBase + 8 * static_cast<uint64_t>(i);
    BartEncoderLayerSpec l{};
    l.self_attn = add_attention(p + "self_attn", p + "self_attn_layer_norm", bart_.encoder_heads, false, stream);
    l.ffn = add_ffn(p, bart_.encoder_ffn, stream + 2);
    enc_.push_back(l);
    close_unit();
  }
  dec_emb_.positions = this->add_embedding(base + "decoder.embed_positions", positions, C, -1);
  dec_emb_.ln = this->add_layernorm(base + "decoder.layernorm_embedding", C, c.layer_norm_eps);
  dec_emb_.stream = kDecoderEmbeddingStream;
  for (int i = 0; i < Ld; ++i) {
    const std::string p = base + "decoder.layers." + std::to_string(i) + ".";
    const uint64_t stream = kLayerStreamBase + 8 * static_cast<uint64_t>(Le + i);
    BartDecoderLayerSpec l{};
    l.self_attn = add_attention(p + "self_attn", p + "self_attn_layer_norm", bart_.decoder_heads, true, stream);
    l.cross_attn =
        add_attention(p + "encoder_attn", p + "encoder_attn_layer_norm", bart_.decoder_heads, false, stream + 2);
    l.ffn = add_ffn(p, bart_.decoder_ffn, stream + 4);
    dec_.push_back(l);
    close_unit();
    if (i == 0) unit_params_.back().push_back(0);  // the decoder's embeddings read the shared table
  }
  using Init = typename Model<T>::Init;
  switch (c.task) {
    case Task::Base: break;
    case Task::Seq2SeqLM:
      final_logits_bias_ =
          this->add_split_param("final_logits_bias", {1, c.vocab_size}, /*no_decay=*/true, Init::Zero, /*split_dim=*/1);
      // HF's checkpoints hold model.shared.weight; the per-stack and lm_head names are tied to it
      this->aliases_ = {{"lm_head.weight", base + "shared.weight"},
                        {base + "encoder.embed_tokens.weight", base + "shared.weight"},
                        {base + "decoder.embed_tokens.weight", base + "shared.weight"}};
      break;
    case Task::SequenceClassification:
      classifier_.pre_dropout = c.classifier_dropout;
      classifier_.dense = this->add_linear("classification_head.dense", C, C);
      classifier_.act = kernels::Activation::Tanh;
      classifier_.dropout = c.classifier_dropout;
      classifier_.out = this->add_linear("classification_head.out_proj", C, c.num_labels);
      classifier_.stream = kHeadStream;
      break;
    default: fail(c.model_type, ": no ", task_name(c.task), " head");
  }
  if (c.task != Task::Seq2SeqLM)
    this->aliases_ = {{base + "encoder.embed_tokens.weight", base + "shared.weight"},
                      {base + "decoder.embed_tokens.weight", base + "shared.weight"}};
  close_unit();
  if (c.task == Task::Seq2SeqLM) unit_params_.back().push_back(0);  // the tied LM head
}

template <typename T>
void BartModel<T>::embed(const BartEmbeddingSpec& e, const std::vector<int32_t>& ids, int B, int T_,
                         const nn::DropoutCtx& drop, BartEmbeddingSaved<T>& s, int first_position) const {
  const int N = B * T_, C = this->cfg_.hidden_size;
  const size_t NC = static_cast<size_t>(N) * C;
  const nn::Flat<T> f = this->flat_for_forward();
  s.ids.host() = ids;
  std::vector<int32_t>& pos = s.position_ids.host();
  pos.resize(static_cast<size_t>(N));
  for (int n = 0; n < N; ++n) pos[n] = first_position + n % T_ + 2;  // HF's offset
  for (Buffer<T>* b : {&s.sum, &s.out}) b->resize(NC);
  for (Buffer<T>* b : {&s.mean, &s.rstd}) b->resize(N);
  s.sum.zero();
  nn::vocab_parallel_embedding_forward(vocab_, this->tp_group(), s.ids.upload(), f.p + shared_, s.sum.data(), N, C);
  if (embed_scale_ != T(1)) kernels::scale(s.sum.data(), NC, embed_scale_);
  kernels::embedding_forward(s.position_ids.upload(), f.p + e.positions, s.sum.data(), N, C);
  nn::layernorm_forward(e.ln, f, s.sum.data(), s.out.data(), s.mean.data(), s.rstd.data(), N);
  kernels::dropout_forward(s.out.data(), s.out.data(), NC, drop.p(this->cfg_.hidden_dropout), drop.seed, e.stream);
}

template <typename T>
void BartModel<T>::embed_backward(const BartEmbeddingSpec& e, nn::Flat<T> f, int B, int T_, const nn::DropoutCtx& drop,
                                  BartEmbeddingSaved<T>& s, T* d) const {
  const int N = B * T_, C = this->cfg_.hidden_size;
  const size_t NC = static_cast<size_t>(N) * C;
  kernels::dropout_backward(d, d, NC, drop.p(this->cfg_.hidden_dropout), drop.seed, e.stream);
  T* d_sum = s.out.data();  // the forward output is not read again
  nn::layernorm_backward(e.ln, f, s.sum.data(), s.mean.data(), s.rstd.data(), d, d_sum, N);
  kernels::embedding_backward(s.position_ids.data(), d_sum, f.g + e.positions, N, C, -1);
  if (embed_scale_ != T(1)) kernels::scale(d_sum, NC, embed_scale_);
  if (this->tp_group())
    nn::vocab_parallel_embedding_backward(vocab_, s.ids.data(), d_sum, f.g + shared_, N, C, s.local_ids,
                                          this->cfg_.pad_token_id);
  else
    kernels::embedding_backward(s.ids.data(), d_sum, f.g + shared_, N, C, this->cfg_.pad_token_id);
}

template <typename T>
const T* BartModel<T>::head_forward(const Batch& b, const nn::DropoutCtx& drop, const T* h, BartState<T>& s) const {
  const ModelConfig& c = this->cfg_;
  const nn::Flat<T> f = this->flat_for_forward();
  const int N = b.B * s.Td, C = c.hidden_size;
  s.head_input = h;
  switch (c.task) {
    case Task::Base: return h;
    case Task::Seq2SeqLM:
      lm_head_forward(h, N, s.logits);
      // Training never gathers the vocabulary-parallel logits; an inference pass (dropout off)
      // does, for the outputs evaluation reads.
      if (!drop.active) this->whole_vocabulary(s.logits.data(), N, s.gathered_logits);
      return s.logits.data();
    case Task::SequenceClassification: {
      // HF: every row must hold the same number (>= 1) of eos tokens; the decoder's state at the
      // last one is the sentence representation
      std::vector<int32_t>& pooled_rows = s.pooled_rows.host();
      pooled_rows.resize(static_cast<size_t>(b.B));
      int count0 = -1;
      for (int r = 0; r < b.B; ++r) {
        int count = 0;
        for (int t = 0; t < b.T; ++t)
          if (b.input_ids[static_cast<size_t>(r) * b.T + t] == bart_.eos_token_id) {
            ++count;
            pooled_rows[r] = r * s.Td + t;
          }
        if (count == 0) fail(c.architecture(), ": row ", r, " has no eos token (id ", bart_.eos_token_id, ")");
        if (count0 >= 0 && count != count0)
          fail(c.architecture(), ": all rows must have the same number of eos tokens (row 0 has ", count0, ", row ", r,
               " has ", count, ")");
        count0 = count;
      }
      s.pooled.resize(static_cast<size_t>(b.B) * C);
      kernels::gather_rows(h, s.pooled_rows.upload(), s.pooled.data(), b.B, C);
      nn::classifier_head_forward(classifier_, f, s.pooled.data(), b.B, 1, drop, s.classifier);
      return s.classifier.logits.data();
    }
    default: break;
  }
  fail("a ", c.architecture(), " has no task head to run");
}

template <typename T>
void BartModel<T>::lm_head_forward(const T* h, int N, Buffer<T>& logits) const {
  logits.resize(static_cast<size_t>(N) * vocab_.rows);
  const nn::LinearSpec lm{shared_, final_logits_bias_, this->cfg_.hidden_size, vocab_.rows};
  nn::linear_forward(lm, this->flat_for_forward(), h, logits.data(), N);
}

template <typename T>
size_t BartModel<T>::boundary_values(int B, int T_, int Td, int u) const {
  const size_t C = static_cast<size_t>(this->cfg_.hidden_size);
  return u <= bart_.encoder_layers ? static_cast<size_t>(B) * T_ * C : static_cast<size_t>(B) * (Td + T_) * C;
}

template <typename T>
const T* BartModel<T>::forward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* input,
                               ModelState& state) const {
  auto& s = static_cast<BartState<T>&>(state);
  s.inputs.upload(b);
  const nn::Flat<T> f = this->flat_for_forward();
  const int Le = bart_.encoder_layers, Ld = bart_.decoder_layers, B = b.B, Ts = b.T, C = this->cfg_.hidden_size;
  const int32_t* mask = s.inputs.attention_mask;
  s.Td = decoder_length(this->cfg_, b);
  const size_t NdC = static_cast<size_t>(B) * s.Td * C, NC = static_cast<size_t>(B) * Ts * C;
  if (r.begin > 0) {
    s.input.resize(this->boundary_values(b, r.begin - 1));
    kernels::copy(input, s.input.data(), s.input.size());
  }
  // the encoder's side: its embeddings (unit 0) and layers (units 1..Le)
  const T* x = s.input.data();
  if (r.begin == 0) {
    embed(enc_emb_, b.input_ids, B, Ts, drop, s.enc_emb);
    x = s.enc_emb.out.data();
  }
  x = s.enc.forward(std::max(r.begin, 1) - 1, std::min(r.end - 1, Le), x,
                    [&](int i, const T* in, nn::Seq2SeqEncoderBlockSaved<T>& sv) {
                      nn::seq2seq_encoder_block_forward<T>(enc_[i], f, in, mask, nullptr, B, Ts, drop, sv, s.scratch);
                    });
  if (r.end - 1 <= Le) return x;

  // the decoder's side: its embeddings with its first layer (unit Le+1), its layers, the head
  s.enc_out = r.begin <= Le + 1 ? x : s.input.data() + NdC;
  if (r.begin <= Le + 1) {
    const std::vector<int32_t> dec_ids = decoder_inputs(this->cfg_, b, bart_.decoder_start_token_id, &s.Td);
    embed(dec_emb_, dec_ids, B, s.Td, drop, s.dec_emb);
    x = s.dec_emb.out.data();
  }
  x = s.dec.forward(std::max(r.begin, Le + 1) - 1, std::min(r.end - 1, Le + Ld), x,
                    [&](int i, const T* in, nn::Seq2SeqDecoderBlockSaved<T>& sv) {
                      nn::seq2seq_decoder_block_forward<T>(dec_[i - Le], f, in, s.enc_out, mask, nullptr, B, s.Td, Ts,
                                                           drop, sv, s.scratch);
                    });
  if (r.contains(this->head_unit())) return head_forward(b, drop, x, s);
  return nn::join_decoder_boundary(x, s.enc_out, NdC, NC, s.output);
}

template <typename T>
const T* BartModel<T>::encode(const Batch& b, const nn::DropoutCtx& drop, BartState<T>& s) const {
  return forward(b, drop, {0, bart_.encoder_layers + 1}, nullptr, s);
}

template <typename T>
std::unique_ptr<CausalDecoder<T>> BartModel<T>::new_cached_seq2seq_decoder(const std::vector<int32_t>& source) const {
  if (this->cfg_.task != Task::Seq2SeqLM) return nullptr;
  return std::make_unique<BartDecoder<T>>(*this, source);
}

template <typename T>
const T* BartModel<T>::infer(const Batch& b, ModelState& state) const {
  auto& s = static_cast<BartState<T>&>(state);
  s.inputs.upload(b);
  const nn::Flat<T> f = this->flat_for_forward();
  const nn::DropoutCtx off{false, 0};
  const int B = b.B, Ts = b.T;
  const int32_t* mask = s.inputs.attention_mask;
  // Each stack's layers run through two of its records in turn: layer i reads slot (i-1)%2's
  // output and writes slot i%2. The encoder's last output stays in its slot for the decoder.
  embed(enc_emb_, b.input_ids, B, Ts, off, s.enc_emb);
  const T* x = s.enc_emb.out.data();
  for (int i = 0; i < static_cast<int>(enc_.size()); ++i) {
    nn::Seq2SeqEncoderBlockSaved<T>& slot = s.enc.inference_slot(i);
    nn::seq2seq_encoder_block_forward<T>(enc_[i], f, x, mask, nullptr, B, Ts, off, slot, s.scratch);
    x = slot.out.data();
  }
  s.enc_out = x;
  const std::vector<int32_t> dec_ids = decoder_inputs(this->cfg_, b, bart_.decoder_start_token_id, &s.Td);
  embed(dec_emb_, dec_ids, B, s.Td, off, s.dec_emb);
  x = s.dec_emb.out.data();
  for (int i = 0; i < static_cast<int>(dec_.size()); ++i) {
    nn::Seq2SeqDecoderBlockSaved<T>& slot = s.dec.inference_slot(i);
    nn::seq2seq_decoder_block_forward<T>(dec_[i], f, x, s.enc_out, mask, nullptr, B, s.Td, Ts, off, slot, s.scratch);
    x = slot.out.data();
  }
  return head_forward(b, off, x, s);
}

template <typename T>
LossResult BartModel<T>::loss(const Batch& b, ModelState& state, double norm) const {
  auto& s = static_cast<BartState<T>&>(state);
  const ModelConfig& c = this->cfg_;
  if (c.task == Task::Base)
    fail("a ", c.architecture(), " has no task head, so it has no loss; use a model with a task head");
  if (norm <= 0) norm = std::max(1.0, label_count(c, b));
  switch (c.task) {
    case Task::Seq2SeqLM: {
      const int N = b.B * s.Td;
      if (b.labels.size() != static_cast<size_t>(N))
        fail(c.architecture(), " loss: the batch needs labels [", b.B, " x ", s.Td, "] (the decoder's length)");
      // labels are not shifted for the loss: decoder position t predicts labels[t]
      s.dlogits.resize(static_cast<size_t>(N) * vocab_.rows);
      if (this->tp_group())
        return {nn::vocab_parallel_cross_entropy(vocab_, this->tp_group(), s.logits.data(), s.inputs.labels,
                                                 s.dlogits.data(), N, norm, s.ce),
                norm};
      return {kernels::cross_entropy(s.logits.data(), s.inputs.labels, s.dlogits.data(), N, c.vocab_size, norm), norm};
    }
    case Task::SequenceClassification:
      return sequence_classification_loss(c, b, s.inputs, s.classifier.logits.data(), s.dlogits, norm);
    default: break;
  }
  fail("a ", c.architecture(), " has no loss");
}

template <typename T>
std::vector<HeadOutput<T>> BartModel<T>::head_outputs(const Batch& b, const ModelState& state) const {
  const auto& s = static_cast<const BartState<T>&>(state);
  const ModelConfig& c = this->cfg_;
  switch (c.task) {
    case Task::Seq2SeqLM:
      return {{"logits", {b.B, s.Td, c.vocab_size}, this->tp_group() ? s.gathered_logits.data() : s.logits.data()}};
    case Task::SequenceClassification: return {{"logits", {b.B, c.num_labels}, s.classifier.logits.data()}};
    default: return {};
  }
}

template <typename T>
const T* BartModel<T>::backward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* d_output,
                                ModelState& state, const GradsFinalHook& grads_final) {
  const ModelConfig& c = this->cfg_;
  auto& s = static_cast<BartState<T>&>(state);
  const nn::Flat<T> f = this->flat_for_backward(state);
  const int Le = bart_.encoder_layers, Ld = bart_.decoder_layers;
  const int B = b.B, Ts = b.T, Td = s.Td, Nd = B * Td, C = c.hidden_size;
  const size_t NdC = static_cast<size_t>(Nd) * C, NC = static_cast<size_t>(B) * Ts * C;
  const int32_t* mask = s.inputs.attention_mask;
  const bool decoder_side = r.end - 1 > Le;
  s.d_dec.resize(NdC);
  s.d_dec_next.resize(NdC);
  s.d_enc.resize(NC);
  s.d_enc_next.resize(NC);
  if (r.contains(this->head_unit())) {
    switch (c.task) {
      case Task::Seq2SeqLM: {
        // the bias is HF's final_logits_bias buffer: no gradient
        const nn::LinearSpec lm{shared_, nn::LinearSpec::kNoBias, C, vocab_.rows};
        nn::linear_backward(lm, f, s.head_input, s.dlogits.data(), s.d_dec.data(), Nd);
        nn::tp_sum(f.tp, s.d_dec.data(), NdC);  // each rank's vocabulary columns' share
        break;
      }
      case Task::SequenceClassification: {
        s.d_pooled.resize(static_cast<size_t>(B) * C);
        nn::classifier_head_backward(classifier_, f, B, 1, drop, s.classifier, s.dlogits.data(), s.d_pooled.data());
        s.d_dec.zero();
        kernels::scatter_rows(s.d_pooled.data(), s.pooled_rows.data(), s.d_dec.data(), B, C);
        break;
      }
      case Task::Base:
        if (!d_output) fail("backward needs a task head (", c.architecture(), " has none) or d_output");
        kernels::copy(d_output, s.d_dec.data(), NdC);
        break;
      default: fail("backward needs a task head (", c.architecture(), " has none)");
    }
    s.d_enc.zero();  // the head does not read the encoder's output
  } else if (decoder_side) {
    nn::split_decoder_boundary(d_output, NdC, NC, s.d_dec.data(), s.d_enc.data());
  } else {
    kernels::copy(d_output, s.d_enc.data(), NC);
  }

  const T* d_input = nullptr;
  if (decoder_side) {
    // each decoder layer's cross-attention adds to the gradient of the encoder's output
    for (int i = std::min(r.end - 1, Le + Ld) - 1; i >= std::max(r.begin, Le + 1) - 1; --i) {
      nn::Seq2SeqDecoderBlockSaved<T>& sv =
          s.dec.for_backward(i, [&](int k, const T* in, nn::Seq2SeqDecoderBlockSaved<T>& w) {
            nn::seq2seq_decoder_block_forward<T>(dec_[k - Le], f, in, s.enc_out, mask, nullptr, B, Td, Ts, drop, w,
                                                 s.scratch);
          });
      nn::seq2seq_decoder_block_backward<T>(dec_[i - Le], f, s.dec.input(i), s.enc_out, mask, B, Td, Ts, drop, sv,
                                            s.d_dec, s.d_dec_next, s.d_enc.data(), nullptr, s.scratch);
    }
    if (r.begin > Le + 1) {
      d_input = nn::join_decoder_boundary(s.d_dec.data(), s.d_enc.data(), NdC, NC, s.d_input);
    } else {
      embed_backward(dec_emb_, f, B, Td, drop, s.dec_emb, s.d_dec.data());
    }
  }
  if (r.begin <= Le + 1) {
    for (int i = std::min(r.end - 1, Le) - 1; i >= std::max(r.begin, 1) - 1; --i) {
      nn::Seq2SeqEncoderBlockSaved<T>& sv =
          s.enc.for_backward(i, [&](int k, const T* in, nn::Seq2SeqEncoderBlockSaved<T>& w) {
            nn::seq2seq_encoder_block_forward<T>(enc_[k], f, in, mask, nullptr, B, Ts, drop, w, s.scratch);
          });
      nn::seq2seq_encoder_block_backward<T>(enc_[i], f, s.enc.input(i), mask, B, Ts, drop, sv, s.d_enc, s.d_enc_next,
                                            nullptr, s.scratch);
    }
    if (r.begin > 0) d_input = s.d_enc.data();
    else embed_backward(enc_emb_, f, B, Ts, drop, s.enc_emb, s.d_enc.data());
  }
  // Every gradient of the range's units is final now; the shared table (offset 0) only after
  // both stacks' embeddings and the tied head, which the range that starts at unit 0 ends with.
  if (grads_final) grads_final(0);
  return d_input;
}

template <typename T>
typename Model<T>::ActivationTerms BartModel<T>::activation_terms(int B, int T_) const {
  const ModelConfig& c = this->cfg_;
  const size_t N = static_cast<size_t>(B) * T_, C = c.hidden_size, P = static_cast<size_t>(c.tensor_split.degree);
  // both stacks' embeddings (LN input and output, statistics) and the head
  size_t outside = 2 * (2 * N * C + 2 * N);
  switch (c.task) {
    case Task::Seq2SeqLM: outside += N * static_cast<size_t>(vocab_.rows); break;
    case Task::SequenceClassification: outside += static_cast<size_t>(B) * (4 * C + c.num_labels); break;
    default: break;
  }
  // per layer its attention sublayers (q, k, v, ctx, LN input, statistics, output,
  // probabilities) and the FFN (pre-activation, LN input, statistics); the FFN's output is the
  // next layer's input (boundary). A tensor-parallel rank keeps its heads' q, k, v, ctx and
  // probabilities and its share of the FFN's width.
  auto attn = [&](int heads) {
    return 2 * N * C + 4 * N * C / P + 2 * N + static_cast<size_t>(B) * (heads / P) * T_ * T_;
  };
  auto ffn = [&](int F) { return N * (static_cast<size_t>(F) / P) + N * C + 2 * N; };
  // The product inputs: each attention sublayer's q, k, v and ctx (post-LN: no normalised input).
  auto with_products = [&](size_t saved, int attention_sublayers) {
    nn::BlockSaved s{saved};
    for (int i = 0; i < 4 * attention_sublayers; ++i) s.add_product_input(N * C / P);
    return s;
  };
  typename Model<T>::ActivationTerms t{outside, with_products(attn(bart_.encoder_heads) + ffn(bart_.encoder_ffn), 1),
                                       N * C, bart_.encoder_layers};
  t.decoder_saved = with_products(2 * attn(bart_.decoder_heads) + ffn(bart_.decoder_ffn), 2);
  t.decoder_boundary = N * C;
  t.decoder_blocks = bart_.decoder_layers;
  return t;
}

template <typename T>
size_t BartModel<T>::scratch_values(int B, int T_) const {
  const size_t N = static_cast<size_t>(B) * T_, C = this->cfg_.hidden_size;
  const size_t P = static_cast<size_t>(this->cfg_.tensor_split.degree);  // a rank's share of heads and FFN
  const size_t heads = static_cast<size_t>(std::max(bart_.encoder_heads, bart_.decoder_heads)) / P;
  const size_t F = static_cast<size_t>(std::max(bart_.encoder_ffn, bart_.decoder_ffn)) / P;
  return 2 * static_cast<size_t>(B) * heads * T_ * T_  // probabilities, dropped and their gradient
         + 6 * N * C + 2 * N * F                        // the sublayers' gradients
         + 4 * N * C                                    // d_dec, d_dec_next, d_enc, d_enc_next
         + 2 * N * C                                    // a decoder-side range's d(input)
         + loss_values(B, T_);
}

template <typename T>
size_t BartModel<T>::loss_values(int B, int T_) const {
  const ModelConfig& c = this->cfg_;
  switch (c.task) {
    case Task::Seq2SeqLM: return static_cast<size_t>(B) * T_ * vocab_.rows;
    case Task::SequenceClassification: return static_cast<size_t>(B) * c.num_labels;
    default: return 0;
  }
}

template class BartModel<float>;
template class BartModel<double>;

}  // namespace strata
