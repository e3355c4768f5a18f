// The softmax of attention scores computed by products of their own (kernels/ops.h:
// scores_softmax and its backward), T = float: one block per row of Tk keys, the maximum in
// float (exact), the sums and the dot product in double over a fixed tree, as the CPU sums in
// double. The position bias's gradient adds rows b = 0, 1, ... in turn per element, the CPU's
// order, so it needs no atomics.
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace strata::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void scores_softmax_kernel(float* S, const float* pos_bias, const int32_t* mask, int NH, int Tq, int Tk,
                                      bool causal, int first_query) {
  __shared__ float smax[32];
  __shared__ double ssum[32];
  const int r = blockIdx.x, i = r % Tq, h = (r / Tq) % NH, b = r / (Tq * NH);
  float* row = S + static_cast<size_t>(r) * Tk;
  auto valid = [&](int j) {
    return (!mask || mask[static_cast<size_t>(b) * Tk + j] != 0) && (!causal || j <= first_query + i);
  };
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < Tk; j += blockDim.x) {
    float v = row[j];
    if (pos_bias) row[j] = v = v + pos_bias[(static_cast<size_t>(i) * Tk + j) * NH + h];
    if (valid(j)) mx = fmaxf(mx, v);
  }
  mx = block_max(mx, smax);
  if (mx == -INFINITY) {
    for (int j = threadIdx.x; j < Tk; j += blockDim.x) row[j] = static_cast<float>(1.0 / Tk);
    return;
  }
  double sum = 0;
  for (int j = threadIdx.x; j < Tk; j += blockDim.x) {
    const double e = valid(j) ? exp(static_cast<double>(row[j]) - mx) : 0.0;
    row[j] = static_cast<float>(e);
    sum += e;
  }
  sum = block_sum(sum, ssum);
  for (int j = threadIdx.x; j < Tk; j += blockDim.x) row[j] = static_cast<float>(row[j] / sum);
}

// G <- d(scores) = P (G - dot), unscaled: the bias kernel reads it before the scaling.
__global__ void softmax_grad_kernel(const float* P, float* G, int Tk) {
  __shared__ double ssum[32];
  const size_t base = static_cast<size_t>(blockIdx.x) * Tk;
  double dot = 0;
  for (int j = threadIdx.x; j < Tk; j += blockDim.x) dot += static_cast<double>(G[base + j]) * P[base + j];
  dot = block_sum(dot, ssum);
  for (int j = threadIdx.x; j < Tk; j += blockDim.x)
    G[base + j] = static_cast<float>(P[base + j] * (G[base + j] - dot));
}

// d_pos_bias[(i*Tk + j)*NH + h] += G[b, h, i, j] for b = 0, 1, ...: one thread per element.
__global__ void bias_grad_kernel(const float* G, float* d_pos_bias, int B, int NH, int Tq, int Tk) {
  const size_t n = static_cast<size_t>(NH) * Tq * Tk;
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t h = e % NH, ij = e / NH;  // d_pos_bias's own layout: (i*Tk + j)*NH + h
    float acc = d_pos_bias[e];
    for (int b = 0; b < B; ++b) acc += G[(static_cast<size_t>(b) * NH + h) * Tq * Tk + ij];
    d_pos_bias[e] = acc;
  }
}

__global__ void scale_kernel(float* x, size_t n, float s) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    x[i] *= s;
}

}  // namespace

void scores_softmax(T* S, const T* pos_bias, const int32_t* mask, int B, int NH, int Tq, int Tk, bool causal,
                    int first_query) {
  const int rows = B * NH * Tq;
  if (rows <= 0 || Tk <= 0) return;
  scores_softmax_kernel<<<rows, kThreads, 0, stream()>>>(S, pos_bias, mask, NH, Tq, Tk, causal, first_query);
  STRATA_CUDA_LAUNCH_CHECK();
}

void scores_softmax_backward(const T* P, T* G, T* d_pos_bias, int B, int NH, int Tq, int Tk, T scale) {
  const int rows = B * NH * Tq;
  if (rows <= 0 || Tk <= 0) return;
  softmax_grad_kernel<<<rows, kThreads, 0, stream()>>>(P, G, Tk);
  STRATA_CUDA_LAUNCH_CHECK();
  const size_t bias = static_cast<size_t>(NH) * Tq * Tk;
  if (d_pos_bias) {
    bias_grad_kernel<<<elementwise_blocks(bias, kThreads), kThreads, 0, stream()>>>(G, d_pos_bias, B, NH, Tq, Tk);
    STRATA_CUDA_LAUNCH_CHECK();
  }
  const size_t n = static_cast<size_t>(rows) * Tk;
  scale_kernel<<<elementwise_blocks(n, kThreads), kThreads, 0, stream()>>>(G, n, scale);
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::kernels::cuda
