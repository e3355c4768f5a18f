#include "nn/seq2seq_decode.h"

#include <algorithm>
#include <cmath>

namespace strata::nn {

template <typename T>
void KeyValueCache<T>::reset(int rows_, int capacity_, int C) {
  rows = rows_;
  capacity = capacity_;
  const size_t n = static_cast<size_t>(rows) * capacity * C;
  k.resize(n);
  v.resize(n);
}

template <typename T>
void cache_keys_values(const AttentionSublayerSpec& s, Flat<T> f, const T* kv, int rows, int n, int at,
                       KeyValueCache<T>& cache, Buffer<T>& tmp) {
  const int C = s.k.out;
  tmp.resize(static_cast<size_t>(rows) * n * C);
  for (auto [spec, dst] : {std::pair{&s.k, &cache.k}, std::pair{&s.v, &cache.v}}) {
    linear_forward(*spec, f, kv, tmp.data(), rows * n);
    kernels::copy_rows(tmp.data(), static_cast<size_t>(n) * C, dst->data() + static_cast<size_t>(at) * C,
                       static_cast<size_t>(cache.capacity) * C, rows, static_cast<size_t>(n) * C);
  }
}

template <typename T>
void attention_sublayer_step(const AttentionSublayerSpec& s, Flat<T> f, const T* x, int B, int n, int at,
                             const KeyValueCache<T>& cache, int keys, const int32_t* kv_mask,
                             AttentionStepBuffers<T>& buf) {
  const int C = s.q.out, NH = s.num_heads, HS = C / NH, N = B * n;
  const size_t NC = static_cast<size_t>(N) * C;
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(HS)));
  for (Buffer<T>* b : {&buf.q, &buf.ctx, &buf.h, &buf.out}) b->resize(NC);
  for (Buffer<T>* b : {&buf.mean, &buf.rstd}) b->resize(static_cast<size_t>(N));
  buf.scores.resize(static_cast<size_t>(n) * keys);
  linear_forward(s.q, f, x, buf.q.data(), N);
  for (int b = 0; b < B; ++b) {
    const size_t row = cache.rows == 1 ? 0 : static_cast<size_t>(b);
    const T* K = cache.k.data() + row * cache.capacity * C;
    const T* V = cache.v.data() + row * cache.capacity * C;
    for (int h = 0; h < NH; ++h) {
      T* S = buf.scores.data();
      kernels::gemm<T>(false, true, n, keys, HS, scale, buf.q.data() + static_cast<size_t>(b) * n * C + h * HS, C,
                       K + h * HS, C, T(0), S, keys);
      for (int i = 0; i < n; ++i) {  // softmax as attention_sublayer_forward's, in double
        T* r = S + static_cast<size_t>(i) * keys;
        auto valid = [&](int j) { return (!kv_mask || kv_mask[j] != 0) && (!s.causal || j <= at + i); };
        double mx = -INFINITY;
        for (int j = 0; j < keys; ++j)
          if (valid(j)) mx = std::max(mx, static_cast<double>(r[j]));
        if (mx == -INFINITY) {
          for (int j = 0; j < keys; ++j) r[j] = static_cast<T>(1.0 / keys);
          continue;
        }
        double sum = 0;
        for (int j = 0; j < keys; ++j) {
          const double e = valid(j) ? std::exp(static_cast<double>(r[j]) - mx) : 0.0;
          r[j] = static_cast<T>(e);
          sum += e;
        }
        for (int j = 0; j < keys; ++j) r[j] = static_cast<T>(r[j] / sum);
      }
      kernels::gemm<T>(false, false, n, HS, keys, T(1), S, keys, V + h * HS, C, T(0),
                       buf.ctx.data() + static_cast<size_t>(b) * n * C + h * HS, C);
    }
  }
  linear_forward(s.out, f, buf.ctx.data(), buf.h.data(), N);
  kernels::add(buf.h.data(), x, buf.h.data(), NC);
  layernorm_forward(s.ln, f, buf.h.data(), buf.out.data(), buf.mean.data(), buf.rstd.data(), N);
}

#define STRATA_SEQ2SEQ_DECODE(T)                                                                                 \
  template struct KeyValueCache<T>;                                                                              \
  template void cache_keys_values<T>(const AttentionSublayerSpec&, Flat<T>, const T*, int, int, int,            \
                                     KeyValueCache<T>&, Buffer<T>&);                                             \
  template void attention_sublayer_step<T>(const AttentionSublayerSpec&, Flat<T>, const T*, int, int, int,      \
                                           const KeyValueCache<T>&, int, const int32_t*, AttentionStepBuffers<T>&);
STRATA_SEQ2SEQ_DECODE(float)
STRATA_SEQ2SEQ_DECODE(double)
#undef STRATA_SEQ2SEQ_DECODE

}  // namespace strata::nn
