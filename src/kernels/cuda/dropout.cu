// Dropout (kernels/ops.h) on the GPU: the CPU's counter-based mask (dropout_mask.cuh), so
// forward and backward, CPU and GPU, drop the same elements. One thread per element in a
// grid-stride loop; the pair of keys of an index's high word is recomputed per element (a
// mix64: cheap next to the memory traffic).
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/dropout_mask.cuh"

namespace strata::kernels::cuda {

namespace {

__global__ void dropout_kernel(const float* x, float* y, size_t n, GpuDropout d) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] = d.kept(i) ? x[i] * d.scale : 0.0f;
}

// dropout_block: element i of x is (i / cols, i % cols) of a block of a [rows, ld] tensor.
__global__ void dropout_block_kernel(const float* x, float* y, size_t n, size_t cols, size_t ld, size_t first,
                                     GpuDropout d) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] = d.kept(i / cols * ld + first + i % cols) ? x[i] * d.scale : 0.0f;
}

void run(const float* x, float* y, size_t n, float p, uint64_t seed, uint64_t stream_id) {
  if (n == 0) return;
  const GpuDropout d = GpuDropout::make(p, seed, stream_id);
  if (!d.active) {
    if (x != y) STRATA_CUDA_CHECK(cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice, stream()));
    return;
  }
  dropout_kernel<<<elementwise_blocks(n, 256), 256, 0, stream()>>>(x, y, n, d);
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace

void dropout_forward(const T* x, T* y, size_t n, float p, uint64_t seed, uint64_t stream_id) {
  run(x, y, n, p, seed, stream_id);
}

// The same mask and scale: the op is linear.
void dropout_backward(const T* dy, T* dx, size_t n, float p, uint64_t seed, uint64_t stream_id) {
  run(dy, dx, n, p, seed, stream_id);
}

void dropout_block(const T* x, T* y, size_t rows, size_t cols, size_t ld, size_t first, float p, uint64_t seed,
                   uint64_t stream_id) {
  const size_t n = rows * cols;
  if (n == 0) return;
  const GpuDropout d = GpuDropout::make(p, seed, stream_id);
  if (!d.active) {
    if (x != y) STRATA_CUDA_CHECK(cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice, stream()));
    return;
  }
  dropout_block_kernel<<<elementwise_blocks(n, 256), 256, 0, stream()>>>(x, y, n, cols, ld, first, d);
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::kernels::cuda
