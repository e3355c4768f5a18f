// LayerNorm and RMS norm over the last dimension (kernels/ops.h) on the GPU: one warp per row. As on the
// CPU, the row statistics are accumulated in double and the output and input gradient are
// formed in float with the CPU's operations in the CPU's order, each rounded once (_rn
// intrinsics: nvcc would otherwise contract them into FMAs): given the same mean and rstd, an
// output element has the CPU's bits, and layernorm_apply always has the forward's.
// dgamma / dbeta are column sums in a fixed order (common.cuh).
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace strata::kernels::cuda {

namespace {

constexpr int kRowsPerBlock = 8;  // warps of 32

__device__ __forceinline__ float normalise(float x, float m, float r, float g, float b) {
  return __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(x, m), r), g), b);
}

__global__ void layernorm_forward_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                         const float* __restrict__ beta, float* __restrict__ y,
                                         float* __restrict__ mean, float* __restrict__ rstd, int N, int C,
                                         double eps) {
  const int n = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (n >= N) return;
  const float* xr = x + static_cast<size_t>(n) * C;
  double s = 0;
  for (int c = lane; c < C; c += 32) s += xr[c];
  const double m = warp_sum(s) / C;
  double v = 0;
  for (int c = lane; c < C; c += 32) {
    const double d = xr[c] - m;
    v += d * d;
  }
  const double r = 1.0 / sqrt(warp_sum(v) / C + eps);
  const float mt = static_cast<float>(m), rt = static_cast<float>(r);
  float* yr = y + static_cast<size_t>(n) * C;
  for (int c = lane; c < C; c += 32) yr[c] = normalise(xr[c], mt, rt, gamma[c], beta[c]);
  if (lane == 0) {
    mean[n] = mt;
    rstd[n] = rt;
  }
}

__global__ void layernorm_apply_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                       const float* __restrict__ beta, const float* __restrict__ mean,
                                       const float* __restrict__ rstd, float* __restrict__ y, int N, int C) {
  const int n = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (n >= N) return;
  const float* xr = x + static_cast<size_t>(n) * C;
  float* yr = y + static_cast<size_t>(n) * C;
  const float m = mean[n], r = rstd[n];
  for (int c = lane; c < C; c += 32) yr[c] = normalise(xr[c], m, r, gamma[c], beta[c]);
}

// dx = r * (dy * gamma - mean(g) - xhat * mean(g * xhat)), g = dy * gamma, xhat = (x - m) * r.
__global__ void layernorm_dx_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                    const float* __restrict__ mean, const float* __restrict__ rstd,
                                    const float* __restrict__ dy, float* __restrict__ dx, int N, int C) {
  const int n = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (n >= N) return;
  const float* xr = x + static_cast<size_t>(n) * C;
  const float* dyr = dy + static_cast<size_t>(n) * C;
  const float m = mean[n], r = rstd[n];
  double sg = 0, sgx = 0;
  for (int c = lane; c < C; c += 32) {
    const float g = __fmul_rn(dyr[c], gamma[c]);
    sg += g;
    sgx += __fmul_rn(g, __fmul_rn(__fsub_rn(xr[c], m), r));
  }
  const float mg = static_cast<float>(warp_sum(sg) / C), mgx = static_cast<float>(warp_sum(sgx) / C);
  float* dxr = dx + static_cast<size_t>(n) * C;
  for (int c = lane; c < C; c += 32) {
    const float xhat = __fmul_rn(__fsub_rn(xr[c], m), r);
    dxr[c] = __fmul_rn(r, __fsub_rn(__fsub_rn(__fmul_rn(dyr[c], gamma[c]), mg), __fmul_rn(xhat, mgx)));
  }
}

struct DgammaTerm {
  const float *x, *dy, *mean, *rstd;
  int C;
  __device__ float operator()(int n, int c) const {
    const size_t i = static_cast<size_t>(n) * C + c;
    return __fmul_rn(dy[i], __fmul_rn(__fsub_rn(x[i], mean[n]), rstd[n]));
  }
};

struct DbetaTerm {
  const float* dy;
  int C;
  __device__ float operator()(int n, int c) const { return dy[static_cast<size_t>(n) * C + c]; }
};

// RMS norm (T5LayerNorm): y = gamma * (x * r), r = 1 / sqrt(mean(x^2) + eps), as on the CPU.
__global__ void rmsnorm_forward_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                       float* __restrict__ y, float* __restrict__ rstd, int N, int C, double eps) {
  const int n = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (n >= N) return;
  const float* xr = x + static_cast<size_t>(n) * C;
  double s = 0;
  for (int c = lane; c < C; c += 32) s += static_cast<double>(xr[c]) * xr[c];
  const float rt = static_cast<float>(1.0 / sqrt(warp_sum(s) / C + eps));
  float* yr = y + static_cast<size_t>(n) * C;
  for (int c = lane; c < C; c += 32) yr[c] = __fmul_rn(gamma[c], __fmul_rn(xr[c], rt));
  if (lane == 0) rstd[n] = rt;
}

// dx = r * (dy * gamma - xhat * mean(g * xhat)), g = dy * gamma, xhat = x * r.
__global__ void rmsnorm_dx_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                  const float* __restrict__ rstd, const float* __restrict__ dy, float* __restrict__ dx,
                                  int N, int C) {
  const int n = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (n >= N) return;
  const float* xr = x + static_cast<size_t>(n) * C;
  const float* dyr = dy + static_cast<size_t>(n) * C;
  const float r = rstd[n];
  double sgx = 0;
  for (int c = lane; c < C; c += 32) sgx += __fmul_rn(__fmul_rn(dyr[c], gamma[c]), __fmul_rn(xr[c], r));
  const float mgx = static_cast<float>(warp_sum(sgx) / C);
  float* dxr = dx + static_cast<size_t>(n) * C;
  for (int c = lane; c < C; c += 32)
    dxr[c] = __fmul_rn(r, __fsub_rn(__fmul_rn(dyr[c], gamma[c]), __fmul_rn(__fmul_rn(xr[c], r), mgx)));
}

struct RmsDgammaTerm {
  const float *x, *dy, *rstd;
  int C;
  __device__ float operator()(int n, int c) const {
    const size_t i = static_cast<size_t>(n) * C + c;
    return __fmul_rn(dy[i], __fmul_rn(x[i], rstd[n]));
  }
};

}  // namespace

void layernorm_forward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, int N, int C, double eps) {
  if (N <= 0) return;
  layernorm_forward_kernel<<<ceil_div(N, kRowsPerBlock), 32 * kRowsPerBlock, 0, stream()>>>(x, gamma, beta, y, mean,
                                                                                           rstd, N, C, eps);
  STRATA_CUDA_LAUNCH_CHECK();
}

void layernorm_apply(const T* x, const T* gamma, const T* beta, const T* mean, const T* rstd, T* y, int N, int C) {
  if (N <= 0) return;
  layernorm_apply_kernel<<<ceil_div(N, kRowsPerBlock), 32 * kRowsPerBlock, 0, stream()>>>(x, gamma, beta, mean, rstd,
                                                                                         y, N, C);
  STRATA_CUDA_LAUNCH_CHECK();
}

void layernorm_backward(const T* x, const T* gamma, const T* mean, const T* rstd, const T* dy, T* dx, T* dgamma,
                        T* dbeta, int N, int C) {
  if (N <= 0) return;
  // The parameter gradients first: dx may alias dy in a caller's eyes one day; today it does
  // not (ops.h), but reading dy before writing dx costs nothing.
  add_column_sums(DgammaTerm{x, dy, mean, rstd, C}, N, C, dgamma);
  add_column_sums(DbetaTerm{dy, C}, N, C, dbeta);
  layernorm_dx_kernel<<<ceil_div(N, kRowsPerBlock), 32 * kRowsPerBlock, 0, stream()>>>(x, gamma, mean, rstd, dy, dx,
                                                                                      N, C);
  STRATA_CUDA_LAUNCH_CHECK();
}

void rmsnorm_forward(const T* x, const T* gamma, T* y, T* rstd, int N, int C, double eps) {
  if (N <= 0) return;
  rmsnorm_forward_kernel<<<ceil_div(N, kRowsPerBlock), 32 * kRowsPerBlock, 0, stream()>>>(x, gamma, y, rstd, N, C, eps);
  STRATA_CUDA_LAUNCH_CHECK();
}

void rmsnorm_backward(const T* x, const T* gamma, const T* rstd, const T* dy, T* dx, T* dgamma, int N, int C) {
  if (N <= 0) return;
  add_column_sums(RmsDgammaTerm{x, dy, rstd, C}, N, C, dgamma);
  rmsnorm_dx_kernel<<<ceil_div(N, kRowsPerBlock), 32 * kRowsPerBlock, 0, stream()>>>(x, gamma, rstd, dy, dx, N, C);
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::kernels::cuda
