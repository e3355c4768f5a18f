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
void T5Model<T>::embed(const T5StackSpec& st, int B, int T_, const nn::DropoutCtx& drop, T5StackSaved<T>& s) const {
  const int N = B * T_, C = t5_.d_model;
  const size_t NC = static_cast<size_t>(N) * C;
  s.emb.resize(NC);
  s.emb.zero();
  nn::vocab_parallel_embedding_forward(vocab_, this->tp_group(), s.ids.upload(), this->params_.data() + shared_,
                                       s.emb.data(), N, C);
  kernels::dropout_forward(s.emb.data(), s.emb.data(), NC, drop.p(t5_.dropout_rate), drop.seed, st.embedding_stream);
}

template <typename T>
void T5Model<T>::position_bias(const T5StackSpec& st, int T_, T5StackSaved<T>& s, int first_position) const {
  const int NH = heads(), keys = first_position + T_;
  s.buckets.host() = relative_position_buckets(T_, keys, st.bidirectional, t5_.relative_attention_num_buckets,
                                               t5_.relative_attention_max_distance, first_position);
  s.bias.resize(static_cast<size_t>(T_) * keys * NH);
  s.bias.zero();
  kernels::embedding_forward(s.buckets.upload(), this->params_.data() + st.relative_bias, s.bias.data(), T_ * keys, NH);
}

template <typename T>
void T5Model<T>::finish(const T5StackSpec& st, const T* x, int N, const nn::DropoutCtx& drop,
                        T5StackSaved<T>& s) const {
  const size_t NC = static_cast<size_t>(N) * t5_.d_model;
  s.last = x;
  s.final_rstd.resize(N);
  s.out.resize(NC);
  nn::rmsnorm_forward(st.final_norm, this->flat_for_forward(), x, s.out.data(), s.final_rstd.data(), N);
  kernels::dropout_forward(s.out.data(), s.out.data(), NC, drop.p(t5_.dropout_rate), drop.seed, st.final_stream);
}

template <typename T>
const T* T5Model<T>::head_forward(const T* h, int Nd, const nn::DropoutCtx& drop, T5State<T>& s) const {
  s.head_input = h;
  if (this->cfg_.task == Task::Base) return h;
  const T* logits = lm_head_forward(h, Nd, s.scaled, s.logits);
  // Training never gathers the vocabulary-parallel logits; an inference pass does, for the
  // outputs evaluation reads.
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
  return forward(b, drop, {0, t5_.num_layers + 1}, nullptr, s);
}

template <typename T>
std::unique_ptr<CausalDecoder<T>> T5Model<T>::new_cached_seq2seq_decoder(const std::vector<int32_t>& source) const {
  if (this->cfg_.task != Task::Seq2SeqLM) return nullptr;
  return std::make_unique<T5Decoder<T>>(*this, source);
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
                                T5StackSaved<T>& s, T* d) const {
  const int N = B * T_, C = t5_.d_model;
  kernels::dropout_backward(d, d, static_cast<size_t>(N) * C, drop.p(t5_.dropout_rate), drop.seed,
                            st.embedding_stream);
  if (this->tp_group())
    nn::vocab_parallel_embedding_backward(vocab_, s.ids.data(), d, f.g + shared_, N, C, s.local_ids);
  else
    kernels::embedding_backward(s.ids.data(), d, f.g + shared_, N, C, -1);
}

template <typename T>
void T5Model<T>::position_bias_backward(const T5StackSpec& st, nn::Flat<T> f, int T_, const T5StackSaved<T>& s,
                                        const T* d_bias) const {
  kernels::embedding_backward(s.buckets.data(), d_bias, f.g + st.relative_bias, T_ * T_, heads(), -1);
}

template <typename T>
size_t T5Model<T>::boundary_values(int B, int T_, int Td, int u) const {
  const size_t C = static_cast<size_t>(t5_.d_model);
  return u <= t5_.num_layers ? static_cast<size_t>(B) * T_ * C : static_cast<size_t>(B) * (Td + T_) * C;
}

template <typename T>
const T* T5Model<T>::forward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* input,
                             ModelState& state) const {
  auto& s = static_cast<T5State<T>&>(state);
  s.inputs.upload(b);
  const nn::Flat<T> f = this->flat_for_forward();
  const int Le = t5_.num_layers, Ld = t5_.num_decoder_layers, B = b.B, Ts = b.T, C = t5_.d_model;
  const int32_t* mask = s.inputs.attention_mask;
  s.Td = decoder_length(this->cfg_, b);
  const int Td = s.Td;
  const size_t NdC = static_cast<size_t>(B) * Td * C, NC = static_cast<size_t>(B) * Ts * C;
  if (r.begin > 0) {
    s.input.resize(this->boundary_values(b, r.begin - 1));
    kernels::copy(input, s.input.data(), s.input.size());
  }
  // the encoder's side: the embeddings (unit 0), the blocks (units 1..Le), final_layer_norm (with unit Le)
  const T* x = s.input.data();
  if (r.begin == 0) {
    s.enc_stack.ids.host() = b.input_ids;
    embed(enc_stack_, B, Ts, drop, s.enc_stack);
    x = s.enc_stack.emb.data();
  }
  const int enc_first = std::max(r.begin, 1) - 1, enc_end = std::min(r.end - 1, Le);
  if (enc_first < enc_end) position_bias(enc_stack_, Ts, s.enc_stack);
  x = s.enc.forward(enc_first, enc_end, x, [&](int i, const T* in, nn::Seq2SeqEncoderBlockSaved<T>& sv) {
    nn::seq2seq_encoder_block_forward<T>(enc_[i], f, in, mask, s.enc_stack.bias.data(), B, Ts, drop, sv, s.scratch);
  });
  if (r.contains(Le)) {
    finish(enc_stack_, x, B * Ts, drop, s.enc_stack);
    x = s.enc_stack.out.data();
  }
  if (r.end - 1 <= Le) return x;

  // the decoder's side: its embeddings with its first block (unit Le+1), its blocks,
  // final_layer_norm (with unit Le+Ld), the head
  s.enc_out = r.begin <= Le + 1 ? x : s.input.data() + NdC;
  if (r.begin <= Le + 1) {
    s.dec_stack.ids.host() = decoder_inputs(this->cfg_, b, t5_.decoder_start_token_id, &s.Td);
    embed(dec_stack_, B, Td, drop, s.dec_stack);
    x = s.dec_stack.emb.data();
  }
  const int dec_first = std::max(r.begin, Le + 1) - 1, dec_end = std::min(r.end - 1, Le + Ld);
  if (dec_first < dec_end) position_bias(dec_stack_, Td, s.dec_stack);
  x = s.dec.forward(dec_first, dec_end, x, [&](int i, const T* in, nn::Seq2SeqDecoderBlockSaved<T>& sv) {
    nn::seq2seq_decoder_block_forward<T>(dec_[i - Le], f, in, s.enc_out, mask, s.dec_stack.bias.data(), B, Td, Ts, drop,
                                         sv, s.scratch);
  });
  if (r.contains(Le + Ld)) {
    finish(dec_stack_, x, B * Td, drop, s.dec_stack);
    x = s.dec_stack.out.data();
  }
  if (r.contains(this->head_unit())) return head_forward(x, B * Td, drop, s);
  return nn::join_decoder_boundary(x, s.enc_out, NdC, NC, s.output);
}

template <typename T>
const T* T5Model<T>::infer(const Batch& b, ModelState& state) const {
  auto& s = static_cast<T5State<T>&>(state);
  s.inputs.upload(b);
  const nn::Flat<T> f = this->flat_for_forward();
  const nn::DropoutCtx off{false, 0};
  const int B = b.B, Ts = b.T;
  const int32_t* mask = s.inputs.attention_mask;
  // Each stack's blocks run through two of its records in turn (block i reads slot (i-1)%2's
  // output and writes slot i%2); the stack's output is its final norm's.
  s.enc_stack.ids.host() = b.input_ids;
  embed(enc_stack_, B, Ts, off, s.enc_stack);
  position_bias(enc_stack_, Ts, s.enc_stack);
  const T* x = s.enc_stack.emb.data();
  for (int i = 0; i < static_cast<int>(enc_.size()); ++i) {
    nn::Seq2SeqEncoderBlockSaved<T>& slot = s.enc.inference_slot(i);
    nn::seq2seq_encoder_block_forward<T>(enc_[i], f, x, mask, s.enc_stack.bias.data(), B, Ts, off, slot, s.scratch);
    x = slot.out.data();
  }
  finish(enc_stack_, x, B * Ts, off, s.enc_stack);
  s.enc_out = s.enc_stack.out.data();
  s.dec_stack.ids.host() = decoder_inputs(this->cfg_, b, t5_.decoder_start_token_id, &s.Td);
  const int Td = s.Td;
  embed(dec_stack_, B, Td, off, s.dec_stack);
  position_bias(dec_stack_, Td, s.dec_stack);
  x = s.dec_stack.emb.data();
  for (int i = 0; i < static_cast<int>(dec_.size()); ++i) {
    nn::Seq2SeqDecoderBlockSaved<T>& slot = s.dec.inference_slot(i);
    nn::seq2seq_decoder_block_forward<T>(dec_[i], f, x, s.enc_out, mask, s.dec_stack.bias.data(), B, Td, Ts, off, slot,
                                         s.scratch);
    x = slot.out.data();
  }
  finish(dec_stack_, x, B * Td, off, s.dec_stack);
  return head_forward(s.dec_stack.out.data(), B * Td, off, s);
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
    return {nn::vocab_parallel_cross_entropy(vocab_, this->tp_group(), s.logits.data(), s.inputs.labels,
                                             s.dlogits.data(), N, norm, s.ce),
            norm};
  return {kernels::cross_entropy(s.logits.data(), s.inputs.labels, s.dlogits.data(), N, c.vocab_size, norm), norm};
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
  auto& s = static_cast<T5State<T>&>(state);
  const nn::Flat<T> f = this->flat_for_backward(state);
  const int Le = t5_.num_layers, Ld = t5_.num_decoder_layers;
  const int B = b.B, Ts = b.T, Td = s.Td, Nd = B * Td, C = t5_.d_model, NH = heads();
  const size_t NdC = static_cast<size_t>(Nd) * C, NC = static_cast<size_t>(B) * Ts * C;
  const int32_t* mask = s.inputs.attention_mask;
  const bool decoder_side = r.end - 1 > Le;
  s.d_dec.resize(NdC);
  s.d_dec_next.resize(NdC);
  s.d_enc.resize(NC);
  s.d_enc_next.resize(NC);
  s.d_bias.resize(static_cast<size_t>(std::max(Ts, Td)) * std::max(Ts, Td) * NH);
  if (r.contains(this->head_unit())) {
    if (c.task == Task::Seq2SeqLM) {
      const T* h = tied_lm_head() ? s.scaled.data() : s.head_input;
      nn::linear_backward(nn::LinearSpec{lm_head_, nn::LinearSpec::kNoBias, C, vocab_.rows}, f, h, s.dlogits.data(),
                          s.d_dec.data(), Nd);
      nn::tp_sum(f.tp, s.d_dec.data(), NdC);  // each rank's vocabulary columns' share
      if (tied_lm_head()) kernels::scale(s.d_dec.data(), NdC, dec_scale_);
    } else {
      if (!d_output) fail("backward needs a task head (", c.architecture(), " has none) or d_output");
      kernels::copy(d_output, s.d_dec.data(), NdC);
    }
    s.d_enc.zero();  // the head does not read the encoder's output
  } else if (decoder_side) {
    nn::split_decoder_boundary(d_output, NdC, NC, s.d_dec.data(), s.d_enc.data());
  } else {
    kernels::copy(d_output, s.d_enc.data(), NC);
  }

  const T* d_input = nullptr;
  if (decoder_side) {
    if (r.contains(Le + Ld)) {
      finish_backward(dec_stack_, f, s.dec_stack.last, Nd, drop, s.dec_stack, s.d_dec.data(), s.d_dec_next.data());
      std::swap(s.d_dec, s.d_dec_next);
    }
    // each cross-attention adds to the gradient of the encoder's output
    for (int i = std::min(r.end - 1, Le + Ld) - 1; i >= std::max(r.begin, Le + 1) - 1; --i) {
      nn::Seq2SeqDecoderBlockSaved<T>& sv =
          s.dec.for_backward(i, [&](int k, const T* in, nn::Seq2SeqDecoderBlockSaved<T>& w) {
            nn::seq2seq_decoder_block_forward<T>(dec_[k - Le], f, in, s.enc_out, mask, s.dec_stack.bias.data(), B, Td,
                                                 Ts, drop, w, s.scratch);
          });
      kernels::fill(s.d_bias.data(), static_cast<size_t>(Td) * Td * NH, T(0));
      nn::seq2seq_decoder_block_backward<T>(dec_[i - Le], f, s.dec.input(i), s.enc_out, mask, B, Td, Ts, drop, sv,
                                            s.d_dec, s.d_dec_next, s.d_enc.data(), s.d_bias.data(), s.scratch);
      position_bias_backward(dec_stack_, f, Td, s.dec_stack, s.d_bias.data());
    }
    if (r.begin > Le + 1) {
      d_input = nn::join_decoder_boundary(s.d_dec.data(), s.d_enc.data(), NdC, NC, s.d_input);
    } else {
      embed_backward(dec_stack_, f, B, Td, drop, s.dec_stack, s.d_dec.data());
    }
  }
  if (r.begin <= Le + 1) {
    if (r.contains(Le)) {
      finish_backward(enc_stack_, f, s.enc_stack.last, B * Ts, drop, s.enc_stack, s.d_enc.data(),
                      s.d_enc_next.data());
      std::swap(s.d_enc, s.d_enc_next);
    }
    for (int i = std::min(r.end - 1, Le) - 1; i >= std::max(r.begin, 1) - 1; --i) {
      nn::Seq2SeqEncoderBlockSaved<T>& sv =
          s.enc.for_backward(i, [&](int k, const T* in, nn::Seq2SeqEncoderBlockSaved<T>& w) {
            nn::seq2seq_encoder_block_forward<T>(enc_[k], f, in, mask, s.enc_stack.bias.data(), B, Ts, drop, w,
                                                 s.scratch);
          });
      kernels::fill(s.d_bias.data(), static_cast<size_t>(Ts) * Ts * NH, T(0));
      nn::seq2seq_encoder_block_backward<T>(enc_[i], f, s.enc.input(i), mask, B, Ts, drop, sv, s.d_enc, s.d_enc_next,
                                            s.d_bias.data(), s.scratch);
      position_bias_backward(enc_stack_, f, Ts, s.enc_stack, s.d_bias.data());
    }
    if (r.begin > 0) d_input = s.d_enc.data();
    else embed_backward(enc_stack_, f, B, Ts, drop, s.enc_stack, s.d_enc.data());
  }
  // Every gradient of the range's units is final now; the shared table (offset 0) only after
  // both stacks' embeddings and the tied head, which the range that starts at unit 0 ends with.
  if (grads_final) grads_final(0);
  return d_input;
}

// Per stack: the embeddings and the final norm's output (after dropout), its statistics, the
// position bias; the head's logits (and the tied head's scaled input). Per block its attention
// sublayers (normed input, q, k, v, ctx, output, statistics, probabilities) and the FFN (normed
// input, pre-activations, the gate's, statistics); the FFN's output is the next block's input
// (boundary). With T the longer of the two lengths; a tensor-parallel rank's share of the heads,
// the FFN's width and the vocabulary.
template <typename T>
typename Model<T>::ActivationTerms T5Model<T>::activation_terms(int B, int T_) const {
  const ModelConfig& c = this->cfg_;
  const size_t N = static_cast<size_t>(B) * T_, C = t5_.d_model, NH = static_cast<size_t>(heads());
  const size_t I = NH * t5_.d_kv, F = static_cast<size_t>(t5_.d_ff / c.tensor_split.degree);
  size_t outside = 2 * (2 * N * C + N + static_cast<size_t>(T_) * T_ * NH);
  if (c.task == Task::Seq2SeqLM) outside += N * static_cast<size_t>(vocab_.rows) + (tied_lm_head() ? N * C : 0);
  const size_t attn = 2 * N * C + 4 * N * I + N + static_cast<size_t>(B) * NH * T_ * T_;
  const size_t ffn = N * C + (t5_.gated ? 2 : 1) * N * F + N;
  // The product inputs: each attention sublayer's normalised input, q, k, v and ctx, and the
  // FFN's normalised input.
  auto with_products = [&](size_t saved, int attention_sublayers) {
    nn::BlockSaved s{saved};
    for (int i = 0; i < attention_sublayers; ++i) {
      s.add_product_input(N * C);
      for (int j = 0; j < 4; ++j) s.add_product_input(N * I);
    }
    s.add_product_input(N * C);
    return s;
  };
  typename Model<T>::ActivationTerms t{outside, with_products(attn + ffn, 1), N * C, t5_.num_layers};
  t.decoder_saved = with_products(2 * attn + ffn, 2);
  t.decoder_boundary = N * C;
  t.decoder_blocks = t5_.num_decoder_layers;
  return t;
}

template <typename T>
size_t T5Model<T>::scratch_values(int B, int T_) const {
  const size_t N = static_cast<size_t>(B) * T_, C = t5_.d_model, NH = static_cast<size_t>(heads());
  const size_t W = std::max(C, NH * t5_.d_kv), F = static_cast<size_t>(t5_.d_ff / this->cfg_.tensor_split.degree);
  return 2 * static_cast<size_t>(B) * NH * T_ * T_       // probabilities, dropped and their gradient
         + 6 * N * W + (t5_.gated ? 3 : 2) * N * F       // the sublayers' gradients
         + 4 * N * C                                     // d_dec, d_dec_next, d_enc, d_enc_next
         + 2 * N * C                                     // a decoder-side range's d(input)
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
