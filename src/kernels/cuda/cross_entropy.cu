// The losses of kernels/ops.h on the GPU. Cross entropy is fused: one block per row finds the
// row's max and its sum of exponentials in a single pass (online softmax: each thread keeps a
// running max and a sum rescaled when the max grows, in double like the CPU's sum), then
// writes dlogits = softmax / norm - onehot / norm in a second pass; no probability is stored
// anywhere but in dlogits. Row losses go to scratch and are summed in row-index order by one
// block (deterministic), and the total comes back to the host as one double.
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace strata::kernels::cuda {

namespace {

constexpr int kRowThreads = 512;

// Every thread gets the row's max and sum of exp(x - max) (double).
__device__ void row_max_sumexp(const float* x, int V, float& mx, double& sum) {
  __shared__ float s_max[32];
  __shared__ double s_sum[32];
  float m = -INFINITY;
  double s = 0;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    const float xv = x[v];
    if (xv > m) {
      s = s * static_cast<double>(expf(m - xv)) + 1.0;  // expf(-inf) = 0 on the first element
      m = xv;
    } else {
      s += static_cast<double>(expf(xv - m));
    }
  }
  mx = block_max(m, s_max);
  const double mine = m == -INFINITY ? 0.0 : s * static_cast<double>(expf(m - mx));
  sum = block_sum(mine, s_sum);
}

__global__ void cross_entropy_kernel(const float* __restrict__ logits, const int32_t* __restrict__ labels,
                                     float* __restrict__ dlogits, int V, double norm, double* __restrict__ row_loss) {
  const int n = blockIdx.x;
  const float* x = logits + static_cast<size_t>(n) * V;
  float* dx = dlogits ? dlogits + static_cast<size_t>(n) * V : nullptr;
  const int label = labels[n];
  if (label == -100) {
    if (dx)
      for (int v = threadIdx.x; v < V; v += blockDim.x) dx[v] = 0.0f;
    if (threadIdx.x == 0) row_loss[n] = 0.0;
    return;
  }
  float mx;
  double sum;
  row_max_sumexp(x, V, mx, sum);
  if (threadIdx.x == 0) row_loss[n] = log(sum) + static_cast<double>(mx) - static_cast<double>(x[label]);
  if (!dx) return;
  const float s = static_cast<float>(1.0 / (sum * norm)), one = static_cast<float>(1.0 / norm);
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    const float d = expf(x[v] - mx) * s;
    dx[v] = v == label ? d - one : d;
  }
}

__global__ void row_max_kernel(const float* __restrict__ logits, int V, float* __restrict__ mx) {
  __shared__ float s_max[32];
  const float* x = logits + static_cast<size_t>(blockIdx.x) * V;
  float m = -INFINITY;
  for (int v = threadIdx.x; v < V; v += blockDim.x) m = fmaxf(m, x[v]);
  m = block_max(m, s_max);
  if (threadIdx.x == 0) mx[blockIdx.x] = m;
}

__global__ void slice_exp_kernel(const float* __restrict__ logits, const int32_t* __restrict__ labels,
                                 const float* __restrict__ mx, int V, int v0, float* __restrict__ e,
                                 double* __restrict__ sumexp, double* __restrict__ target) {
  __shared__ double s_sum[32];
  const int n = blockIdx.x;
  const float* x = logits + static_cast<size_t>(n) * V;
  float* ex = e + static_cast<size_t>(n) * V;
  const int label = labels[n];
  if (label == -100) {
    for (int v = threadIdx.x; v < V; v += blockDim.x) ex[v] = 0.0f;
    if (threadIdx.x == 0) sumexp[n] = target[n] = 0.0;
    return;
  }
  const float m = mx[n];
  double s = 0;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    const float ev = expf(x[v] - m);
    ex[v] = ev;
    s += ev;
  }
  s = block_sum(s, s_sum);
  if (threadIdx.x == 0) {
    sumexp[n] = s;
    const int local = label - v0;
    target[n] = local >= 0 && local < V ? static_cast<double>(x[local]) : 0.0;
  }
}

__global__ void slice_grad_kernel(float* __restrict__ e, const int32_t* __restrict__ labels,
                                  const double* __restrict__ sumexp, int V, int v0, double norm) {
  const int n = blockIdx.x;
  const int label = labels[n];
  if (label == -100) return;
  float* ex = e + static_cast<size_t>(n) * V;
  const float s = static_cast<float>(1.0 / (sumexp[n] * norm)), one = static_cast<float>(1.0 / norm);
  const int local = label - v0;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    const float d = ex[v] * s;
    ex[v] = v == local ? d - one : d;
  }
}

struct MseTerm {
  const float* x;
  const double* target;
  float* dx;
  double norm;
  __device__ double operator()(size_t i) const {
    const double d = static_cast<double>(x[i]) - target[i];
    if (dx) dx[i] = static_cast<float>(2.0 * d / norm);
    return d * d;
  }
};

struct BceTerm {
  const float* x;
  const double* target;
  float* dx;
  double norm;
  __device__ double operator()(size_t i) const {
    const double z = x[i], y = target[i];
    if (dx) dx[i] = static_cast<float>((1.0 / (1.0 + exp(-z)) - y) / norm);
    // max(z,0) - z*y + log(1 + exp(-|z|)): no overflow for any z.
    return fmax(z, 0.0) - z * y + log1p(exp(-fabs(z)));
  }
};

}  // namespace

double cross_entropy(const T* logits, const int32_t* labels, T* dlogits, int N, int V, double norm) {
  if (N <= 0) return 0.0;
  Scratch scratch((static_cast<size_t>(N) + 1) * sizeof(double));
  double* row_loss = scratch.as<double>();
  cross_entropy_kernel<<<N, kRowThreads, 0, stream()>>>(logits, labels, dlogits, V, norm, row_loss);
  STRATA_CUDA_LAUNCH_CHECK();
  sum_partials_kernel<double><<<1, 1024, 0, stream()>>>(row_loss, N, norm, row_loss + N);
  STRATA_CUDA_LAUNCH_CHECK();
  return download_scalar(row_loss + N);
}

void ce_slice_row_max(const T* logits, int N, int V, T* mx) {
  if (N <= 0) return;
  row_max_kernel<<<N, kRowThreads, 0, stream()>>>(logits, V, mx);
  STRATA_CUDA_LAUNCH_CHECK();
}

void ce_slice_exp(const T* logits, const int32_t* labels, const T* mx, int N, int V, int v0, T* e, double* sumexp,
                  double* target) {
  if (N <= 0) return;
  slice_exp_kernel<<<N, kRowThreads, 0, stream()>>>(logits, labels, mx, V, v0, e, sumexp, target);
  STRATA_CUDA_LAUNCH_CHECK();
}

void ce_slice_grad(T* e, const int32_t* labels, const double* sumexp, int N, int V, int v0, double norm) {
  if (N <= 0) return;
  slice_grad_kernel<<<N, kRowThreads, 0, stream()>>>(e, labels, sumexp, V, v0, norm);
  STRATA_CUDA_LAUNCH_CHECK();
}

double mse(const T* x, const double* target, T* dx, size_t n, double norm) {
  if (n == 0) return 0.0;
  return deterministic_sum(MseTerm{x, target, dx, norm}, n, norm);
}

double bce_with_logits(const T* x, const double* target, T* dx, size_t n, double norm) {
  if (n == 0) return 0.0;
  return deterministic_sum(BceTerm{x, target, dx, norm}, n, norm);
}

}  // namespace strata::kernels::cuda
