// Fused AdamW and SGD (kernels/ops.h) on the GPU: the CPU's formulas (kernels/cpu/simd/
// optim.inc) in the CPU's precision, constants formed in double on the host and rounded to
// float once, per-element arithmetic in float. Each operation is written with the _rn
// intrinsics, which nvcc never contracts into a fused multiply-add: the CPU's copies are
// compiled without contraction, sqrt and division are correctly rounded on both, so an update
// gives the CPU's bits.
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace strata::kernels::cuda {

namespace {

struct AdamConstants {
  float decay, b1, b2, one_minus_b1, one_minus_b2, step_size, bc2_sqrt, eps;
};

__global__ void adamw_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                             float* __restrict__ v, size_t n, AdamConstants c) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    // mi = b1 * m + (1-b1) * g; vi = b2 * v + (1-b2) * g * g
    const float mi = __fadd_rn(__fmul_rn(c.b1, m[i]), __fmul_rn(c.one_minus_b1, gi));
    const float vi = __fadd_rn(__fmul_rn(c.b2, v[i]), __fmul_rn(__fmul_rn(c.one_minus_b2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    // p = p * decay - step_size * mi / (sqrt(vi) / bc2_sqrt + eps)
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), c.bc2_sqrt), c.eps);
    p[i] = __fsub_rn(__fmul_rn(p[i], c.decay), __fdiv_rn(__fmul_rn(c.step_size, mi), denom));
  }
}

struct SgdConstants {
  float lr, wd, mom, damp;
  bool momentum, nesterov, first_step;
};

__global__ void sgd_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ buf, size_t n,
                           SgdConstants c) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float d = __fadd_rn(g[i], __fmul_rn(c.wd, p[i]));
    if (c.momentum) {
      const float b = c.first_step ? d : __fadd_rn(__fmul_rn(c.mom, buf[i]), __fmul_rn(c.damp, d));
      buf[i] = b;
      d = c.nesterov ? __fadd_rn(d, __fmul_rn(c.mom, b)) : b;
    }
    p[i] = __fsub_rn(p[i], __fmul_rn(c.lr, d));
  }
}

}  // namespace

void adamw_update(T* p, const T* g, T* m, T* v, size_t n, const AdamWParams& a) {
  if (n == 0) return;
  const double bc1 = 1.0 - std::pow(a.beta1, static_cast<double>(a.step));
  const double bc2 = 1.0 - std::pow(a.beta2, static_cast<double>(a.step));
  AdamConstants c;
  c.decay = static_cast<float>(1.0 - a.lr * a.weight_decay);
  c.b1 = static_cast<float>(a.beta1);
  c.b2 = static_cast<float>(a.beta2);
  c.one_minus_b1 = static_cast<float>(1.0 - a.beta1);  // in double, as the CPU (and PyTorch)
  c.one_minus_b2 = static_cast<float>(1.0 - a.beta2);
  c.step_size = static_cast<float>(a.lr / bc1);
  c.bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  c.eps = static_cast<float>(a.eps);
  adamw_kernel<<<elementwise_blocks(n, 256), 256, 0, stream()>>>(p, g, m, v, n, c);
  STRATA_CUDA_LAUNCH_CHECK();
}

void sgd_update(T* p, const T* g, T* buf, size_t n, const SGDParams& a) {
  if (n == 0) return;
  SgdConstants c;
  c.lr = static_cast<float>(a.lr);
  c.wd = static_cast<float>(a.weight_decay);
  c.mom = static_cast<float>(a.momentum);
  c.damp = static_cast<float>(1.0 - a.dampening);
  c.momentum = a.momentum != 0.0;
  c.nesterov = a.nesterov;
  c.first_step = a.first_step;
  sgd_kernel<<<elementwise_blocks(n, 256), 256, 0, stream()>>>(p, g, buf, n, c);
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::kernels::cuda
