// LayerNorm over the last dimension. Statistics are accumulated in double so fp32 results
// match PyTorch's to rounding; dgamma/dbeta are column sums in fixed row order.
#include <algorithm>
#include <cmath>

#include "kernels/ops.h"

namespace strata::kernels {

template <typename T>
void layernorm_forward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, int N,
                       int C, double eps) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* xr = x + static_cast<size_t>(n) * C;
    T* yr = y + static_cast<size_t>(n) * C;
    double s = 0;
    for (int c = 0; c < C; ++c) s += xr[c];
    const double m = s / C;
    double v = 0;
    for (int c = 0; c < C; ++c) v += (xr[c] - m) * (xr[c] - m);
    const double r = 1.0 / std::sqrt(v / C + eps);
    const T mt = static_cast<T>(m), rt = static_cast<T>(r);
    for (int c = 0; c < C; ++c) yr[c] = (xr[c] - mt) * rt * gamma[c] + beta[c];
    mean[n] = mt;
    rstd[n] = rt;
  }
}

template <typename T>
void layernorm_backward(const T* x, const T* gamma, const T* mean, const T* rstd, const T* dy,
                        T* dx, T* dgamma, T* dbeta, int N, int C) {
  // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* xr = x + static_cast<size_t>(n) * C;
    const T* dyr = dy + static_cast<size_t>(n) * C;
    T* dxr = dx + static_cast<size_t>(n) * C;
    const T m = mean[n], r = rstd[n];
    double sg = 0, sgx = 0;
    for (int c = 0; c < C; ++c) {
      const T g = dyr[c] * gamma[c];
      sg += g;
      sgx += g * ((xr[c] - m) * r);
    }
    const T mg = static_cast<T>(sg / C), mgx = static_cast<T>(sgx / C);
    for (int c = 0; c < C; ++c) {
      const T xhat = (xr[c] - m) * r;
      dxr[c] = r * (dyr[c] * gamma[c] - mg - xhat * mgx);
    }
  }
  constexpr int kBlock = 64;
  const int blocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < blocks; ++blk) {
    const int c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
    T ag[kBlock] = {}, ab[kBlock] = {};
    for (int n = 0; n < N; ++n) {
      const T* xr = x + static_cast<size_t>(n) * C;
      const T* dyr = dy + static_cast<size_t>(n) * C;
      const T m = mean[n], r = rstd[n];
      for (int c = c0; c < c1; ++c) {
        ag[c - c0] += dyr[c] * ((xr[c] - m) * r);
        ab[c - c0] += dyr[c];
      }
    }
    for (int c = c0; c < c1; ++c) {
      dgamma[c] += ag[c - c0];
      dbeta[c] += ab[c - c0];
    }
  }
}

template void layernorm_forward<float>(const float*, const float*, const float*, float*, float*, float*,
                                       int, int, double);
template void layernorm_forward<double>(const double*, const double*, const double*, double*, double*,
                                        double*, int, int, double);
template void layernorm_backward<float>(const float*, const float*, const float*, const float*,
                                        const float*, float*, float*, float*, int, int);
template void layernorm_backward<double>(const double*, const double*, const double*, const double*,
                                         const double*, double*, double*, double*, int, int);

}  // namespace strata::kernels
