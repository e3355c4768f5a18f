// Data movement on the GPU (kernels/ops.h, "data movement": fill, copy, copy_rows,
// gather_rows, scatter_rows, argmax_rows, cast, slice_ids, to_half, from_half) and
// ce_slice_loss, T = float. Every destination element is written once from one source element,
// so the results are exact, as on the CPU.
#include <cmath>
#include <stdexcept>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace strata::kernels::cuda {

namespace {

template <typename V>
__global__ void fill_kernel(V* x, size_t n, V value) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    x[i] = value;
}

// gather: dst[i] = src[index[i]]; scatter: dst[index[i]] = src[i]; negative indices skipped.
template <bool Scatter>
__global__ void rows_kernel(const float* src, const int32_t* index, float* dst, int rows, int cols) {
  const size_t total = static_cast<size_t>(rows) * cols;
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t i = e / cols, c = e % cols;
    const int32_t r = index[i];
    if (r < 0) continue;
    if (Scatter) dst[static_cast<size_t>(r) * cols + c] = src[e];
    else dst[e] = src[static_cast<size_t>(r) * cols + c];
  }
}

// std::max_element's answer (compared with <, the first of equal maxima): a NaN in column 0
// wins; any other NaN never does (x < NaN is false), so it is left out. Among the rest the
// larger value wins and equal values go to the smaller column: an order of its own, so any
// tree of comparisons gives the sequential scan's column.
struct Best {
  float v;
  int i;  // -1: none yet
};
__device__ __forceinline__ Best better(Best a, Best b) {
  if (b.i < 0) return a;
  if (a.i < 0) return b;
  if (a.v < b.v || (a.v == b.v && b.i < a.i)) return b;
  return a;
}

__global__ void argmax_kernel(const float* x, int cols, int32_t* out) {
  __shared__ Best s[32];
  const float* row = x + static_cast<size_t>(blockIdx.x) * cols;
  if (isnan(row[0])) {
    if (threadIdx.x == 0) out[blockIdx.x] = 0;
    return;
  }
  Best b{0.f, -1};
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = row[c];
    if (!isnan(v)) b = better(b, Best{v, c});
  }
  for (int o = 16; o > 0; o >>= 1) {
    Best other{__shfl_xor_sync(0xffffffffu, b.v, o), __shfl_xor_sync(0xffffffffu, b.i, o)};
    b = better(b, other);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) s[warp] = b;
  __syncthreads();
  if (threadIdx.x == 0) {
    Best t = s[0];
    for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w) t = better(t, s[w]);
    out[blockIdx.x] = t.i < 0 ? 0 : t.i;
  }
}

template <typename From, typename To>
__global__ void cast_kernel(const From* src, To* dst, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = static_cast<To>(src[i]);  // round to nearest, as the CPU's conversion
}

__global__ void slice_ids_kernel(const int32_t* ids, int n, int first, int rows, int skip_id, int32_t* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int32_t r = ids[i] - first;
  out[i] = ids[i] != skip_id && r >= 0 && r < rows ? r : -1;
}

__global__ void to_half_kernel(bool bf16, const float* x, uint16_t* y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] = to_half_bits(bf16, x[i]);
}

__global__ void from_half_kernel(bool bf16, const uint16_t* x, float* y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] = from_half_bits(bf16, x[i]);
}

struct CeSliceLossTerm {
  const int32_t* labels;
  const float* mx;
  const double *sumexp, *target;
  __device__ double operator()(size_t n) const {
    if (labels[n] == -100) return 0.0;
    return log(sumexp[n]) + static_cast<double>(mx[n]) - target[n];
  }
};

}  // namespace

void fill(T* x, size_t n, T value) {
  if (n == 0) return;
  fill_kernel<float><<<elementwise_blocks(n, 256), 256, 0, stream()>>>(x, n, value);
  STRATA_CUDA_LAUNCH_CHECK();
}

void copy(const T* src, T* dst, size_t n) {
  if (n == 0) return;
  STRATA_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, stream()));
}

void copy_rows(const T* src, size_t ld_src, T* dst, size_t ld_dst, size_t rows, size_t cols) {
  if (rows == 0 || cols == 0) return;
  STRATA_CUDA_CHECK(cudaMemcpy2DAsync(dst, ld_dst * sizeof(float), src, ld_src * sizeof(float), cols * sizeof(float),
                                      rows, cudaMemcpyDeviceToDevice, stream()));
}

void gather_rows(const T* src, const int32_t* index, T* dst, int rows, int cols) {
  const size_t total = static_cast<size_t>(rows) * cols;
  if (total == 0) return;
  rows_kernel<false><<<elementwise_blocks(total, 256), 256, 0, stream()>>>(src, index, dst, rows, cols);
  STRATA_CUDA_LAUNCH_CHECK();
}

void scatter_rows(const T* src, const int32_t* index, T* dst, int rows, int cols) {
  const size_t total = static_cast<size_t>(rows) * cols;
  if (total == 0) return;
  rows_kernel<true><<<elementwise_blocks(total, 256), 256, 0, stream()>>>(src, index, dst, rows, cols);
  STRATA_CUDA_LAUNCH_CHECK();
}

void argmax_rows(const T* x, int rows, int cols, int32_t* out) {
  if (rows <= 0 || cols <= 0) return;
  argmax_kernel<<<rows, 256, 0, stream()>>>(x, cols, out);
  STRATA_CUDA_LAUNCH_CHECK();
}

void cast(const float* src, double* dst, size_t n) {
  if (n == 0) return;
  cast_kernel<float, double><<<elementwise_blocks(n, 256), 256, 0, stream()>>>(src, dst, n);
  STRATA_CUDA_LAUNCH_CHECK();
}

void cast(const double* src, float* dst, size_t n) {
  if (n == 0) return;
  cast_kernel<double, float><<<elementwise_blocks(n, 256), 256, 0, stream()>>>(src, dst, n);
  STRATA_CUDA_LAUNCH_CHECK();
}

void slice_ids(const int32_t* ids, int n, int first, int rows, int skip_id, int32_t* out) {
  if (n <= 0) return;
  slice_ids_kernel<<<(n + 255) / 256, 256, 0, stream()>>>(ids, n, first, rows, skip_id, out);
  STRATA_CUDA_LAUNCH_CHECK();
}

void to_half(MatmulPrecision p, const float* x, uint16_t* y, size_t n) {
  if (p == MatmulPrecision::Fp32) throw std::logic_error("kernels::to_half: fp32 has no half storage");
  if (n == 0) return;
  to_half_kernel<<<elementwise_blocks(n, 256), 256, 0, stream()>>>(p == MatmulPrecision::Bf16, x, y, n);
  STRATA_CUDA_LAUNCH_CHECK();
}

void from_half(MatmulPrecision p, const uint16_t* x, float* y, size_t n) {
  if (p == MatmulPrecision::Fp32) throw std::logic_error("kernels::from_half: fp32 has no half storage");
  if (n == 0) return;
  from_half_kernel<<<elementwise_blocks(n, 256), 256, 0, stream()>>>(p == MatmulPrecision::Bf16, x, y, n);
  STRATA_CUDA_LAUNCH_CHECK();
}

double ce_slice_loss(const int32_t* labels, const T* mx, const double* sumexp, const double* target, int N,
                     double norm) {
  if (N <= 0) return 0.0;
  return deterministic_sum(CeSliceLossTerm{labels, mx, sumexp, target}, static_cast<size_t>(N), norm);
}

}  // namespace strata::kernels::cuda
