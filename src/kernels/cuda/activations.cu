// The activations of kernels/ops.h on the GPU, element-wise in float with CUDA's accurate
// functions (normcdff, tanhf, expf: a few ulp, within the CPU's vec:: polynomials' error of
// the exact values). One kernel per activation (a template), so the switch is hoisted out.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace strata::kernels::cuda {

namespace {

constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kGeluCoeff = 0.044715f;

template <Activation A>
__device__ __forceinline__ void act_and_grad(float x, float& y, float& g) {
  if constexpr (A == Activation::GeluErf) {
    const float c = normcdff(x);
    y = x * c;
    g = c + x * kInvSqrt2Pi * expf(-0.5f * x * x);
  } else if constexpr (A == Activation::GeluTanh) {
    const float t = tanhf(kSqrt2OverPi * (x + kGeluCoeff * x * x * x));
    y = 0.5f * x * (1.0f + t);
    g = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCoeff * x * x);
  } else if constexpr (A == Activation::Relu) {
    y = x > 0.0f ? x : 0.0f;
    g = x > 0.0f ? 1.0f : 0.0f;
  } else if constexpr (A == Activation::Silu) {
    const float s = 1.0f / (1.0f + expf(-x));
    y = x / (1.0f + expf(-x));
    g = s * (1.0f + x * (1.0f - s));
  } else {
    const float t = tanhf(x);
    y = t;
    g = 1.0f - t * t;
  }
}

// The compiler drops whichever of y and g a kernel does not store.
template <Activation A>
__global__ void forward_kernel(const float* x, float* y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float v, g;
    act_and_grad<A>(x[i], v, g);
    y[i] = v;
  }
}

template <Activation A>
__global__ void backward_kernel(const float* x, const float* dy, float* dx, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float v, g;
    act_and_grad<A>(x[i], v, g);
    dx[i] = dy[i] * g;
  }
}

// g may alias x: x[i] is read before g[i] is written, by the same thread.
template <Activation A>
__global__ void value_and_grad_kernel(const float* x, float* y, float* g, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float v, d;
    act_and_grad<A>(x[i], v, d);
    y[i] = v;
    g[i] = d;
  }
}

template <template <Activation> class Launch, typename... Args>
void with_activation(Activation a, Args... args) {
  switch (a) {
    case Activation::GeluErf: return Launch<Activation::GeluErf>::run(args...);
    case Activation::GeluTanh: return Launch<Activation::GeluTanh>::run(args...);
    case Activation::Relu: return Launch<Activation::Relu>::run(args...);
    case Activation::Silu: return Launch<Activation::Silu>::run(args...);
    case Activation::Tanh: return Launch<Activation::Tanh>::run(args...);
  }
}

template <Activation A>
struct Forward {
  static void run(const float* x, float* y, size_t n) {
    forward_kernel<A><<<elementwise_blocks(n, 256), 256, 0, stream()>>>(x, y, n);
  }
};
template <Activation A>
struct Backward {
  static void run(const float* x, const float* dy, float* dx, size_t n) {
    backward_kernel<A><<<elementwise_blocks(n, 256), 256, 0, stream()>>>(x, dy, dx, n);
  }
};
template <Activation A>
struct ValueAndGrad {
  static void run(const float* x, float* y, float* g, size_t n) {
    value_and_grad_kernel<A><<<elementwise_blocks(n, 256), 256, 0, stream()>>>(x, y, g, n);
  }
};

}  // namespace

void activation_forward(Activation a, const T* x, T* y, size_t n) {
  if (n == 0) return;
  with_activation<Forward>(a, x, y, n);
  STRATA_CUDA_LAUNCH_CHECK();
}

void activation_backward(Activation a, const T* x, const T* dy, T* dx, size_t n) {
  if (n == 0) return;
  with_activation<Backward>(a, x, dy, dx, n);
  STRATA_CUDA_LAUNCH_CHECK();
}

void activation_value_and_grad(Activation a, const T* x, T* y, T* g, size_t n) {
  if (n == 0) return;
  with_activation<ValueAndGrad>(a, x, y, g, n);
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::kernels::cuda
