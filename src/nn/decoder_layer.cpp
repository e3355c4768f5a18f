#include "nn/decoder_layer.h"

#include "util/error.h"

namespace strata::nn {

namespace {
enum Stream : uint64_t { kAttnProbs = 0, kAttnResid = 1, kMlpResid = 2 };

kernels::AttentionShape attention_shape(const DecoderLayerSpec& s, int B, int T_, const DropoutCtx& drop) {
  kernels::AttentionShape as{B, T_, s.c_attn.out / 3, s.num_heads, drop.p(s.attn_dropout), drop.seed,
                            s.stream + kAttnProbs};
  as.causal = true;
  as.heads_total = s.heads_total;
  as.head0 = s.head0;
  as.scale_scores = s.scale_attn;
  return as;
}

// Buffers of one call over N = B*T positions; sv.attn holds `attn` values. Ca: this rank's
// attention width (C unsplit), F: its MLP width.
template <typename T>
void size_saved(DecoderLayerSaved<T>& sv, int N, int C, int Ca, int F, size_t attn) {
  const size_t NC = static_cast<size_t>(N) * C, NF = static_cast<size_t>(N) * F, NCa = static_cast<size_t>(N) * Ca;
  for (Buffer<T>* b : {&sv.h, &sv.out}) b->resize(NC);
  for (Buffer<T>* b : {&sv.mean1, &sv.rstd1, &sv.mean2, &sv.rstd2}) b->resize(N);
  sv.ctx.resize(NCa);
  sv.qkv.resize(3 * NCa);
  sv.attn.resize(attn);
  sv.pre.resize(NF);
}

// The block around its attention core, shared by forward and decode: LN1 and the q|k|v
// projection before it; the output projection, residuals and MLP after it (reading sv.ctx).
// The layer norms' outputs live in sc.c1 only until the projection after them has read them.
template <typename T>
void before_attention(const DecoderLayerSpec& s, Flat<T> f, const T* x, int N, DecoderLayerSaved<T>& sv,
                      BlockScratch<T>& sc) {
  sc.c1.resize(static_cast<size_t>(N) * s.c_attn.in);
  layernorm_forward(s.ln_1, f, x, sc.c1.data(), sv.mean1.data(), sv.rstd1.data(), N);
  conv1d_forward(s.c_attn, f, sc.c1.data(), sv.qkv.data(), N);
}

template <typename T>
void after_attention(const DecoderLayerSpec& s, Flat<T> f, const T* x, int N, const DropoutCtx& drop,
                     DecoderLayerSaved<T>& sv, BlockScratch<T>& sc) {
  const size_t NC = static_cast<size_t>(N) * s.c_attn.in, NF = static_cast<size_t>(N) * s.c_fc.out;
  sc.wide.resize(BlockScratch<T>::wide_values(N, s.c_fc.out, s.c_attn.out));
  T* a2 = sc.c1.data();
  T* act = sc.wide.data();
  row_parallel_conv1d_forward(s.attn_proj, f, sv.ctx.data(), sv.h.data(), N);
  kernels::dropout_forward(sv.h.data(), sv.h.data(), NC, drop.p(s.resid_dropout), drop.seed, s.stream + kAttnResid);
  kernels::add(sv.h.data(), x, sv.h.data(), NC);

  layernorm_forward(s.ln_2, f, sv.h.data(), a2, sv.mean2.data(), sv.rstd2.data(), N);
  conv1d_forward(s.c_fc, f, a2, sv.pre.data(), N);
  kernels::activation_forward(s.act, sv.pre.data(), act, NF);
  row_parallel_conv1d_forward(s.mlp_proj, f, act, sv.out.data(), N);
  kernels::dropout_forward(sv.out.data(), sv.out.data(), NC, drop.p(s.resid_dropout), drop.seed, s.stream + kMlpResid);
  kernels::add(sv.out.data(), sv.h.data(), sv.out.data(), NC);
}
}  // namespace

template <typename T>
void decoder_layer_forward(const DecoderLayerSpec& s, Flat<T> f, const T* x, const int32_t* mask, int B, int T_,
                           const DropoutCtx& drop, DecoderLayerSaved<T>& sv, BlockScratch<T>& sc) {
  const int N = B * T_;
  const kernels::AttentionShape shape = attention_shape(s, B, T_, drop);
  size_saved(sv, N, s.c_attn.in, s.c_attn.out / 3, s.c_fc.out, kernels::attention_saved_size(shape));
  before_attention(s, f, x, N, sv, sc);
  kernels::attention_forward(shape, sv.qkv.data(), mask, sv.attn.data(), sv.ctx.data());
  after_attention(s, f, x, N, drop, sv, sc);
}

template <typename T>
void decoder_layer_decode(const DecoderLayerSpec& s, Flat<T> f, const T* x, int B, int n, DecoderLayerCache<T>& cache,
                          DecoderLayerSaved<T>& sv, BlockScratch<T>& sc) {
  const int N = B * n, C = s.c_attn.in, Tk = cache.len + n;
  STRATA_CHECK(!(f.tp && f.tp->split()), "decoding with a key/value cache runs on an unsplit model");
  size_saved(sv, N, C, C, s.c_fc.out, static_cast<size_t>(B) * s.num_heads * n * Tk);
  before_attention(s, f, x, N, sv, sc);
  // Append the new keys and values (columns C..3C of qkv) to each row's cache.
  for (int b = 0; b < B; ++b) {
    const T* src = sv.qkv.data() + static_cast<size_t>(b) * n * 3 * C;
    const size_t dst = (static_cast<size_t>(b) * cache.capacity + cache.len) * C;
    kernels::copy_rows(src + C, 3 * C, cache.k.data() + dst, C, n, C);
    kernels::copy_rows(src + 2 * C, 3 * C, cache.v.data() + dst, C, n, C);
  }
  cache.len = Tk;
  const kernels::CachedAttentionShape as{B, n, Tk, cache.capacity, C, s.num_heads, s.scale_attn};
  kernels::attention_cached_forward(as, sv.qkv.data(), 3 * C, cache.k.data(), cache.v.data(), sv.attn.data(),
                                    sv.ctx.data());
  after_attention(s, f, x, N, DropoutCtx{false, 0}, sv, sc);
}

template <typename T>
void decoder_layer_backward(const DecoderLayerSpec& s, Flat<T> f, const T* x, int B, int T_, const DropoutCtx& drop,
                            DecoderLayerSaved<T>& sv, const T* dout, T* dx, BlockScratch<T>& sc) {
  const int N = B * T_, C = s.c_attn.in, F = s.c_fc.out;
  const size_t NC = static_cast<size_t>(N) * C, NF = static_cast<size_t>(N) * F;
  sc.size_for_backward(N, C, F, s.c_attn.out);
  T* d_h = sc.c1.data();
  T* d_t = sc.c2.data();
  T* d_a = sc.c3.data();
  T* d_f = sc.wide.data();

  // MLP branch, then the residual: d_h = dout + LN2'(...). mlp_proj's weight gradient reads
  // the recomputed activation, then its input gradient overwrites it.
  kernels::dropout_backward(dout, d_t, NC, drop.p(s.resid_dropout), drop.seed, s.stream + kMlpResid);
  kernels::activation_value_and_grad(s.act, sv.pre.data(), d_f, sv.pre.data(), NF);  // act' over pre
  conv1d_backward(s.mlp_proj, f, d_f, d_t, d_f, N);
  kernels::mul(d_f, sv.pre.data(), d_f, NF);
  T* a2 = d_t;  // d_t is consumed: LN2's output again, for c_fc's weight gradient
  layernorm_apply(s.ln_2, f, sv.h.data(), sv.mean2.data(), sv.rstd2.data(), a2, N);
  conv1d_backward(s.c_fc, f, a2, d_f, d_a, N);
  tp_sum(f.tp, d_a, NC);  // f: the column-parallel c_fc's partial input gradients
  layernorm_backward(s.ln_2, f, sv.h.data(), sv.mean2.data(), sv.rstd2.data(), d_a, d_h, N);
  kernels::add(d_h, dout, d_h, NC);

  // Attention branch, then the residual: dx = d_h + LN1'(...)
  kernels::dropout_backward(d_h, d_t, NC, drop.p(s.resid_dropout), drop.seed, s.stream + kAttnResid);
  T* d_ctx = d_a;
  conv1d_backward(s.attn_proj, f, sv.ctx.data(), d_t, d_ctx, N);
  T* d_qkv = sc.wide.data();  // the MLP's gradients are consumed
  kernels::attention_backward(attention_shape(s, B, T_, drop), sv.qkv.data(), sv.attn.data(), d_ctx, d_qkv);
  T* a1 = d_ctx;  // d_ctx is consumed: LN1's output again, for c_attn's weight gradient
  layernorm_apply(s.ln_1, f, x, sv.mean1.data(), sv.rstd1.data(), a1, N);
  T* d_a1 = d_t;
  conv1d_backward(s.c_attn, f, a1, d_qkv, d_a1, N);
  tp_sum(f.tp, d_a1, NC);  // f: the column-parallel c_attn's partial input gradients
  layernorm_backward(s.ln_1, f, x, sv.mean1.data(), sv.rstd1.data(), d_a1, dx, N);
  kernels::add(dx, d_h, dx, NC);
}

#define STRATA_INSTANTIATE(T)                                                                                       \
  template void decoder_layer_forward<T>(const DecoderLayerSpec&, Flat<T>, const T*, const int32_t*, int, int,       \
                                         const DropoutCtx&, DecoderLayerSaved<T>&, BlockScratch<T>&);                \
  template void decoder_layer_decode<T>(const DecoderLayerSpec&, Flat<T>, const T*, int, int, DecoderLayerCache<T>&, \
                                        DecoderLayerSaved<T>&, BlockScratch<T>&);                                    \
  template void decoder_layer_backward<T>(const DecoderLayerSpec&, Flat<T>, const T*, int, int, const DropoutCtx&,   \
                                          DecoderLayerSaved<T>&, const T*, T*, BlockScratch<T>&);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

}  // namespace strata::nn
