#include <algorithm>

#include "kernels/ops.h"

namespace strata::kernels {

template <typename T>
void embedding_forward(const int32_t* ids, const T* table, T* out, int N, int C) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* src = table + static_cast<size_t>(ids[n]) * C;
    T* dst = out + static_cast<size_t>(n) * C;
    for (int c = 0; c < C; ++c) dst[c] += src[c];
  }
}

template <typename T>
void embedding_backward(const int32_t* ids, const T* dout, T* dtable, int N, int C, int skip_id) {
  // Rows repeat (the same token many times), so splitting over n would race; splitting over
  // channels keeps every sum in token order.
  constexpr int kBlock = 32;
  const int blocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < blocks; ++blk) {
    const int c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
    for (int n = 0; n < N; ++n) {
      if (ids[n] == skip_id) continue;
      const T* src = dout + static_cast<size_t>(n) * C;
      T* dst = dtable + static_cast<size_t>(ids[n]) * C;
      for (int c = c0; c < c1; ++c) dst[c] += src[c];
    }
  }
}

template void embedding_forward<float>(const int32_t*, const float*, float*, int, int);
template void embedding_forward<double>(const int32_t*, const double*, double*, int, int);
template void embedding_backward<float>(const int32_t*, const float*, float*, int, int, int);
template void embedding_backward<double>(const int32_t*, const double*, double*, int, int, int);

}  // namespace strata::kernels
