// Helpers shared by the kernels of kernels/cuda/*.cu (not part of the op interface): the
// compute stream, launch checks, warp and block reductions in a fixed order, scratch memory
// from the caching allocator, and the scalar round trip of the double-returning ops.
//
// Determinism: every reduction here combines its terms in an order that depends only on the
// sizes (the launch shape is a function of the sizes, never of the GPU), and nothing uses
// atomics, so a kernel gives the same bits on every run.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/matmul_precision.h"

namespace strata::kernels::cuda {

inline cudaStream_t stream() { return static_cast<cudaStream_t>(compute_stream()); }

// After every launch: a bad configuration is reported at the op that made it.
#define STRATA_CUDA_LAUNCH_CHECK() STRATA_CUDA_CHECK(cudaGetLastError())

inline unsigned ceil_div(size_t a, size_t b) { return static_cast<unsigned>((a + b - 1) / b); }

// Grid for an element-wise kernel over n elements with a grid-stride loop: capped so the
// grid is a function of n alone (never of the GPU's SM count).
inline unsigned elementwise_blocks(size_t n, unsigned threads) {
  const size_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

// x rounded to bf16 (bf16 true) or fp16, nearest even as the CPU's float_to_bf16 /
// float_to_half (a nan stays a nan; its payload may differ), as those 16 bits; and back.
__device__ __forceinline__ uint16_t to_half_bits(bool bf16, float x) {
  return bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(x)) : __half_as_ushort(__float2half_rn(x));
}
__device__ __forceinline__ float from_half_bits(bool bf16, uint16_t h) {
  return bf16 ? __bfloat162float(__ushort_as_bfloat16(h)) : __half2float(__ushort_as_half(h));
}

// Device scratch from the caching allocator, freed when it goes out of scope. Freeing while
// kernels queued on the compute stream still use it is safe: the allocator hands the block
// only to later work on the same stream (kernels/cuda/device.cu).
class Scratch {
 public:
  explicit Scratch(size_t bytes)
      : bytes_(bytes), p_(bytes ? device_alloc(current_device(), bytes) : nullptr) {}
  ~Scratch() { device_free(current_device(), p_, bytes_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <typename U>
  U* as() const {
    return static_cast<U*>(p_);
  }

 private:
  size_t bytes_;
  void* p_;
};

// One double from device memory to the host: the only host round trip an op makes (the ops
// that return a loss or a sum). Synchronises the compute stream.
inline double download_scalar(const double* d) {
  double h = 0;
  copy(&h, false, d, true, sizeof h, compute_stream(), true);
  return h;
}

// ---- reductions, fixed order ---------------------------------------------------------------
template <typename V>
__device__ __forceinline__ V warp_sum(V v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the
// total. `shared` holds 32 values. The same tree for the same blockDim: deterministic.
template <typename V>
__device__ V block_sum(V v, V* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // shared may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : V(0);
  return warp_sum(v);
}

__device__ inline float block_max(float v, float* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : -INFINITY;
  return warp_max(v);
}

// Sums partial[0..count) in one block of 1024 threads, in a fixed order, into *out (optionally
// divided by `div`). The second stage of every deterministic double reduction here.
// (Kernels in this header are templates so that each .cu file gets its own copy: without
// relocatable device code a kernel must be defined in the file that launches it.)
template <typename V = double>
__global__ void sum_partials_kernel(const V* partial, int count, double div, double* out) {
  __shared__ V s[32];
  V acc = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) acc += partial[i];
  acc = block_sum(acc, s);
  if (threadIdx.x == 0) *out = static_cast<double>(acc) / div;
}

// The deterministic sum of term(i) over i < n in double: a fixed grid of blocks, each summing
// a grid-stride subset in a fixed tree, then the block sums in block order. Returns a device
// pointer into `scratch` (which must hold kReduceBlocks + 1 doubles) holding sum / div.
constexpr int kReduceBlocks = 256, kReduceThreads = 256;

template <typename Term>
__global__ void reduce_partial_kernel(Term term, size_t n, double* partial) {
  __shared__ double s[32];
  double acc = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    acc += term(i);
  acc = block_sum(acc, s);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

template <typename Term>
double deterministic_sum(Term term, size_t n, double div) {
  Scratch scratch((kReduceBlocks + 1) * sizeof(double));
  double* partial = scratch.as<double>();
  reduce_partial_kernel<<<kReduceBlocks, kReduceThreads, 0, stream()>>>(term, n, partial);
  STRATA_CUDA_LAUNCH_CHECK();
  sum_partials_kernel<double><<<1, 1024, 0, stream()>>>(partial, kReduceBlocks, div, partial + kReduceBlocks);
  STRATA_CUDA_LAUNCH_CHECK();
  return download_scalar(partial + kReduceBlocks);
}

// sums[c] += sum over n < N of term(n, c), for c < C, in a fixed order: rows are cut into
// chunks of kColChunk, each chunk's column sums go to scratch, then the chunks are added in
// order. Used for bias gradients and layer norm's dgamma / dbeta.
constexpr int kColChunk = 128;

template <typename Term>
__global__ void column_partial_kernel(Term term, int N, int C, float* partial) {
  // block (32, 8): 32 columns, 8 row lanes each summing every 8th row of the chunk
  __shared__ float s[8][33];
  const int c = blockIdx.x * 32 + threadIdx.x;
  const int n0 = blockIdx.y * kColChunk, n1 = min(N, n0 + kColChunk);
  float acc = 0.f;
  if (c < C)
    for (int n = n0 + threadIdx.y; n < n1; n += 8) acc += term(n, c);
  s[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float t = 0.f;
#pragma unroll
    for (int k = 0; k < 8; ++k) t += s[k][threadIdx.x];
    partial[static_cast<size_t>(blockIdx.y) * C + c] = t;
  }
}

template <typename V = float>
__global__ void column_finish_kernel(const V* partial, int chunks, int C, V* sums) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  V t = 0;
  for (int k = 0; k < chunks; ++k) t += partial[static_cast<size_t>(k) * C + c];
  sums[c] += t;
}

template <typename Term>
void add_column_sums(Term term, int N, int C, float* sums) {
  if (N <= 0 || C <= 0) return;
  const int chunks = static_cast<int>(ceil_div(N, kColChunk));
  Scratch scratch(static_cast<size_t>(chunks) * C * sizeof(float));
  column_partial_kernel<<<dim3(ceil_div(C, 32), chunks), dim3(32, 8), 0, stream()>>>(term, N, C,
                                                                                     scratch.as<float>());
  STRATA_CUDA_LAUNCH_CHECK();
  column_finish_kernel<float><<<ceil_div(C, 256), 256, 0, stream()>>>(scratch.as<float>(), chunks, C, sums);
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::kernels::cuda
