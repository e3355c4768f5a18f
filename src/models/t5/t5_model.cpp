#include "models/t5/t5_model.h"

#include <algorithm>
#include <cmath>

#include "models/batch_checks.h"
#include "models/decoder_inputs.h"
#include "models/t5/relative_position.h"
#include "models/t5/t5_decoder.h"
#include "util/error.h"

namespace strata {

namespace {
// Dropout streams: each site its own (sublayers take two consecutive streams each).
constexpr uint64_t kEncoderEmbeddingStream = 1;
constexpr uint64_t kDecoderEmbeddingStream = 2;
constexpr uint64_t kEncoderFinalStream = 3;
constexpr uint64_t kDecoderFinalStream = 4;
constexpr uint64_t kLayerStreamBase = 16;  // encoder block i: 16 + 8i .., decoder block i: 16 + 8(Le + i) ..
}  // namespace

template <typename T>
T5Model<T>::T5Model(const ModelConfig& config) : Model<T>(config), t5_(t5_config(config)) {
  dec_scale_ = static_cast<T>(std::pow(static_cast<double>(t5_.d_model), -0.5));
  build();
  this->allocate();
}

// HF's _init_weights for T5 (factor = initializer_factor): q ~ N(0, factor (d_model d_kv)^-1/2),
// k and v ~ N(0, factor d_model^-1/2), o ~ N(0, factor (num_heads d_kv)^-1/2); norms = factor.
template <typename T>
nn::AttentionSublayerSpec T5Model<T>::add_attention(const std::string& p, bool causal, uint64_t stream) {
  const int C = t5_.d_model, I = t5_.num_heads * t5_.d_kv;
  const double factor = t5_.initializer_factor;
  nn::AttentionSublayerSpec s{};
  // q, k, v column-parallel (this rank's heads), o row-parallel
  s.q = this->add_split_linear(p + ".q", C, I, true, false, factor * std::pow(static_cast<double>(C) * t5_.d_kv, -0.5));
  s.k = this->add_split_linear(p + ".k", C, I, true, false, factor * std::pow(C, -0.5));
  s.v = this->add_split_linear(p + ".v", C, I, true, false, factor * std::pow(C, -0.5));
  s.out = this->add_split_linear(p + ".o", I, C, false, false, factor * std::pow(I, -0.5));
  s.norm = nn::SublayerNorm::PreRmsNorm;
  s.num_heads = heads();
  s.causal = causal;
  s.scale_scores = false;
  s.attn_dropout = t5_.dropout_rate;
  s.dropout = t5_.dropout_rate;
  s.stream = stream;
  return s;
}

// wi / wi_0 / wi_1 ~ N(0, factor d_model^-1/2), wo ~ N(0, factor d_ff^-1/2).
template <typename T>
nn::FfnSublayerSpec T5Model<T>::add_ffn(const std::string& p, uint64_t stream) {
  const ModelConfig& c = this->cfg_;
  const int C = t5_.d_model, F = t5_.d_ff;
  const double factor = t5_.initializer_factor;
  const std::string d = p + "DenseReluDense.";
  nn::FfnSublayerSpec s{};
  s.gated = t5_.gated;
  // wi / wi_0 / wi_1 column-parallel, wo row-parallel
  s.fc1 = this->add_split_linear(d + (s.gated ? "wi_0" : "wi"), C, F, true, false, factor * std::pow(C, -0.5));
  if (s.gated) s.gate = this->add_split_linear(d + "wi_1", C, F, true, false, factor * std::pow(C, -0.5));
  s.fc2 = this->add_split_linear(d + "wo", F, C, false, false, factor * std::pow(F, -0.5));
  s.norm = nn::SublayerNorm::PreRmsNorm;
  s.rms = this->add_rmsnorm(p + "layer_norm", C, t5_.layer_norm_epsilon, factor);
  s.act = c.act;
  s.act_dropout = t5_.dropout_rate;
  s.dropout = t5_.dropout_rate;
  s.stream = stream;
  return s;
}

template <typename T>
void T5Model<T>::build() {
  const ModelConfig& c = this->cfg_;
  const int C = t5_.d_model, Le = t5_.num_layers, Ld = t5_.num_decoder_layers;
  const double factor = t5_.initializer_factor;
  check_equal_shares(c.tensor_split, c.architecture(),
                     {{"num_heads", t5_.num_heads}, {"d_ff", t5_.d_ff}, {"vocab_size", c.vocab_size}});
  size_t first_entry = 0;
  auto close_unit = [&] { unit_params_.push_back(this->entries_since(first_entry)); };
  auto last_entry = [&] { return this->table_.entries().size() - 1; };
  // No padding row: HF's nn.Embedding(vocab_size, d_model) trains pad's row like any other.
  vocab_ = this->vocab_slice();
  shared_ = this->add_embedding("shared", c.vocab_size, C, -1, Model<T>::TableSplit::Rows, factor);
  close_unit();

  auto add_stack = [&](const std::string& stack, int layers, bool decoder) {
    T5StackSpec& st = decoder ? dec_stack_ : enc_stack_;
    st.bidirectional = !decoder;
    st.embedding_stream = decoder ? kDecoderEmbeddingStream : kEncoderEmbeddingStream;
    st.final_stream = decoder ? kDecoderFinalStream : kEncoderFinalStream;
    size_t bias_entry = 0;
    for (int i = 0; i < layers; ++i) {
      const std::string p = stack + ".block." + std::to_string(i) + ".layer.";
      const uint64_t stream = kLayerStreamBase + 8 * static_cast<uint64_t>((decoder ? Le : 0) + i);
      nn::AttentionSublayerSpec self = add_attention(p + "0.SelfAttention", decoder, stream);
      if (i == 0) {  // an nn.Embedding in HF, ~ N(0, factor d_model^-1/2); a column per head
        st.relative_bias = this->add_embedding(p + "0.SelfAttention.relative_attention_bias",
                                               t5_.relative_attention_num_buckets, t5_.num_heads, -1,
                                               Model<T>::TableSplit::Columns, factor * std::pow(C, -0.5));
        bias_entry = last_entry();
      }
      self.rms = this->add_rmsnorm(p + "0.layer_norm", C, t5_.layer_norm_epsilon, factor);
      if (decoder) {
        T5DecoderBlockSpec l{};
        l.self_attn = self;
        l.cross_attn = add_attention(p + "1.EncDecAttention", false, stream + 2);
        l.cross_attn.rms = this->add_rmsnorm(p + "1.layer_norm", C, t5_.layer_norm_epsilon, factor);
        l.ffn = add_ffn(p + "2.", stream + 4);
        dec_.push_back(l);
      } else {
        T5EncoderBlockSpec l{};
        l.self_attn = self;
        l.ffn = add_ffn(p + "1.", stream + 2);
        enc_.push_back(l);
      }
      if (i == layers - 1)
        st.final_norm = this->add_rmsnorm(stack + ".final_layer_norm", C, t5_.layer_norm_epsilon, factor);
      close_unit();
      if (i > 0) unit_params_.back().push_back(bias_entry);  // every block adds the stack's bias
      if (decoder && i == 0) unit_params_.back().push_back(0);  // the decoder's embeddings read the shared table
    }
  };
  add_stack("encoder", Le, false);
  add_stack("decoder", Ld, true);

  // HF's checkpoints hold shared.weight; the per-stack names are tied to it, and so is lm_head.weight
  // when the head is tied. T5 checkpoints of older transformers carry a cross-attention
  // relative_attention_bias that no layer reads (HF ignores it on load).
  this->aliases_ = {{"encoder.embed_tokens.weight", "shared.weight"}, {"decoder.embed_tokens.weight", "shared.weight"}};
  this->ignored_on_load_ = {"decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight"};
  lm_head_ = shared_;
  switch (c.task) {
    case Task::Base: close_unit(); break;
    case Task::Seq2SeqLM:
      if (tied_lm_head()) {
        this->aliases_.push_back({"lm_head.weight", "shared.weight"});
        close_unit();
        unit_params_.back().push_back(0);
      } else {
        lm_head_ = this->add_split_linear("lm_head", C, c.vocab_size, /*column=*/true, false, factor).w;
        // A checkpoint whose head was tied to the shared table (transformers 5 ties them even for
        // an untied config it initialised itself) starts the separate head from that table.
        this->aliases_.push_back({"shared.weight", "lm_head.weight"});
        close_unit();
      }
      break;
    default: fail(c.model_type, ": no ", task_name(c.task), " head");
  }
}

template <typename T>
std::unique_ptr<ModelState> T5Model<T>::make_state(const nn::ActivationPolicy& p) const {
  if (p.checkpoint_every > 0 || p.offload)
    fail(this->cfg_.architecture(), ": gradient checkpointing and activation offloading are not implemented for "
         "T5 (it keeps every layer's saved tensors); turn them off");
  return std::make_unique<T5State<T>>();
}

template <typename T>
void T5Model<T>::embed(const T5StackSpec& st, int B, int T_, const nn::DropoutCtx& drop, T5StackSaved<T>& s,
                       int first_position) const {
  const int N = B * T_, C = t5_.d_model, NH = heads(), keys = first_position + T_;
  const size_t NC = static_cast<size_t>(N) * C;
  const nn::Flat<T> f = this->flat_for_forward();
  s.emb.resize(NC);
  s.emb.zero();
  nn::vocab_parallel_embedding_forward(vocab_, this->tp_group(), s.ids.data(), f.p + shared_, s.emb.data(), N, C);
  kernels::dropout_forward(s.emb.data(), s.emb.data(), NC, drop.p(t5_.dropout_rate), drop.seed, st.embedding_stream);
  s.buckets = relative_position_buckets(T_, keys, st.bidirectional, t5_.relative_attention_num_buckets,
                                        t5_.relative_attention_max_distance, first_position);
  s.bias.resize(static_cast<size_t>(T_) * keys * NH);
  s.bias.zero();
  kernels::embedding_forward(s.buckets.data(), f.p + st.relative_bias, s.bias.data(), T_ * keys, NH);
}

template <typename T>
void T5Model<T>::finish(const T5StackSpec& st, const T* x, int N, const nn::DropoutCtx& drop,
                        T5StackSaved<T>& s) const {
  const size_t NC = static_cast<size_t>(N) * t5_.d_model;
  s.final_rstd.resize(N);
  s.out.resize(NC);
  nn::rmsnorm_forward(st.final_norm, this->flat_for_forward(), x, s.out.data(), s.final_rstd.data(), N);
  kernels::dropout_forward(s.out.data(), s.out.data(), NC, drop.p(t5_.dropout_rate), drop.seed, st.final_stream);
}

template <typename T>
void T5Model<T>::finish_backward(const T5StackSpec& st, nn::Flat<T> f, const T* x, int N, const nn::DropoutCtx& drop,
                                 const T5StackSaved<T>& s, T* d, T* d_next) const {
  const size_t NC = static_cast<size_t>(N) * t5_.d_model;
  kernels::dropout_backward(d, d, NC, drop.p(t5_.dropout_rate), drop.seed, st.final_stream);
  nn::rmsnorm_backward(st.final_norm, f, x, s.final_rstd.data(), d, d_next, N);
}

template <typename T>
void T5Model<T>::embed_backward(const T5StackSpec& st, nn::Flat<T> f, int B, int T_, const nn::DropoutCtx& drop,
                                T5StackSaved<T>& s, T* d, const T* d_bias) const {
  const int N = B * T_, C = t5_.d_model;
  kernels::dropout_backward(d, d, static_cast<size_t>(N) * C, drop.p(t5_.dropout_rate), drop.seed,
                            st.embedding_stream);
  nn::vocab_parallel_embedding_backward(vocab_, s.ids.data(), d, f.g + shared_, N, C, s.local_ids);
  kernels::embedding_backward(s.buckets.data(), d_bias, f.g + st.relative_bias, T_ * T_, heads(), -1);
}

template <typename T>
const T* T5Model<T>::forward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* /*input*/,
                             ModelState& state) const {
  const ModelConfig& c = this->cfg_;
  if (r.begin != 0 || r.end != this->num_units())
    fail(c.architecture(), ": forward runs the whole model (units 0..", this->num_units() - 1,
         "); the decoder reads the encoder's output, which a pipeline stage boundary does not carry");
  auto& s = static_cast<T5State<T>&>(state);
  const nn::Flat<T> f = this->flat_for_forward();
  const int B = b.B, T_ = b.T;
  const int32_t* mask = b.attention_mask.data();
  const T* enc_out = encode(b, drop, s);

  s.dec.resize(dec_.size());
  s.dec_stack.ids = decoder_inputs(this->cfg_, b, t5_.decoder_start_token_id, &s.Td);
  const int Td = s.Td, Nd = B * Td;
  embed(dec_stack_, B, Td, drop, s.dec_stack);
  const T* x = s.dec_stack.emb.data();
  for (size_t i = 0; i < dec_.size(); ++i) {
    auto& sv = s.dec[i];
    // causal only: HF passes no decoder_attention_mask when it shifts the labels itself
    nn::attention_sublayer_forward<T>(dec_[i].self_attn, f, x, nullptr, nullptr, s.dec_stack.bias.data(), B, Td, Td,
                                      drop, sv.self_attn, s.scratch);
    nn::attention_sublayer_forward<T>(dec_[i].cross_attn, f, sv.self_attn.out.data(), enc_out, mask, nullptr, B, Td,
                                      T_, drop, sv.cross_attn, s.scratch);
    nn::ffn_sublayer_forward(dec_[i].ffn, f, sv.cross_attn.out.data(), Nd, drop, sv.ffn, s.scratch);
    x = sv.ffn.out.data();
  }
  finish(dec_stack_, x, Nd, drop, s.dec_stack);
  if (c.task == Task::Base) return s.dec_stack.out.data();

  const T* logits = lm_head_forward(s.dec_stack.out.data(), Nd, s.scaled, s.logits);
  // Training never gathers the vocabulary-parallel logits; an inference pass (dropout off) does,
  // for the outputs evaluation reads.
  if (!drop.active) this->whole_vocabulary(logits, Nd, s.gathered_logits);
  return logits;
}

template <typename T>
const T* T5Model<T>::lm_head_forward(const T* h, int N, Buffer<T>& scaled, Buffer<T>& logits) const {
  const int C = t5_.d_model, V = vocab_.rows;
  const size_t NC = static_cast<size_t>(N) * C;
  if (tied_lm_head()) {
    scaled.resize(NC);
    kernels::copy(h, scaled.data(), NC);
    kernels::scale(scaled.data(), NC, dec_scale_);
    h = scaled.data();
  }
  logits.resize(static_cast<size_t>(N) * V);
  nn::linear_forward(nn::LinearSpec{lm_head_, nn::LinearSpec::kNoBias, C, V}, this->flat_for_forward(), h,
                     logits.data(), N);
  return logits.data();
}

template <typename T>
const T* T5Model<T>::encode(const Batch& b, const nn::DropoutCtx& drop, T5State<T>& s) const {
  const nn::Flat<T> f = this->flat_for_forward();
  const int B = b.B, T_ = b.T, N = B * T_;
  const int32_t* mask = b.attention_mask.data();
  s.enc.resize(enc_.size());
  s.enc_stack.ids = b.input_ids;
  embed(enc_stack_, B, T_, drop, s.enc_stack);
  const T* x = s.enc_stack.emb.data();
  for (size_t i = 0; i < enc_.size(); ++i) {
    auto& sv = s.enc[i];
    nn::attention_sublayer_forward<T>(enc_[i].self_attn, f, x, nullptr, mask, s.enc_stack.bias.data(), B, T_, T_,
                                      drop, sv.self_attn, s.scratch);
    nn::ffn_sublayer_forward(enc_[i].ffn, f, sv.self_attn.out.data(), N, drop, sv.ffn, s.scratch);
    x = sv.ffn.out.data();
  }
  finish(enc_stack_, x, N, drop, s.enc_stack);
  return s.enc_stack.out.data();
}

template <typename T>
std::unique_ptr<CausalDecoder<T>> T5Model<T>::new_cached_seq2seq_decoder(const std::vector<int32_t>& source) const {
  if (this->cfg_.task != Task::Seq2SeqLM) return nullptr;
  return std::make_unique<T5Decoder<T>>(*this, source);
}

template <typename T>
const T* T5Model<T>::infer(const Batch& b, ModelState& state) const {
  // Keeps every layer's tensors (as a training forward does): no slot reuse for T5 yet.
  return forward(b, nn::DropoutCtx{false, 0}, this->all_units(), nullptr, state);
}

template <typename T>
LossResult T5Model<T>::loss(const Batch& b, ModelState& state, double norm) const {
  auto& s = static_cast<T5State<T>&>(state);
  const ModelConfig& c = this->cfg_;
  if (c.task != Task::Seq2SeqLM)
    fail("a ", c.architecture(), " has no task head, so it has no loss; use a model with a task head");
  if (norm <= 0) norm = std::max(1.0, label_count(c, b));
  const int N = b.B * s.Td;
  if (b.labels.size() != static_cast<size_t>(N))
    fail(c.architecture(), " loss: the batch needs labels [", b.B, " x ", s.Td, "] (the decoder's length)");
  // decoder position t predicts labels[t] (the decoder reads them shifted right)
  s.dlogits.resize(static_cast<size_t>(N) * vocab_.rows);
  if (this->tp_group())
    return {nn::vocab_parallel_cross_entropy(vocab_, this->tp_group(), s.logits.data(), b.labels.data(),
                                             s.dlogits.data(), N, norm, s.ce),
            norm};
  return {kernels::cross_entropy(s.logits.data(), b.labels.data(), s.dlogits.data(), N, c.vocab_size, norm), norm};
}

template <typename T>
std::vector<HeadOutput<T>> T5Model<T>::head_outputs(const Batch& b, const ModelState& state) const {
  const auto& s = static_cast<const T5State<T>&>(state);
  const ModelConfig& c = this->cfg_;
  if (c.task == Task::Seq2SeqLM)
    return {{"logits", {b.B, s.Td, c.vocab_size}, this->tp_group() ? s.gathered_logits.data() : s.logits.data()}};
  return {};
}

template <typename T>
const T* T5Model<T>::backward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* d_output,
                              ModelState& state, const GradsFinalHook& grads_final) {
  const ModelConfig& c = this->cfg_;
  const bool head_only = r.begin == this->head_unit() && r.end == this->num_units();
  if (!head_only && (r.begin != 0 || r.end != this->num_units()))
    fail(c.architecture(), ": backward runs the whole model or its head alone (no pipeline stages)");
  auto& s = static_cast<T5State<T>&>(state);
  const nn::Flat<T> f = this->flat_for_backward(state);
  const int B = b.B, T_ = b.T, N = B * T_, Td = s.Td, Nd = B * Td, C = t5_.d_model, NH = heads();
  const size_t NdC = static_cast<size_t>(Nd) * C, NC = static_cast<size_t>(N) * C;
  const int32_t* mask = b.attention_mask.data();
  s.d_dec.resize(NdC);
  s.d_dec_next.resize(NdC);
  if (c.task == Task::Seq2SeqLM) {
    const T* h = tied_lm_head() ? s.scaled.data() : s.dec_stack.out.data();
    nn::linear_backward(nn::LinearSpec{lm_head_, nn::LinearSpec::kNoBias, C, vocab_.rows}, f, h, s.dlogits.data(),
                        s.d_dec.data(), Nd);
    nn::tp_sum(f.tp, s.d_dec.data(), NdC);  // each rank's vocabulary columns' share
    if (tied_lm_head()) kernels::scale(s.d_dec.data(), NdC, dec_scale_);
  } else {
    if (!d_output) fail("backward needs a task head (", c.architecture(), " has none) or d_output");
    kernels::copy(d_output, s.d_dec.data(), NdC);
  }
  if (head_only) return s.d_dec.data();

  // decoder: final norm, then the blocks; each cross-attention adds to the gradient of the
  // encoder's output, each self-attention to the decoder's position bias
  const T* dec_last = dec_.empty() ? s.dec_stack.emb.data() : s.dec.back().ffn.out.data();
  finish_backward(dec_stack_, f, dec_last, Nd, drop, s.dec_stack, s.d_dec.data(), s.d_dec_next.data());
  std::swap(s.d_dec, s.d_dec_next);
  const T* enc_out = s.enc_stack.out.data();
  s.d_enc.resize(NC);
  s.d_enc_next.resize(NC);
  s.d_enc.zero();
  s.d_bias.resize(static_cast<size_t>(std::max(T_, Td)) * std::max(T_, Td) * NH);
  kernels::fill(s.d_bias.data(), static_cast<size_t>(Td) * Td * NH, T(0));
  for (int i = static_cast<int>(dec_.size()) - 1; i >= 0; --i) {
    auto& sv = s.dec[static_cast<size_t>(i)];
    const T* in = i == 0 ? s.dec_stack.emb.data() : s.dec[static_cast<size_t>(i) - 1].ffn.out.data();
    T* d = s.d_dec.data();
    T* d2 = s.d_dec_next.data();
    nn::ffn_sublayer_backward(dec_[i].ffn, f, sv.cross_attn.out.data(), Nd, drop, sv.ffn, d, d2, s.scratch);
    nn::attention_sublayer_backward<T>(dec_[i].cross_attn, f, sv.self_attn.out.data(), enc_out, mask, B, Td, T_, drop,
                                       sv.cross_attn, d2, d, s.d_enc.data(), nullptr, s.scratch);
    nn::attention_sublayer_backward<T>(dec_[i].self_attn, f, in, nullptr, nullptr, B, Td, Td, drop, sv.self_attn, d,
                                       d2, nullptr, s.d_bias.data(), s.scratch);
    std::swap(s.d_dec, s.d_dec_next);
  }
  embed_backward(dec_stack_, f, B, Td, drop, s.dec_stack, s.d_dec.data(), s.d_bias.data());

  const T* enc_last = enc_.empty() ? s.enc_stack.emb.data() : s.enc.back().ffn.out.data();
  finish_backward(enc_stack_, f, enc_last, N, drop, s.enc_stack, s.d_enc.data(), s.d_enc_next.data());
  std::swap(s.d_enc, s.d_enc_next);
  kernels::fill(s.d_bias.data(), static_cast<size_t>(T_) * T_ * NH, T(0));
  for (int i = static_cast<int>(enc_.size()) - 1; i >= 0; --i) {
    auto& sv = s.enc[static_cast<size_t>(i)];
    const T* in = i == 0 ? s.enc_stack.emb.data() : s.enc[static_cast<size_t>(i) - 1].ffn.out.data();
    T* d = s.d_enc.data();
    T* d2 = s.d_enc_next.data();
    nn::ffn_sublayer_backward(enc_[i].ffn, f, sv.self_attn.out.data(), N, drop, sv.ffn, d, d2, s.scratch);
    nn::attention_sublayer_backward<T>(enc_[i].self_attn, f, in, nullptr, mask, B, T_, T_, drop, sv.self_attn, d2, d,
                                       nullptr, s.d_bias.data(), s.scratch);
  }
  embed_backward(enc_stack_, f, B, T_, drop, s.enc_stack, s.d_enc.data(), s.d_bias.data());
  if (grads_final) grads_final(0);  // the shared table (offset 0) is final only after both stacks
  return nullptr;
}

// Per stack: the embeddings and the final norm's output (after dropout), its statistics, the
// position bias; the head's logits (and the tied head's scaled input). Per block the larger, a
// decoder block: two attention sublayers (normed input, q, k, v, ctx, output, statistics,
// probabilities) and the FFN (normed input, pre-activations, the gate's, output, statistics).
// The block's output is the next one's input (boundary). With T the longer of the two lengths; a
// tensor-parallel rank's share of the heads, the FFN's width and the vocabulary.
template <typename T>
typename Model<T>::ActivationTerms T5Model<T>::activation_terms(int B, int T_) const {
  const ModelConfig& c = this->cfg_;
  const size_t N = static_cast<size_t>(B) * T_, C = t5_.d_model, NH = static_cast<size_t>(heads());
  const size_t I = NH * t5_.d_kv, F = static_cast<size_t>(t5_.d_ff / c.tensor_split.degree);
  size_t outside = 2 * (2 * N * C + N + static_cast<size_t>(T_) * T_ * NH);
  if (c.task == Task::Seq2SeqLM) outside += N * static_cast<size_t>(vocab_.rows) + (tied_lm_head() ? N * C : 0);
  const size_t attn = 2 * N * C + 4 * N * I + N + static_cast<size_t>(B) * NH * T_ * T_;
  const size_t ffn = 2 * N * C + (t5_.gated ? 2 : 1) * N * F + N;
  return {outside, 2 * attn + ffn - N * C, N * C, num_blocks()};
}

template <typename T>
size_t T5Model<T>::scratch_values(int B, int T_) const {
  const size_t N = static_cast<size_t>(B) * T_, C = t5_.d_model, NH = static_cast<size_t>(heads());
  const size_t W = std::max(C, NH * t5_.d_kv), F = static_cast<size_t>(t5_.d_ff / this->cfg_.tensor_split.degree);
  return 2 * static_cast<size_t>(B) * NH * T_ * T_       // probabilities, dropped and their gradient
         + 6 * N * W + (t5_.gated ? 3 : 2) * N * F       // the sublayers' gradients
         + 4 * N * C                                     // d_dec, d_dec_next, d_enc, d_enc_next
         + static_cast<size_t>(T_) * T_ * NH             // the position bias's gradient
         + loss_values(B, T_);
}

template <typename T>
size_t T5Model<T>::loss_values(int B, int T_) const {
  const ModelConfig& c = this->cfg_;
  return c.task == Task::Seq2SeqLM ? static_cast<size_t>(B) * T_ * vocab_.rows : 0;
}

template class T5Model<float>;
template class T5Model<double>;

}  // namespace strata
