#include "nn/seq2seq_layer.h"

#include <algorithm>
#include <cmath>

namespace strata::nn {

namespace {
enum Stream : uint64_t { kProbs = 0, kOut = 1 };
enum FfnStream : uint64_t { kAct = 0, kFfnOut = 1 };

// Dropout of an activation [rows, cols] whose columns the tensor-parallel ranks share equally
// (rank r holds columns r*cols .. of rows of P*cols: its heads' probabilities, its FFN columns):
// each rank draws one process's masks for its columns. Its own backward (the op is linear).
template <typename T>
void dropout_share(const TensorGroup<T>* tp, const T* x, T* y, size_t rows, size_t cols, float p,
                   const DropoutCtx& drop, uint64_t stream) {
  const size_t parts = tp && tp->split() ? static_cast<size_t>(tp->degree) : 1;
  const size_t part = parts > 1 ? static_cast<size_t>(tp->rank) : 0;
  kernels::dropout_block(x, y, rows, cols, parts * cols, part * cols, drop.p(p), drop.seed, stream);
}

// probs = softmax(scale * q k^T + pos_bias) per (row, head), masked; ctx = dropout(probs) v.
// `pd` receives the dropped-out probabilities (the dropout mask indexes the whole
// [B, NH, Tq, Tk] array of all heads, so each head draws its own mask). I is this rank's inner
// width.
template <typename T>
void attention_core_forward(const AttentionSublayerSpec& s, const TensorGroup<T>* tp, const T* q, const T* k,
                            const T* v, const int32_t* mask, const T* pos_bias, int B, int Tq, int Tk,
                            const DropoutCtx& drop, T* probs, T* pd, T* ctx) {
  const int I = s.q.out, NH = s.num_heads, HS = I / NH;
  const T scale = score_scale<T>(s);
  const size_t block = static_cast<size_t>(Tq) * Tk;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      kernels::gemm<T>(false, true, Tq, Tk, HS, scale, q + static_cast<size_t>(b) * Tq * I + h * HS, I,
                       k + static_cast<size_t>(b) * Tk * I + h * HS, I, T(0),
                       probs + (static_cast<size_t>(b) * NH + h) * block, Tk);
  kernels::scores_softmax(probs, pos_bias, mask, B, NH, Tq, Tk, s.causal, 0);
  dropout_share(tp, probs, pd, B, NH * block, s.attn_dropout, drop, s.stream + kProbs);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      kernels::gemm<T>(false, false, Tq, HS, Tk, T(1), pd + (static_cast<size_t>(b) * NH + h) * block, Tk,
                       v + static_cast<size_t>(b) * Tk * I + h * HS, I, T(0),
                       ctx + static_cast<size_t>(b) * Tq * I + h * HS, I);
}
}  // namespace

template <typename T>
void attention_sublayer_forward(const AttentionSublayerSpec& s, Flat<T> f, const T* x, const T* kv,
                                const int32_t* kv_mask, const T* pos_bias, int B, int Tq, int Tk,
                                const DropoutCtx& drop, AttentionSublayerSaved<T>& sv, Seq2SeqScratch<T>& sc) {
  const int I = s.q.out, Nq = B * Tq, Nk = B * Tk;
  const size_t NqI = static_cast<size_t>(Nq) * I, NkI = static_cast<size_t>(Nk) * I;
  const size_t P = static_cast<size_t>(B) * s.num_heads * Tq * Tk;
  sv.q.resize(NqI);
  sv.k.resize(NkI);
  sv.v.resize(NkI);
  sv.probs.resize(P);
  sv.ctx.resize(NqI);
  sc.probs_a.resize(P);
  const T* in = attention_input(s, f, x, Nq, sv);  // the projections' input
  const T* src = kv ? kv : in;  // the keys' and values' input
  linear_forward(s.q, f, in, sv.q.data(), Nq);
  linear_forward(s.k, f, src, sv.k.data(), Nk);
  linear_forward(s.v, f, src, sv.v.data(), Nk);
  attention_core_forward(s, f.tp, sv.q.data(), sv.k.data(), sv.v.data(), kv_mask, pos_bias, B, Tq, Tk, drop,
                         sv.probs.data(), sc.probs_a.data(), sv.ctx.data());
  attention_output(s, f, x, Nq, drop, sv);
}

template <typename T>
const T* attention_input(const AttentionSublayerSpec& s, Flat<T> f, const T* x, int N, AttentionSublayerSaved<T>& sv) {
  sv.rstd.resize(static_cast<size_t>(N));
  if (s.norm != SublayerNorm::PreRmsNorm) return x;
  sv.normed.resize(static_cast<size_t>(N) * s.out.out);
  rmsnorm_forward(s.rms, f, x, sv.normed.data(), sv.rstd.data(), N);
  return sv.normed.data();
}

template <typename T>
void attention_output(const AttentionSublayerSpec& s, Flat<T> f, const T* x, int N, const DropoutCtx& drop,
                      AttentionSublayerSaved<T>& sv) {
  const size_t NC = static_cast<size_t>(N) * s.out.out;
  sv.out.resize(NC);
  if (s.norm == SublayerNorm::PreRmsNorm) {  // out = x + dropout(out_proj(ctx))
    row_parallel_linear_forward(s.out, f, sv.ctx.data(), sv.out.data(), N);
    kernels::dropout_forward(sv.out.data(), sv.out.data(), NC, drop.p(s.dropout), drop.seed, s.stream + kOut);
    kernels::add(sv.out.data(), x, sv.out.data(), NC);
    return;
  }
  sv.h.resize(NC);
  sv.mean.resize(static_cast<size_t>(N));
  row_parallel_linear_forward(s.out, f, sv.ctx.data(), sv.h.data(), N);
  kernels::dropout_forward(sv.h.data(), sv.h.data(), NC, drop.p(s.dropout), drop.seed, s.stream + kOut);
  kernels::add(sv.h.data(), x, sv.h.data(), NC);
  layernorm_forward(s.ln, f, sv.h.data(), sv.out.data(), sv.mean.data(), sv.rstd.data(), N);
}

template <typename T>
void attention_sublayer_backward(const AttentionSublayerSpec& s, Flat<T> f, const T* x, const T* kv,
                                 const int32_t* /*kv_mask: the saved probabilities carry it*/, int B, int Tq, int Tk,
                                 const DropoutCtx& drop, const AttentionSublayerSaved<T>& sv, const T* dout, T* dx,
                                 T* dkv, T* d_pos_bias, Seq2SeqScratch<T>& sc) {
  const bool pre = s.norm == SublayerNorm::PreRmsNorm;
  const int C = s.out.out, I = s.q.out, NH = s.num_heads, HS = I / NH, Nq = B * Tq, Nk = B * Tk;
  const size_t NqC = static_cast<size_t>(Nq) * C, NkC = static_cast<size_t>(Nk) * C;
  const size_t block = static_cast<size_t>(Tq) * Tk, P = static_cast<size_t>(B) * NH * block;
  const T scale = score_scale<T>(s);
  const size_t rows = static_cast<size_t>(std::max(Nq, Nk)) * std::max(C, I);
  for (Buffer<T>* b : {&sc.dq, &sc.dk, &sc.dv, &sc.dctx, &sc.d_h, &sc.t}) b->resize(rows);
  sc.probs_a.resize(P);
  sc.probs_b.resize(P);
  T* d_h = sc.d_h.data();
  T* t = sc.t.data();

  // d(out_proj's output): through the LN and the output dropout (post-LN), the dropout (pre)
  if (!pre) layernorm_backward(s.ln, f, sv.h.data(), sv.mean.data(), sv.rstd.data(), dout, d_h, Nq);
  kernels::dropout_backward(pre ? dout : d_h, t, NqC, drop.p(s.dropout), drop.seed, s.stream + kOut);
  linear_backward(s.out, f, sv.ctx.data(), t, sc.dctx.data(), Nq);

  T* pd = sc.probs_a.data();  // dropout(probs), as forward multiplied v by
  T* dp = sc.probs_b.data();
  const size_t heads_block = static_cast<size_t>(NH) * block;  // one batch row's probabilities
  dropout_share(f.tp, sv.probs.data(), pd, B, heads_block, s.attn_dropout, drop, s.stream + kProbs);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const size_t pb = (static_cast<size_t>(b) * NH + h) * block;
      const T* dctx = sc.dctx.data() + static_cast<size_t>(b) * Tq * I + h * HS;
      const T* vb = sv.v.data() + static_cast<size_t>(b) * Tk * I + h * HS;
      kernels::gemm<T>(false, true, Tq, Tk, HS, T(1), dctx, I, vb, I, T(0), dp + pb, Tk);  // d(dropped probs)
      kernels::gemm<T>(true, false, Tk, HS, Tq, T(1), pd + pb, Tk, dctx, I, T(0),
                       sc.dv.data() + static_cast<size_t>(b) * Tk * I + h * HS, I);
    }
  dropout_share(f.tp, dp, dp, B, heads_block, s.attn_dropout, drop, s.stream + kProbs);
  // softmax: d(scores) = P (dP - sum_j dP P): the position bias's gradient; times the score
  // scale, the products'
  kernels::scores_softmax_backward(sv.probs.data(), dp, d_pos_bias, B, NH, Tq, Tk, scale);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const size_t pb = (static_cast<size_t>(b) * NH + h) * block;
      const size_t qo = static_cast<size_t>(b) * Tq * I + h * HS, ko = static_cast<size_t>(b) * Tk * I + h * HS;
      kernels::gemm<T>(false, false, Tq, HS, Tk, T(1), dp + pb, Tk, sv.k.data() + ko, I, T(0), sc.dq.data() + qo, I);
      kernels::gemm<T>(true, false, Tk, HS, Tq, T(1), dp + pb, Tk, sv.q.data() + qo, I, T(0), sc.dk.data() + ko, I);
    }
  // The projections' input gradient dn: post-LN the sublayer's input x itself (dx, plus the
  // residual), pre-LN the normalised input (d_h is free there), which the norm takes back to x.
  // Under tensor parallelism each rank's heads give a part of it (and of dkv's share), summed
  // over the group (Megatron's f) before the residual and the norm, which are whole everywhere.
  const T* in = pre ? sv.normed.data() : x;
  T* dn = pre ? d_h : dx;
  linear_backward(s.q, f, in, sc.dq.data(), dn, Nq);
  const T* src = kv ? kv : in;
  T* dkv_part = sc.dq.data();  // free once q's backward has read it
  linear_backward(s.k, f, src, sc.dk.data(), t, Nk);
  linear_backward(s.v, f, src, sc.dv.data(), dkv_part, Nk);
  kernels::add(t, dkv_part, t, NkC);  // the keys' and values' part
  if (kv) {
    tp_sum(f.tp, t, NkC);
    kernels::add(dkv, t, dkv, NkC);
  } else {
    kernels::add(dn, t, dn, NqC);
  }
  tp_sum(f.tp, dn, NqC);
  if (pre) {
    rmsnorm_backward(s.rms, f, x, sv.rstd.data(), dn, dx, Nq);
    kernels::add(dx, dout, dx, NqC);  // the residual
  } else {
    kernels::add(dx, d_h, dx, NqC);  // the residual
  }
}

template <typename T>
void ffn_sublayer_forward(const FfnSublayerSpec& s, Flat<T> f, const T* x, int N, const DropoutCtx& drop,
                          FfnSublayerSaved<T>& sv, Seq2SeqScratch<T>& sc) {
  const bool pre = s.norm == SublayerNorm::PreRmsNorm;
  const int C = s.fc1.in, F = s.fc1.out;
  const size_t NC = static_cast<size_t>(N) * C, NF = static_cast<size_t>(N) * F;
  sv.pre.resize(NF);
  sv.out.resize(NC);
  sv.rstd.resize(N);
  sc.wide_a.resize(NF);
  T* a = sc.wide_a.data();
  const T* in = x;
  if (pre) {
    sv.normed.resize(NC);
    rmsnorm_forward(s.rms, f, x, sv.normed.data(), sv.rstd.data(), N);
    in = sv.normed.data();
  }
  kernels::linear_act_forward(s.act, in, f.p + s.fc1.w, s.fc1.b == LinearSpec::kNoBias ? nullptr : f.p + s.fc1.b,
                              sv.pre.data(), a, N, C, F);
  if (s.gated) {
    sv.lin.resize(NF);
    linear_forward(s.gate, f, in, sv.lin.data(), N);
    kernels::mul(a, sv.lin.data(), a, NF);
  }
  dropout_share(f.tp, a, a, N, F, s.act_dropout, drop, s.stream + kAct);
  if (pre) {  // out = x + dropout(fc2(a))
    row_parallel_linear_forward(s.fc2, f, a, sv.out.data(), N);
    kernels::dropout_forward(sv.out.data(), sv.out.data(), NC, drop.p(s.dropout), drop.seed, s.stream + kFfnOut);
    kernels::add(sv.out.data(), x, sv.out.data(), NC);
    return;
  }
  sv.h.resize(NC);
  sv.mean.resize(N);
  row_parallel_linear_forward(s.fc2, f, a, sv.h.data(), N);
  kernels::dropout_forward(sv.h.data(), sv.h.data(), NC, drop.p(s.dropout), drop.seed, s.stream + kFfnOut);
  kernels::add(sv.h.data(), x, sv.h.data(), NC);
  layernorm_forward(s.ln, f, sv.h.data(), sv.out.data(), sv.mean.data(), sv.rstd.data(), N);
}

template <typename T>
void ffn_sublayer_backward(const FfnSublayerSpec& s, Flat<T> f, const T* x, int N, const DropoutCtx& drop,
                           const FfnSublayerSaved<T>& sv, const T* dout, T* dx, Seq2SeqScratch<T>& sc) {
  const bool pre = s.norm == SublayerNorm::PreRmsNorm;
  const int C = s.fc1.in, F = s.fc1.out;
  const size_t NC = static_cast<size_t>(N) * C, NF = static_cast<size_t>(N) * F;
  for (Buffer<T>* b : {&sc.d_h, &sc.t}) b->resize(std::max(sc.d_h.size(), NC));
  sc.wide_a.resize(NF);
  sc.wide_b.resize(NF);
  if (s.gated) sc.wide_c.resize(NF);
  T* d_h = sc.d_h.data();
  T* t = sc.t.data();
  T* a = sc.wide_a.data();
  T* g = sc.wide_b.data();
  if (!pre) layernorm_backward(s.ln, f, sv.h.data(), sv.mean.data(), sv.rstd.data(), dout, d_h, N);
  kernels::dropout_backward(pre ? dout : d_h, t, NC, drop.p(s.dropout), drop.seed, s.stream + kFfnOut);
  // act(pre) and act'(pre) from one pass; fc2's weight gradient reads the dropped-out
  // activation (or gated product)
  kernels::activation_value_and_grad(s.act, sv.pre.data(), a, g, NF);
  const T* in = pre ? sv.normed.data() : x;
  T* dn = pre ? d_h : dx;  // the input gradient of fc1 (and gate): x's post-LN, the norm's output's pre-LN
  if (!s.gated) {
    dropout_share(f.tp, a, a, N, F, s.act_dropout, drop, s.stream + kAct);
    linear_backward(s.fc2, f, a, t, a, N);  // a <- d(dropped activation)
    dropout_share(f.tp, a, a, N, F, s.act_dropout, drop, s.stream + kAct);
    kernels::mul(a, g, a, NF);
    linear_backward(s.fc1, f, in, a, dn, N);
  } else {
    T* m = sc.wide_c.data();  // the product act(pre) * lin, then its gradient
    const T* lin = sv.lin.data();
    kernels::mul(a, lin, m, NF);
    dropout_share(f.tp, m, m, N, F, s.act_dropout, drop, s.stream + kAct);
    linear_backward(s.fc2, f, m, t, m, N);
    dropout_share(f.tp, m, m, N, F, s.act_dropout, drop, s.stream + kAct);
    kernels::mul(m, a, a, NF);    // a <- d(lin)
    kernels::mul(m, lin, m, NF);  // m <- d(act(pre))
    kernels::mul(m, g, m, NF);    // m <- d(pre)
    linear_backward(s.gate, f, in, a, dn, N);
    linear_backward(s.fc1, f, in, m, t, N);
    kernels::add(dn, t, dn, NC);
  }
  tp_sum(f.tp, dn, NC);  // each rank's columns' part of the input gradient (Megatron's f)
  if (!pre) {
    kernels::add(dx, d_h, dx, NC);  // the residual
    return;
  }
  rmsnorm_backward(s.rms, f, x, sv.rstd.data(), dn, dx, N);
  kernels::add(dx, dout, dx, NC);  // the residual
}

#define STRATA_SEQ2SEQ_LAYER(T)                                                                                   \
  template void attention_sublayer_forward<T>(const AttentionSublayerSpec&, Flat<T>, const T*, const T*,           \
                                              const int32_t*, const T*, int, int, int, const DropoutCtx&,          \
                                              AttentionSublayerSaved<T>&, Seq2SeqScratch<T>&);                      \
  template void attention_sublayer_backward<T>(const AttentionSublayerSpec&, Flat<T>, const T*, const T*,          \
                                               const int32_t*, int, int, int, const DropoutCtx&,                   \
                                               const AttentionSublayerSaved<T>&, const T*, T*, T*, T*,             \
                                               Seq2SeqScratch<T>&);                                                 \
  template const T* attention_input<T>(const AttentionSublayerSpec&, Flat<T>, const T*, int,                      \
                                       AttentionSublayerSaved<T>&);                                                \
  template void attention_output<T>(const AttentionSublayerSpec&, Flat<T>, const T*, int, const DropoutCtx&,      \
                                    AttentionSublayerSaved<T>&);                                                   \
  template void ffn_sublayer_forward<T>(const FfnSublayerSpec&, Flat<T>, const T*, int, const DropoutCtx&,         \
                                        FfnSublayerSaved<T>&, Seq2SeqScratch<T>&);                                  \
  template void ffn_sublayer_backward<T>(const FfnSublayerSpec&, Flat<T>, const T*, int, const DropoutCtx&,        \
                                         const FfnSublayerSaved<T>&, const T*, T*, Seq2SeqScratch<T>&);
STRATA_SEQ2SEQ_LAYER(float)
STRATA_SEQ2SEQ_LAYER(double)
#undef STRATA_SEQ2SEQ_LAYER

}  // namespace strata::nn
