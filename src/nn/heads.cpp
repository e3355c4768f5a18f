#include "nn/heads.h"

namespace strata::nn {

template <typename T>
void classifier_head_forward(const ClassifierHeadSpec& s, Flat<T> f, const T* h, int B, int T_,
                             const DropoutCtx& drop, ClassifierHeadSaved<T>& sv) {
  const int C = s.dense.in;
  const size_t BC = static_cast<size_t>(B) * C;
  sv.x0.resize(BC);
  sv.pre.resize(BC);
  sv.hid.resize(BC);
  sv.logits.resize(static_cast<size_t>(B) * s.out.out);
  kernels::copy_rows(h, static_cast<size_t>(T_) * C, sv.x0.data(), C, B, C);  // each row's first position
  kernels::dropout_forward(sv.x0.data(), sv.x0.data(), BC, drop.p(s.pre_dropout), drop.seed, s.stream);
  kernels::linear_act_forward(s.act, sv.x0.data(), f.p + s.dense.w, f.p + s.dense.b, sv.pre.data(), sv.hid.data(),
                              B, C, s.dense.out);
  kernels::dropout_forward(sv.hid.data(), sv.hid.data(), BC, drop.p(s.dropout), drop.seed, s.stream + 1);
  linear_forward(s.out, f, sv.hid.data(), sv.logits.data(), B);
}

template <typename T>
void classifier_head_backward(const ClassifierHeadSpec& s, Flat<T> f, int B, int T_, const DropoutCtx& drop,
                              ClassifierHeadSaved<T>& sv, const T* dlogits, T* dh) {
  const int C = s.dense.in;
  const size_t BC = static_cast<size_t>(B) * C;
  Buffer<T>& d_hid = sv.d_hid;
  Buffer<T>& d_x0 = sv.d_x0;
  d_hid.resize(BC);
  d_x0.resize(BC);
  linear_backward(s.out, f, sv.hid.data(), dlogits, d_hid.data(), B);
  kernels::dropout_backward(d_hid.data(), d_hid.data(), BC, drop.p(s.dropout), drop.seed, s.stream + 1);
  kernels::activation_backward(s.act, sv.pre.data(), d_hid.data(), d_hid.data(), BC);
  linear_backward(s.dense, f, sv.x0.data(), d_hid.data(), d_x0.data(), B);
  kernels::dropout_backward(d_x0.data(), d_x0.data(), BC, drop.p(s.pre_dropout), drop.seed, s.stream);
  kernels::fill(dh, static_cast<size_t>(B) * T_ * C, T(0));
  kernels::copy_rows(d_x0.data(), C, dh, static_cast<size_t>(T_) * C, B, C);
}

template <typename T>
void masked_lm_head_forward(const MaskedLMHeadSpec& s, Flat<T> f, const T* h, int N, MaskedLMHeadSaved<T>& sv) {
  const int C = s.dense.in;
  const size_t NC = static_cast<size_t>(N) * s.dense.out;
  sv.pre.resize(NC);
  sv.act.resize(NC);
  sv.normed.resize(NC);
  sv.mean.resize(N);
  sv.rstd.resize(N);
  sv.logits.resize(static_cast<size_t>(N) * s.decoder.out);
  kernels::linear_act_forward(s.act, h, f.p + s.dense.w, f.p + s.dense.b, sv.pre.data(), sv.act.data(), N, C,
                              s.dense.out);
  layernorm_forward(s.ln, f, sv.act.data(), sv.normed.data(), sv.mean.data(), sv.rstd.data(), N);
  linear_forward(s.decoder, f, sv.normed.data(), sv.logits.data(), N);
}

template <typename T>
void masked_lm_head_backward(const MaskedLMHeadSpec& s, Flat<T> f, const T* h, int N,
                             const MaskedLMHeadSaved<T>& sv, const T* dlogits, T* dh, Buffer<T>& scratch) {
  const size_t NC = static_cast<size_t>(N) * s.dense.out;
  scratch.resize(2 * NC);
  T* d_normed = scratch.data();
  T* d_act = scratch.data() + NC;
  linear_backward(s.decoder, f, sv.normed.data(), dlogits, d_normed, N);
  tp_sum(f.tp, d_normed, NC);  // a vocabulary-parallel decoder: each rank's columns' share
  layernorm_backward(s.ln, f, sv.act.data(), sv.mean.data(), sv.rstd.data(), d_normed, d_act, N);
  kernels::activation_backward(s.act, sv.pre.data(), d_act, d_act, NC);
  linear_backward(s.dense, f, h, d_act, dh, N);
}

template <typename T>
void token_head_forward(const TokenHeadSpec& s, Flat<T> f, const T* h, int N, const DropoutCtx& drop,
                        Buffer<T>& scratch, T* logits) {
  const float p = drop.p(s.dropout);
  const T* x = h;
  if (p > 0) {
    const size_t NC = static_cast<size_t>(N) * s.out.in;
    scratch.resize(NC);
    kernels::dropout_forward(h, scratch.data(), NC, p, drop.seed, s.stream);
    x = scratch.data();
  }
  linear_forward(s.out, f, x, logits, N);
}

template <typename T>
void token_head_backward(const TokenHeadSpec& s, Flat<T> f, const T* h, int N, const DropoutCtx& drop,
                         const T* dlogits, T* dh, Buffer<T>& scratch) {
  const float p = drop.p(s.dropout);
  const T* x = h;
  const size_t NC = static_cast<size_t>(N) * s.out.in;
  if (p > 0) {  // the mask is counter-based: recompute the dropped input instead of keeping it
    scratch.resize(NC);
    kernels::dropout_forward(h, scratch.data(), NC, p, drop.seed, s.stream);
    x = scratch.data();
  }
  linear_backward(s.out, f, x, dlogits, dh, N);
  kernels::dropout_backward(dh, dh, NC, p, drop.seed, s.stream);
}

#define STRATA_INSTANTIATE(T)                                                                                    \
  template void classifier_head_forward<T>(const ClassifierHeadSpec&, Flat<T>, const T*, int, int,                \
                                           const DropoutCtx&, ClassifierHeadSaved<T>&);                           \
  template void classifier_head_backward<T>(const ClassifierHeadSpec&, Flat<T>, int, int, const DropoutCtx&,      \
                                            ClassifierHeadSaved<T>&, const T*, T*);                         \
  template void masked_lm_head_forward<T>(const MaskedLMHeadSpec&, Flat<T>, const T*, int, MaskedLMHeadSaved<T>&); \
  template void masked_lm_head_backward<T>(const MaskedLMHeadSpec&, Flat<T>, const T*, int,                       \
                                           const MaskedLMHeadSaved<T>&, const T*, T*, Buffer<T>&);                 \
  template void token_head_forward<T>(const TokenHeadSpec&, Flat<T>, const T*, int, const DropoutCtx&, Buffer<T>&, \
                                      T*);                                                                        \
  template void token_head_backward<T>(const TokenHeadSpec&, Flat<T>, const T*, int, const DropoutCtx&, const T*, \
                                       T*, Buffer<T>&);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

}  // namespace strata::nn
