// Embedding lookup and its gradient (kernels/ops.h) on the GPU.
//
// The backward is deterministic without atomics and gives the CPU's bits: the CPU adds the
// rows of each token into its table row in token order n = 0, 1, ..., one float addition at a
// time, and so does this kernel. Rows of the same id must be added by one thread in order, so
// the work is split by (id mod kIdGroups, channel): block (g, c-tile) walks every n in order
// (ids staged through shared memory) and adds the rows whose id falls in its group. Each
// (id, c) has one owner, every block has independent work, and with kIdGroups groups a
// thread's chain of dependent read-add-writes is about N / kIdGroups long.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace strata::kernels::cuda {

namespace {

constexpr int kIdGroups = 64, kChannels = 128, kIdChunk = 1024;

__global__ void embedding_forward_kernel(const int32_t* ids, const float* table, float* out, int N, int C) {
  const size_t total = static_cast<size_t>(N) * C;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t n = i / C, c = i % C;
    out[i] += table[static_cast<size_t>(ids[n]) * C + c];
  }
}

__global__ void embedding_backward_kernel(const int32_t* __restrict__ ids, const float* __restrict__ dout,
                                          float* __restrict__ dtable, int N, int C, int skip_id) {
  __shared__ int32_t s_ids[kIdChunk];
  const unsigned group = blockIdx.x;
  const int c = blockIdx.y * kChannels + threadIdx.x;
  for (int n0 = 0; n0 < N; n0 += kIdChunk) {
    const int len = min(kIdChunk, N - n0);
    __syncthreads();
    for (int k = threadIdx.x; k < len; k += blockDim.x) s_ids[k] = ids[n0 + k];
    __syncthreads();
    if (c >= C) continue;
    for (int k = 0; k < len; ++k) {
      const int32_t id = s_ids[k];
      if (id == skip_id || static_cast<unsigned>(id) % kIdGroups != group) continue;
      float* dst = dtable + static_cast<size_t>(id) * C + c;
      *dst = *dst + dout[static_cast<size_t>(n0 + k) * C + c];
    }
  }
}

}  // namespace

void embedding_forward(const int32_t* ids, const T* table, T* out, int N, int C) {
  const size_t total = static_cast<size_t>(N) * C;
  if (total == 0) return;
  embedding_forward_kernel<<<elementwise_blocks(total, 256), 256, 0, stream()>>>(ids, table, out, N, C);
  STRATA_CUDA_LAUNCH_CHECK();
}

void embedding_backward(const int32_t* ids, const T* dout, T* dtable, int N, int C, int skip_id) {
  if (N <= 0 || C <= 0) return;
  embedding_backward_kernel<<<dim3(kIdGroups, ceil_div(C, kChannels)), kChannels, 0, stream()>>>(ids, dout, dtable,
                                                                                                 N, C, skip_id);
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::kernels::cuda
