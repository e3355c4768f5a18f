#include "nn/encoder_layer.h"

#include "util/error.h"

namespace strata::nn {

namespace {
enum Stream : uint64_t { kAttnProbs = 0, kAttnOut = 1, kFfnOut = 2 };

// This rank's heads: its width qkv.out / 3, the dropout masks of those heads among all.
kernels::AttentionShape attention_shape(const EncoderLayerSpec& s, int B, int T_, const DropoutCtx& drop) {
  kernels::AttentionShape as{B, T_, s.qkv.out / 3, s.num_heads, drop.p(s.attn_dropout), drop.seed,
                            s.stream + kAttnProbs};
  as.heads_total = s.heads_total;
  as.head0 = s.head0;
  return as;
}

// The block after its attention core, on N rows of sv.ctx whose residual input is x: the output
// projection and LN1, then the FFN and LN2 into sv.out.
template <typename T>
void after_attention(const EncoderLayerSpec& s, Flat<T> f, const T* x, int N, const DropoutCtx& drop,
                     EncoderLayerSaved<T>& sv, BlockScratch<T>& sc) {
  const int C = s.qkv.in, F = s.ffn_in.out;
  const size_t NC = static_cast<size_t>(N) * C, NF = static_cast<size_t>(N) * F;
  for (Buffer<T>* b : {&sv.h1, &sv.h2, &sv.out}) b->resize(NC);
  for (Buffer<T>* b : {&sv.mean1, &sv.rstd1, &sv.mean2, &sv.rstd2}) b->resize(N);
  sv.pre.resize(NF);
  sc.c1.resize(NC);
  sc.wide.resize(BlockScratch<T>::wide_values(N, F, s.qkv.out));
  T* a = sc.c1.data();  // LN1's output
  T* act = sc.wide.data();

  row_parallel_linear_forward(s.attn_out, f, sv.ctx.data(), sv.h1.data(), N);
  kernels::dropout_forward(sv.h1.data(), sv.h1.data(), NC, drop.p(s.attn_out_dropout), drop.seed, s.stream + kAttnOut);
  kernels::add(sv.h1.data(), x, sv.h1.data(), NC);
  layernorm_forward(s.ln_attn, f, sv.h1.data(), a, sv.mean1.data(), sv.rstd1.data(), N);

  kernels::linear_act_forward(s.act, a, f.p + s.ffn_in.w, f.p + s.ffn_in.b, sv.pre.data(), act, N, C, F);
  row_parallel_linear_forward(s.ffn_out, f, act, sv.h2.data(), N);
  kernels::dropout_forward(sv.h2.data(), sv.h2.data(), NC, drop.p(s.ffn_dropout), drop.seed, s.stream + kFfnOut);
  kernels::add(sv.h2.data(), a, sv.h2.data(), NC);
  layernorm_forward(s.ln_out, f, sv.h2.data(), sv.out.data(), sv.mean2.data(), sv.rstd2.data(), N);
}
}  // namespace

template <typename T>
void encoder_layer_forward(const EncoderLayerSpec& s, Flat<T> f, const T* x, const int32_t* mask, int B, int T_,
                           const DropoutCtx& drop, EncoderLayerSaved<T>& sv, BlockScratch<T>& sc) {
  const int N = B * T_;
  sv.qkv.resize(static_cast<size_t>(N) * s.qkv.out);
  const kernels::AttentionShape shape = attention_shape(s, B, T_, drop);
  sv.attn.resize(kernels::attention_saved_size(shape));
  sv.ctx.resize(static_cast<size_t>(N) * s.attn_out.in);
  linear_forward(s.qkv, f, x, sv.qkv.data(), N);
  kernels::attention_forward(shape, sv.qkv.data(), mask, sv.attn.data(), sv.ctx.data());
  after_attention(s, f, x, N, drop, sv, sc);
}

template <typename T>
void encoder_layer_forward_first_token(const EncoderLayerSpec& s, Flat<T> f, const T* x, const int32_t* mask, int B,
                                       int T_, EncoderLayerSaved<T>& sv, BlockScratch<T>& sc) {
  const int N = B * T_, C = s.qkv.in;
  STRATA_CHECK(!(f.tp && f.tp->split()), "the first-token inference block runs on an unsplit model");
  sv.qkv.resize(static_cast<size_t>(N) * s.qkv.out);
  sv.attn.resize(static_cast<size_t>(B) * s.num_heads * T_);
  sv.ctx.resize(static_cast<size_t>(B) * C);
  linear_forward(s.qkv, f, x, sv.qkv.data(), N);  // keys and values of every position (queries too: one product)
  const DropoutCtx none{false, 0};
  kernels::attention_first_query_forward(attention_shape(s, B, T_, none), sv.qkv.data(), mask, sv.attn.data(),
                                         sv.ctx.data());
  sc.c2.resize(static_cast<size_t>(B) * C);  // the first positions' inputs: the residual
  kernels::copy_rows(x, static_cast<size_t>(T_) * C, sc.c2.data(), C, B, C);
  after_attention(s, f, sc.c2.data(), B, none, sv, sc);
}

template <typename T>
void encoder_layer_backward(const EncoderLayerSpec& s, Flat<T> f, const T* x, int B, int T_,
                            const DropoutCtx& drop, EncoderLayerSaved<T>& sv, const T* dout, T* dx,
                            BlockScratch<T>& sc) {
  const int N = B * T_, C = s.qkv.in, F = s.ffn_in.out;
  const size_t NC = static_cast<size_t>(N) * C, NF = static_cast<size_t>(N) * F;
  sc.size_for_backward(N, C, F, s.qkv.out);
  T* d_h2 = sc.c1.data();  // gradient at LN2's input: residual branch and FFN branch
  T* d_t = sc.c2.data();
  T* d_a = sc.c3.data();
  T* d_f = sc.wide.data();

  layernorm_backward(s.ln_out, f, sv.h2.data(), sv.mean2.data(), sv.rstd2.data(), dout, d_h2, N);
  kernels::dropout_backward(d_h2, d_t, NC, drop.p(s.ffn_dropout), drop.seed, s.stream + kFfnOut);
  // W_2's weight gradient reads the activation, then its input gradient overwrites it and is
  // taken through the activation, whose derivative came from the same pass (into `pre`, which
  // nothing reads after it: no [N, F] buffer more).
  kernels::activation_value_and_grad(s.act, sv.pre.data(), d_f, sv.pre.data(), NF);
  linear_backward(s.ffn_out, f, d_f, d_t, d_f, N);
  kernels::mul(d_f, sv.pre.data(), d_f, NF);
  T* a = d_t;  // d_t is consumed: LN1's output again, for W_1's weight gradient
  layernorm_apply(s.ln_attn, f, sv.h1.data(), sv.mean1.data(), sv.rstd1.data(), a, N);
  linear_backward(s.ffn_in, f, a, d_f, d_a, N);
  tp_sum(f.tp, d_a, NC);  // f: the column-parallel ffn_in's partial input gradients
  kernels::add(d_a, d_h2, d_a, NC);

  T* d_h1 = sc.c1.data();  // d_h2 is consumed: reuse its storage
  layernorm_backward(s.ln_attn, f, sv.h1.data(), sv.mean1.data(), sv.rstd1.data(), d_a, d_h1, N);
  kernels::dropout_backward(d_h1, d_t, NC, drop.p(s.attn_out_dropout), drop.seed, s.stream + kAttnOut);
  T* d_ctx = sc.c3.data();  // d_a is consumed
  linear_backward(s.attn_out, f, sv.ctx.data(), d_t, d_ctx, N);
  T* d_qkv = sc.wide.data();  // the FFN's gradients are consumed
  kernels::attention_backward(attention_shape(s, B, T_, drop), sv.qkv.data(), sv.attn.data(), d_ctx, d_qkv);
  linear_backward(s.qkv, f, x, d_qkv, dx, N);
  tp_sum(f.tp, dx, NC);  // f: the column-parallel qkv's partial input gradients
  kernels::add(dx, d_h1, dx, NC);
}

template void encoder_layer_forward<float>(const EncoderLayerSpec&, Flat<float>, const float*, const int32_t*, int,
                                           int, const DropoutCtx&, EncoderLayerSaved<float>&,
                                           BlockScratch<float>&);
template void encoder_layer_forward<double>(const EncoderLayerSpec&, Flat<double>, const double*, const int32_t*,
                                            int, int, const DropoutCtx&, EncoderLayerSaved<double>&,
                                            BlockScratch<double>&);
template void encoder_layer_forward_first_token<float>(const EncoderLayerSpec&, Flat<float>, const float*,
                                                       const int32_t*, int, int, EncoderLayerSaved<float>&,
                                                       BlockScratch<float>&);
template void encoder_layer_forward_first_token<double>(const EncoderLayerSpec&, Flat<double>, const double*,
                                                        const int32_t*, int, int, EncoderLayerSaved<double>&,
                                                        BlockScratch<double>&);
template void encoder_layer_backward<float>(const EncoderLayerSpec&, Flat<float>, const float*, int, int,
                                            const DropoutCtx&, EncoderLayerSaved<float>&, const float*, float*,
                                            BlockScratch<float>&);
template void encoder_layer_backward<double>(const EncoderLayerSpec&, Flat<double>, const double*, int, int,
                                             const DropoutCtx&, EncoderLayerSaved<double>&, const double*,
                                             double*, BlockScratch<double>&);

}  // namespace strata::nn
