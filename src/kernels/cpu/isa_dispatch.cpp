// The CPU's copies of the ops whose loops are compiled once per ISA (kernels/cpu/simd/): each
// calls the copy for active_isa(), chosen once per process.
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/isa_ops.h"

namespace strata::kernels::cpu {

template <typename T>
void layernorm_forward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, int N, int C, double eps) {
  STRATA_ISA_CALL(active_isa(), layernorm_forward<T>, x, gamma, beta, y, mean, rstd, N, C, eps);
}

template <typename T>
void layernorm_apply(const T* x, const T* gamma, const T* beta, const T* mean, const T* rstd, T* y, int N, int C) {
  STRATA_ISA_CALL(active_isa(), layernorm_apply<T>, x, gamma, beta, mean, rstd, y, N, C);
}

template <typename T>
void layernorm_backward(const T* x, const T* gamma, const T* mean, const T* rstd, const T* dy, T* dx, T* dgamma,
                        T* dbeta, int N, int C) {
  STRATA_ISA_CALL(active_isa(), layernorm_backward<T>, x, gamma, mean, rstd, dy, dx, dgamma, dbeta, N, C);
}

template <typename T>
void rmsnorm_forward(const T* x, const T* gamma, T* y, T* rstd, int N, int C, double eps) {
  STRATA_ISA_CALL(active_isa(), rmsnorm_forward<T>, x, gamma, y, rstd, N, C, eps);
}

template <typename T>
void rmsnorm_backward(const T* x, const T* gamma, const T* rstd, const T* dy, T* dx, T* dgamma, int N, int C) {
  STRATA_ISA_CALL(active_isa(), rmsnorm_backward<T>, x, gamma, rstd, dy, dx, dgamma, N, C);
}

template <typename T>
void activation_forward(Activation a, const T* x, T* y, size_t n) {
  STRATA_ISA_CALL(active_isa(), activation_forward<T>, a, x, y, n);
}

template <typename T>
void activation_backward(Activation a, const T* x, const T* dy, T* dx, size_t n) {
  STRATA_ISA_CALL(active_isa(), activation_backward<T>, a, x, dy, dx, n);
}

template <typename T>
void activation_value_and_grad(Activation a, const T* x, T* y, T* g, size_t n) {
  STRATA_ISA_CALL(active_isa(), activation_value_and_grad<T>, a, x, y, g, n);
}

template <typename T>
void dropout_forward(const T* x, T* y, size_t n, float p, uint64_t seed, uint64_t stream) {
  STRATA_ISA_CALL(active_isa(), dropout_forward<T>, x, y, n, p, seed, stream);
}

template <typename T>
void dropout_backward(const T* dy, T* dx, size_t n, float p, uint64_t seed, uint64_t stream) {
  dropout_forward(dy, dx, n, p, seed, stream);  // same mask, same scale: the op is linear
}

template <typename T>
void dropout_block(const T* x, T* y, size_t rows, size_t cols, size_t ld, size_t first, float p, uint64_t seed,
                   uint64_t stream) {
  STRATA_ISA_CALL(active_isa(), dropout_block<T>, x, y, rows, cols, ld, first, p, seed, stream);
}

template <typename T>
void attention_forward(const AttentionShape& s, const T* qkv, const int32_t* mask, T* probs, T* ctx) {
  STRATA_ISA_CALL(active_isa(), attention_forward<T>, s, qkv, mask, probs, ctx);
}

template <typename T>
void attention_first_query_forward(const AttentionShape& s, const T* qkv, const int32_t* mask, T* probs, T* ctx) {
  STRATA_ISA_CALL(active_isa(), attention_first_query_forward<T>, s, qkv, mask, probs, ctx);
}

template <typename T>
void attention_backward(const AttentionShape& s, const T* qkv, const T* probs, const T* dctx, T* dqkv) {
  STRATA_ISA_CALL(active_isa(), attention_backward<T>, s, qkv, probs, dctx, dqkv);
}

template <typename T>
void attention_cached_forward(const CachedAttentionShape& s, const T* q, int ldq, const T* k, const T* v, T* scores,
                              T* ctx) {
  STRATA_ISA_CALL(active_isa(), attention_cached_forward<T>, s, q, ldq, k, v, scores, ctx);
}

template <typename T>
void embedding_forward(const int32_t* ids, const T* table, T* out, int N, int C) {
  STRATA_ISA_CALL(active_isa(), embedding_forward<T>, ids, table, out, N, C);
}

template <typename T>
void embedding_backward(const int32_t* ids, const T* dout, T* dtable, int N, int C, int skip_id) {
  STRATA_ISA_CALL(active_isa(), embedding_backward<T>, ids, dout, dtable, N, C, skip_id);
}

template <typename T>
double cross_entropy(const T* logits, const int32_t* labels, T* dlogits, int N, int V, double norm) {
  STRATA_ISA_CALL(active_isa(), cross_entropy<T>, logits, labels, dlogits, N, V, norm);
}

template <typename T>
void ce_slice_row_max(const T* logits, int N, int V, T* mx) {
  STRATA_ISA_CALL(active_isa(), ce_slice_row_max<T>, logits, N, V, mx);
}

template <typename T>
void ce_slice_exp(const T* logits, const int32_t* labels, const T* mx, int N, int V, int v0, T* e, double* sumexp,
                  double* target) {
  STRATA_ISA_CALL(active_isa(), ce_slice_exp<T>, logits, labels, mx, N, V, v0, e, sumexp, target);
}

template <typename T>
void ce_slice_grad(T* e, const int32_t* labels, const double* sumexp, int N, int V, int v0, double norm) {
  STRATA_ISA_CALL(active_isa(), ce_slice_grad<T>, e, labels, sumexp, N, V, v0, norm);
}

template <typename T>
void adamw_update(T* p, const T* g, T* m, T* v, size_t n, const AdamWParams& a) {
  STRATA_ISA_CALL(active_isa(), adamw_update<T>, p, g, m, v, n, a);
}

template <typename T>
void sgd_update(T* p, const T* g, T* buf, size_t n, const SGDParams& a) {
  STRATA_ISA_CALL(active_isa(), sgd_update<T>, p, g, buf, n, a);
}

template <typename T>
void scale(T* x, size_t n, T s) {
  STRATA_ISA_CALL(active_isa(), scale<T>, x, n, s);
}

template <typename T>
void add(const T* a, const T* b, T* y, size_t n) {
  STRATA_ISA_CALL(active_isa(), add<T>, a, b, y, n);
}

template <typename T>
void mul(const T* a, const T* b, T* y, size_t n) {
  STRATA_ISA_CALL(active_isa(), mul<T>, a, b, y, n);
}

template <typename T>
double sum_squares(const T* x, size_t n) {
  STRATA_ISA_CALL(active_isa(), sum_squares<T>, x, n);
}

#define STRATA_INSTANTIATE(T)                                                                                       \
  template void layernorm_forward<T>(const T*, const T*, const T*, T*, T*, T*, int, int, double);                  \
  template void layernorm_apply<T>(const T*, const T*, const T*, const T*, const T*, T*, int, int);                \
  template void layernorm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, int, int);     \
  template void rmsnorm_forward<T>(const T*, const T*, T*, T*, int, int, double);                                  \
  template void rmsnorm_backward<T>(const T*, const T*, const T*, const T*, T*, T*, int, int);                     \
  template void activation_forward<T>(Activation, const T*, T*, size_t);                                           \
  template void activation_backward<T>(Activation, const T*, const T*, T*, size_t);                                \
  template void activation_value_and_grad<T>(Activation, const T*, T*, T*, size_t);                                \
  template void dropout_forward<T>(const T*, T*, size_t, float, uint64_t, uint64_t);                               \
  template void dropout_backward<T>(const T*, T*, size_t, float, uint64_t, uint64_t);                              \
  template void dropout_block<T>(const T*, T*, size_t, size_t, size_t, size_t, float, uint64_t, uint64_t);         \
  template void attention_forward<T>(const AttentionShape&, const T*, const int32_t*, T*, T*);                     \
  template void attention_first_query_forward<T>(const AttentionShape&, const T*, const int32_t*, T*, T*);         \
  template void attention_backward<T>(const AttentionShape&, const T*, const T*, const T*, T*);                    \
  template void attention_cached_forward<T>(const CachedAttentionShape&, const T*, int, const T*, const T*, T*, T*); \
  template void embedding_forward<T>(const int32_t*, const T*, T*, int, int);                                      \
  template void embedding_backward<T>(const int32_t*, const T*, T*, int, int, int);                                \
  template double cross_entropy<T>(const T*, const int32_t*, T*, int, int, double);                                \
  template void ce_slice_row_max<T>(const T*, int, int, T*);                                                      \
  template void ce_slice_exp<T>(const T*, const int32_t*, const T*, int, int, int, T*, double*, double*);         \
  template void ce_slice_grad<T>(T*, const int32_t*, const double*, int, int, int, double);                       \
  template void adamw_update<T>(T*, const T*, T*, T*, size_t, const AdamWParams&);                                 \
  template void sgd_update<T>(T*, const T*, T*, size_t, const SGDParams&);                                         \
  template void scale<T>(T*, size_t, T);                                                                           \
  template void add<T>(const T*, const T*, T*, size_t);                                                             \
  template void mul<T>(const T*, const T*, T*, size_t);                                                             \
  template double sum_squares<T>(const T*, size_t);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

}  // namespace strata::kernels::cpu

namespace strata::kernels {
const char* kernel_isa() { return isa_name(active_isa()); }
}  // namespace strata::kernels
