#include "nn/seq2seq_decode.h"

namespace strata::nn {

template <typename T>
void KeyValueCache<T>::reset(int rows_, int capacity_, int width) {
  rows = rows_;
  capacity = capacity_;
  const size_t n = static_cast<size_t>(rows) * capacity * width;
  k.resize(n);
  v.resize(n);
}

template <typename T>
void KeyValueCache<T>::reorder(const std::vector<int32_t>& order, Buffer<T>& tmp) {
  const size_t width = k.size() / static_cast<size_t>(rows);
  tmp.resize(k.size());
  for (Buffer<T>* kv : {&k, &v}) {
    kernels::gather_rows(kv->data(), order.data(), tmp.data(), rows, static_cast<int>(width));
    kernels::copy(tmp.data(), kv->data(), static_cast<size_t>(rows) * width);
  }
}

template <typename T>
void cache_keys_values(const AttentionSublayerSpec& s, Flat<T> f, const T* kv, int rows, int n, int at,
                       KeyValueCache<T>& cache, Buffer<T>& tmp) {
  const size_t I = static_cast<size_t>(s.k.out);
  tmp.resize(static_cast<size_t>(rows) * n * I);
  for (auto [spec, dst] : {std::pair{&s.k, &cache.k}, std::pair{&s.v, &cache.v}}) {
    linear_forward(*spec, f, kv, tmp.data(), rows * n);
    kernels::copy_rows(tmp.data(), n * I, dst->data() + at * I, cache.capacity * I, static_cast<size_t>(rows), n * I);
  }
}

template <typename T>
void attention_sublayer_step(const AttentionSublayerSpec& s, Flat<T> f, const T* x, int B, int n, int at,
                             KeyValueCache<T>& cache, bool self_cache, int keys, AttentionSublayerSaved<T>& sv,
                             Buffer<T>& tmp, const T* pos_bias) {
  const int I = s.q.out, NH = s.num_heads, HS = I / NH, N = B * n;
  const T scale = score_scale<T>(s);
  sv.q.resize(static_cast<size_t>(N) * I);
  sv.ctx.resize(static_cast<size_t>(N) * I);
  sv.probs.resize(static_cast<size_t>(n) * keys);
  const T* in = attention_input(s, f, x, N, sv);
  if (self_cache) cache_keys_values(s, f, in, B, n, at, cache, tmp);
  linear_forward(s.q, f, in, sv.q.data(), N);
  for (int b = 0; b < B; ++b) {
    const size_t row = self_cache ? static_cast<size_t>(b) : 0;
    const T* K = cache.k.data() + row * cache.capacity * I;
    const T* V = cache.v.data() + row * cache.capacity * I;
    for (int h = 0; h < NH; ++h) {
      T* S = sv.probs.data();
      kernels::gemm<T>(false, true, n, keys, HS, scale, sv.q.data() + static_cast<size_t>(b) * n * I + h * HS, I,
                       K + h * HS, I, T(0), S, keys);
      for (int i = 0; i < n; ++i) {
        T* row = S + static_cast<size_t>(i) * keys;
        if (pos_bias)
          for (int j = 0; j < keys; ++j) row[j] += pos_bias[(static_cast<size_t>(i) * keys + j) * NH + h];
        masked_softmax(row, keys, [&](int j) { return !s.causal || j <= at + i; });
      }
      kernels::gemm<T>(false, false, n, HS, keys, T(1), S, keys, V + h * HS, I, T(0),
                       sv.ctx.data() + static_cast<size_t>(b) * n * I + h * HS, I);
    }
  }
  attention_output(s, f, x, N, DropoutCtx{false, 0}, sv);
}

#define STRATA_SEQ2SEQ_DECODE(T)                                                                                 \
  template struct KeyValueCache<T>;                                                                              \
  template void cache_keys_values<T>(const AttentionSublayerSpec&, Flat<T>, const T*, int, int, int,            \
                                     KeyValueCache<T>&, Buffer<T>&);                                             \
  template void attention_sublayer_step<T>(const AttentionSublayerSpec&, Flat<T>, const T*, int, int, int,      \
                                           KeyValueCache<T>&, bool, int, AttentionSublayerSaved<T>&, Buffer<T>&, \
                                           const T*);
STRATA_SEQ2SEQ_DECODE(float)
STRATA_SEQ2SEQ_DECODE(double)
#undef STRATA_SEQ2SEQ_DECODE

}  // namespace strata::nn
