#include "nn/seq2seq_decode.h"

#include "tensor/device_array.h"

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
  DeviceArray<int32_t> index;  // the order where the op reads it
  const int32_t* at = index.upload(order);
  for (Buffer<T>* kv : {&k, &v}) {
    kernels::gather_rows(kv->data(), at, tmp.data(), rows, static_cast<int>(width));
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
  sv.probs.resize(static_cast<size_t>(NH) * n * keys);
  const T* in = attention_input(s, f, x, N, sv);
  if (self_cache) cache_keys_values(s, f, in, B, n, at, cache, tmp);
  linear_forward(s.q, f, in, sv.q.data(), N);
  for (int b = 0; b < B; ++b) {
    const size_t row = self_cache ? static_cast<size_t>(b) : 0;
    const T* K = cache.k.data() + row * cache.capacity * I;
    const T* V = cache.v.data() + row * cache.capacity * I;
    // Row b's heads' scores [NH, n, keys], their softmax, then each head's context.
    T* S = sv.probs.data();
    const size_t block = static_cast<size_t>(n) * keys;
    for (int h = 0; h < NH; ++h)
      kernels::gemm<T>(false, true, n, keys, HS, scale, sv.q.data() + static_cast<size_t>(b) * n * I + h * HS, I,
                       K + h * HS, I, T(0), S + h * block, keys);
    kernels::scores_softmax(S, pos_bias, nullptr, 1, NH, n, keys, s.causal, at);
    for (int h = 0; h < NH; ++h)
      kernels::gemm<T>(false, false, n, HS, keys, T(1), S + h * block, keys, V + h * HS, I, T(0),
                       sv.ctx.data() + static_cast<size_t>(b) * n * I + h * HS, I);
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
