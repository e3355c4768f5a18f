#include "nn/seq2seq_layer.h"

#include <algorithm>
#include <cmath>

namespace strata::nn {

namespace {
enum Stream : uint64_t { kProbs = 0, kOut = 1 };
enum FfnStream : uint64_t { kAct = 0, kFfnOut = 1 };

// probs = softmax(scale * q k^T) per (row, head), masked; ctx = dropout(probs) v. `pd` receives
// the dropped-out probabilities (the dropout mask indexes the whole [B, NH, Tq, Tk] array, so
// each head draws its own mask).
template <typename T>
void attention_core_forward(const AttentionSublayerSpec& s, const T* q, const T* k, const T* v, const int32_t* mask,
                            int B, int Tq, int Tk, const DropoutCtx& drop, T* probs, T* pd, T* ctx) {
  const int C = s.q.out, NH = s.num_heads, HS = C / NH;
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(HS)));
  const size_t block = static_cast<size_t>(Tq) * Tk;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      T* S = probs + (static_cast<size_t>(b) * NH + h) * block;
      kernels::gemm<T>(false, true, Tq, Tk, HS, scale, q + static_cast<size_t>(b) * Tq * C + h * HS, C,
                       k + static_cast<size_t>(b) * Tk * C + h * HS, C, T(0), S, Tk);
      for (int i = 0; i < Tq; ++i) {
        T* row = S + static_cast<size_t>(i) * Tk;
        auto valid = [&](int j) {
          return (!mask || mask[static_cast<size_t>(b) * Tk + j] != 0) && (!s.causal || j <= i);
        };
        double mx = -INFINITY;
        for (int j = 0; j < Tk; ++j)
          if (valid(j)) mx = std::max(mx, static_cast<double>(row[j]));
        if (mx == -INFINITY) {  // no key to attend: uniform, as an all-equal additive mask gives
          for (int j = 0; j < Tk; ++j) row[j] = static_cast<T>(1.0 / Tk);
          continue;
        }
        double sum = 0;
        for (int j = 0; j < Tk; ++j) {
          const double e = valid(j) ? std::exp(static_cast<double>(row[j]) - mx) : 0.0;
          row[j] = static_cast<T>(e);
          sum += e;
        }
        for (int j = 0; j < Tk; ++j) row[j] = static_cast<T>(row[j] / sum);
      }
    }
  const size_t n = static_cast<size_t>(B) * NH * block;
  kernels::dropout_forward(probs, pd, n, drop.p(s.attn_dropout), drop.seed, s.stream + kProbs);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      kernels::gemm<T>(false, false, Tq, HS, Tk, T(1), pd + (static_cast<size_t>(b) * NH + h) * block, Tk,
                       v + static_cast<size_t>(b) * Tk * C + h * HS, C, T(0),
                       ctx + static_cast<size_t>(b) * Tq * C + h * HS, C);
}
}  // namespace

template <typename T>
void attention_sublayer_forward(const AttentionSublayerSpec& s, Flat<T> f, const T* x, const T* kv,
                                const int32_t* kv_mask, int B, int Tq, int Tk, const DropoutCtx& drop,
                                AttentionSublayerSaved<T>& sv, Seq2SeqScratch<T>& sc) {
  const int C = s.q.out, Nq = B * Tq, Nk = B * Tk;
  const size_t NqC = static_cast<size_t>(Nq) * C, NkC = static_cast<size_t>(Nk) * C;
  const size_t P = static_cast<size_t>(B) * s.num_heads * Tq * Tk;
  sv.q.resize(NqC);
  sv.k.resize(NkC);
  sv.v.resize(NkC);
  sv.probs.resize(P);
  sv.ctx.resize(NqC);
  for (Buffer<T>* b : {&sv.h, &sv.out}) b->resize(NqC);
  for (Buffer<T>* b : {&sv.mean, &sv.rstd}) b->resize(Nq);
  sc.probs_a.resize(P);
  linear_forward(s.q, f, x, sv.q.data(), Nq);
  linear_forward(s.k, f, kv, sv.k.data(), Nk);
  linear_forward(s.v, f, kv, sv.v.data(), Nk);
  attention_core_forward(s, sv.q.data(), sv.k.data(), sv.v.data(), kv_mask, B, Tq, Tk, drop, sv.probs.data(),
                         sc.probs_a.data(), sv.ctx.data());
  linear_forward(s.out, f, sv.ctx.data(), sv.h.data(), Nq);
  kernels::dropout_forward(sv.h.data(), sv.h.data(), NqC, drop.p(s.dropout), drop.seed, s.stream + kOut);
  kernels::add(sv.h.data(), x, sv.h.data(), NqC);
  layernorm_forward(s.ln, f, sv.h.data(), sv.out.data(), sv.mean.data(), sv.rstd.data(), Nq);
}

template <typename T>
void attention_sublayer_backward(const AttentionSublayerSpec& s, Flat<T> f, const T* x, const T* kv,
                                 const int32_t* /*kv_mask: the saved probabilities carry it*/, int B, int Tq, int Tk,
                                 const DropoutCtx& drop, const AttentionSublayerSaved<T>& sv, const T* dout, T* dx,
                                 T* dkv, Seq2SeqScratch<T>& sc) {
  const int C = s.q.out, NH = s.num_heads, HS = C / NH, Nq = B * Tq, Nk = B * Tk;
  const size_t NqC = static_cast<size_t>(Nq) * C, NkC = static_cast<size_t>(Nk) * C;
  const size_t block = static_cast<size_t>(Tq) * Tk, P = static_cast<size_t>(B) * NH * block;
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(HS)));
  const size_t rows = static_cast<size_t>(std::max(Nq, Nk)) * C;
  for (Buffer<T>* b : {&sc.dq, &sc.dk, &sc.dv, &sc.dctx, &sc.d_h, &sc.t}) b->resize(rows);
  sc.probs_a.resize(P);
  sc.probs_b.resize(P);
  T* d_h = sc.d_h.data();
  T* t = sc.t.data();

  layernorm_backward(s.ln, f, sv.h.data(), sv.mean.data(), sv.rstd.data(), dout, d_h, Nq);
  kernels::dropout_backward(d_h, t, NqC, drop.p(s.dropout), drop.seed, s.stream + kOut);
  linear_backward(s.out, f, sv.ctx.data(), t, sc.dctx.data(), Nq);

  T* pd = sc.probs_a.data();  // dropout(probs), as forward multiplied v by
  T* dp = sc.probs_b.data();
  kernels::dropout_forward(sv.probs.data(), pd, P, drop.p(s.attn_dropout), drop.seed, s.stream + kProbs);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const size_t pb = (static_cast<size_t>(b) * NH + h) * block;
      const T* dctx = sc.dctx.data() + static_cast<size_t>(b) * Tq * C + h * HS;
      const T* vb = sv.v.data() + static_cast<size_t>(b) * Tk * C + h * HS;
      kernels::gemm<T>(false, true, Tq, Tk, HS, T(1), dctx, C, vb, C, T(0), dp + pb, Tk);  // d(dropped probs)
      kernels::gemm<T>(true, false, Tk, HS, Tq, T(1), pd + pb, Tk, dctx, C, T(0),
                       sc.dv.data() + static_cast<size_t>(b) * Tk * C + h * HS, C);
    }
  kernels::dropout_backward(dp, dp, P, drop.p(s.attn_dropout), drop.seed, s.stream + kProbs);
  // softmax: dS = P (dP - sum_j dP P), times the score scale
  const T* pr = sv.probs.data();
  for (size_t r = 0; r < P / Tk; ++r) {
    const T* p = pr + r * Tk;
    T* g = dp + r * Tk;
    double dot = 0;
    for (int j = 0; j < Tk; ++j) dot += static_cast<double>(g[j]) * p[j];
    for (int j = 0; j < Tk; ++j) g[j] = static_cast<T>(p[j] * (g[j] - dot)) * scale;
  }
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const size_t pb = (static_cast<size_t>(b) * NH + h) * block;
      const size_t qo = static_cast<size_t>(b) * Tq * C + h * HS, ko = static_cast<size_t>(b) * Tk * C + h * HS;
      kernels::gemm<T>(false, false, Tq, HS, Tk, T(1), dp + pb, Tk, sv.k.data() + ko, C, T(0), sc.dq.data() + qo, C);
      kernels::gemm<T>(true, false, Tk, HS, Tq, T(1), dp + pb, Tk, sv.q.data() + qo, C, T(0), sc.dk.data() + ko, C);
    }
  linear_backward(s.q, f, x, sc.dq.data(), dx, Nq);
  kernels::add(dx, d_h, dx, NqC);  // the residual
  linear_backward(s.k, f, kv, sc.dk.data(), t, Nk);
  kernels::add(dkv, t, dkv, NkC);
  linear_backward(s.v, f, kv, sc.dv.data(), t, Nk);
  kernels::add(dkv, t, dkv, NkC);
}

template <typename T>
void ffn_sublayer_forward(const FfnSublayerSpec& s, Flat<T> f, const T* x, int N, const DropoutCtx& drop,
                          FfnSublayerSaved<T>& sv, Seq2SeqScratch<T>& sc) {
  const int C = s.fc1.in, F = s.fc1.out;
  const size_t NC = static_cast<size_t>(N) * C, NF = static_cast<size_t>(N) * F;
  sv.pre.resize(NF);
  for (Buffer<T>* b : {&sv.h, &sv.out}) b->resize(NC);
  for (Buffer<T>* b : {&sv.mean, &sv.rstd}) b->resize(N);
  sc.wide_a.resize(NF);
  T* a = sc.wide_a.data();
  kernels::linear_act_forward(s.act, x, f.p + s.fc1.w, f.p + s.fc1.b, sv.pre.data(), a, N, C, F);
  kernels::dropout_forward(a, a, NF, drop.p(s.act_dropout), drop.seed, s.stream + kAct);
  linear_forward(s.fc2, f, a, sv.h.data(), N);
  kernels::dropout_forward(sv.h.data(), sv.h.data(), NC, drop.p(s.dropout), drop.seed, s.stream + kFfnOut);
  kernels::add(sv.h.data(), x, sv.h.data(), NC);
  layernorm_forward(s.ln, f, sv.h.data(), sv.out.data(), sv.mean.data(), sv.rstd.data(), N);
}

template <typename T>
void ffn_sublayer_backward(const FfnSublayerSpec& s, Flat<T> f, const T* x, int N, const DropoutCtx& drop,
                           const FfnSublayerSaved<T>& sv, const T* dout, T* dx, Seq2SeqScratch<T>& sc) {
  const int C = s.fc1.in, F = s.fc1.out;
  const size_t NC = static_cast<size_t>(N) * C, NF = static_cast<size_t>(N) * F;
  for (Buffer<T>* b : {&sc.d_h, &sc.t}) b->resize(std::max(sc.d_h.size(), NC));
  sc.wide_a.resize(NF);
  sc.wide_b.resize(NF);
  T* d_h = sc.d_h.data();
  T* t = sc.t.data();
  T* a = sc.wide_a.data();
  T* g = sc.wide_b.data();
  layernorm_backward(s.ln, f, sv.h.data(), sv.mean.data(), sv.rstd.data(), dout, d_h, N);
  kernels::dropout_backward(d_h, t, NC, drop.p(s.dropout), drop.seed, s.stream + kFfnOut);
  // act(pre) and act'(pre) from one pass; fc2's weight gradient reads the dropped-out activation
  kernels::activation_value_and_grad(s.act, sv.pre.data(), a, g, NF);
  kernels::dropout_forward(a, a, NF, drop.p(s.act_dropout), drop.seed, s.stream + kAct);
  linear_backward(s.fc2, f, a, t, a, N);  // a <- d(dropped activation)
  kernels::dropout_backward(a, a, NF, drop.p(s.act_dropout), drop.seed, s.stream + kAct);
  kernels::mul(a, g, a, NF);
  linear_backward(s.fc1, f, x, a, dx, N);
  kernels::add(dx, d_h, dx, NC);
}

#define STRATA_SEQ2SEQ_LAYER(T)                                                                                   \
  template void attention_sublayer_forward<T>(const AttentionSublayerSpec&, Flat<T>, const T*, const T*,           \
                                              const int32_t*, int, int, int, const DropoutCtx&,                    \
                                              AttentionSublayerSaved<T>&, Seq2SeqScratch<T>&);                      \
  template void attention_sublayer_backward<T>(const AttentionSublayerSpec&, Flat<T>, const T*, const T*,          \
                                               const int32_t*, int, int, int, const DropoutCtx&,                   \
                                               const AttentionSublayerSaved<T>&, const T*, T*, T*,                 \
                                               Seq2SeqScratch<T>&);                                                 \
  template void ffn_sublayer_forward<T>(const FfnSublayerSpec&, Flat<T>, const T*, int, const DropoutCtx&,         \
                                        FfnSublayerSaved<T>&, Seq2SeqScratch<T>&);                                  \
  template void ffn_sublayer_backward<T>(const FfnSublayerSpec&, Flat<T>, const T*, int, const DropoutCtx&,        \
                                         const FfnSublayerSaved<T>&, const T*, T*, Seq2SeqScratch<T>&);
STRATA_SEQ2SEQ_LAYER(float)
STRATA_SEQ2SEQ_LAYER(double)
#undef STRATA_SEQ2SEQ_LAYER

}  // namespace strata::nn
