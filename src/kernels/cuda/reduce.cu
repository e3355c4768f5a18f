// The small helpers of kernels/ops.h on the GPU: the gradient norm's sum of squares (in
// double, a fixed grid of blocks summed in block order: deterministic, common.cuh) and the
// element-wise scale, add and mul (single roundings, the CPU's bits).
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace strata::kernels::cuda {

namespace {

struct SquareTerm {
  const float* x;
  __device__ double operator()(size_t i) const {
    const double v = static_cast<double>(x[i]);
    return v * v;
  }
};

__global__ void scale_kernel(float* x, size_t n, float s) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    x[i] *= s;
}

__global__ void add_kernel(const float* a, const float* b, float* y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] = a[i] + b[i];
}

__global__ void mul_kernel(const float* a, const float* b, float* y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] = a[i] * b[i];
}

}  // namespace

double sum_squares(const T* x, size_t n) {
  if (n == 0) return 0.0;
  return deterministic_sum(SquareTerm{x}, n, 1.0);
}

void scale(T* x, size_t n, T s) {
  if (n == 0) return;
  scale_kernel<<<elementwise_blocks(n, 256), 256, 0, stream()>>>(x, n, s);
  STRATA_CUDA_LAUNCH_CHECK();
}

void add(const T* a, const T* b, T* y, size_t n) {
  if (n == 0) return;
  add_kernel<<<elementwise_blocks(n, 256), 256, 0, stream()>>>(a, b, y, n);
  STRATA_CUDA_LAUNCH_CHECK();
}

void mul(const T* a, const T* b, T* y, size_t n) {
  if (n == 0) return;
  mul_kernel<<<elementwise_blocks(n, 256), 256, 0, stream()>>>(a, b, y, n);
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::kernels::cuda
