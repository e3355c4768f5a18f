// Element-wise activations and the fused Linear + activation forward.
#include <cmath>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "kernels/cpu/common.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/ops.h"

namespace strata::kernels {

bool parse_activation(const char* name, Activation* out) {
  const std::string_view n(name);
  if (n == "gelu") *out = Activation::GeluErf;
  else if (n == "gelu_new" || n == "gelu_pytorch_tanh" || n == "gelu_fast") *out = Activation::GeluTanh;
  else if (n == "relu") *out = Activation::Relu;
  else if (n == "silu" || n == "swish") *out = Activation::Silu;
  else if (n == "tanh") *out = Activation::Tanh;
  else return false;
  return true;
}

namespace {
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluCoeff = 0.044715;

template <typename T>
inline T act(Activation a, T x) {
  switch (a) {
    case Activation::GeluErf: return T(0.5) * x * (T(1) + std::erf(x * T(kInvSqrt2)));
    case Activation::GeluTanh:
      return T(0.5) * x * (T(1) + std::tanh(T(kSqrt2OverPi) * (x + T(kGeluCoeff) * x * x * x)));
    case Activation::Relu: return x > T(0) ? x : T(0);
    case Activation::Silu: return x / (T(1) + std::exp(-x));
    case Activation::Tanh: return std::tanh(x);
  }
  return x;
}

template <typename T>
inline T act_grad(Activation a, T x) {
  switch (a) {
    case Activation::GeluErf:
      return T(0.5) * (T(1) + std::erf(x * T(kInvSqrt2))) + x * T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x);
    case Activation::GeluTanh: {
      const T t = std::tanh(T(kSqrt2OverPi) * (x + T(kGeluCoeff) * x * x * x));
      return T(0.5) * (T(1) + t) +
             T(0.5) * x * (T(1) - t * t) * T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCoeff) * x * x);
    }
    case Activation::Relu: return x > T(0) ? T(1) : T(0);
    case Activation::Silu: {
      const T s = T(1) / (T(1) + std::exp(-x));
      return s * (T(1) + x * (T(1) - s));
    }
    case Activation::Tanh: {
      const T t = std::tanh(x);
      return T(1) - t * t;
    }
  }
  return T(1);
}
// fp32: the same formulas through vec:: so the loops vectorise.
template <>
inline float act<float>(Activation a, float x) {
  switch (a) {
    case Activation::GeluErf: return x * vec::normal_cdf(x);
    case Activation::GeluTanh: return 0.5f * x * (1.0f + vec::tanh(float(kSqrt2OverPi) * (x + float(kGeluCoeff) * x * x * x)));
    case Activation::Relu: return x > 0.0f ? x : 0.0f;
    case Activation::Silu: return x / (1.0f + vec::exp(-x));
    case Activation::Tanh: return vec::tanh(x);
  }
  return x;
}

template <>
inline float act_grad<float>(Activation a, float x) {
  switch (a) {
    case Activation::GeluErf: return vec::normal_cdf(x) + x * float(kInvSqrt2Pi) * vec::exp(-0.5f * x * x);
    case Activation::GeluTanh: {
      const float t = vec::tanh(float(kSqrt2OverPi) * (x + float(kGeluCoeff) * x * x * x));
      return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * float(kSqrt2OverPi) * (1.0f + float(3 * kGeluCoeff) * x * x);
    }
    case Activation::Relu: return x > 0.0f ? 1.0f : 0.0f;
    case Activation::Silu: {
      const float s = 1.0f / (1.0f + vec::exp(-x));
      return s * (1.0f + x * (1.0f - s));
    }
    case Activation::Tanh: {
      const float t = vec::tanh(x);
      return 1.0f - t * t;
    }
  }
  return 1.0f;
}

// One loop per activation (the switch hoisted out), so each body vectorises.
template <Activation A, typename T>
void forward_loop(const T* x, T* y, size_t n) {
  parallel_blocks(n, [&](size_t b, size_t e) {
#pragma omp simd
    for (size_t i = b; i < e; ++i) y[i] = act<T>(A, x[i]);
  });
}

template <Activation A, typename T>
void backward_loop(const T* x, const T* dy, T* dx, size_t n) {
  parallel_blocks(n, [&](size_t b, size_t e) {
#pragma omp simd
    for (size_t i = b; i < e; ++i) dx[i] = dy[i] * act_grad<T>(A, x[i]);
  });
}

template <typename Fn>
void dispatch(Activation a, Fn fn) {
  switch (a) {
    case Activation::GeluErf: return fn(std::integral_constant<Activation, Activation::GeluErf>{});
    case Activation::GeluTanh: return fn(std::integral_constant<Activation, Activation::GeluTanh>{});
    case Activation::Relu: return fn(std::integral_constant<Activation, Activation::Relu>{});
    case Activation::Silu: return fn(std::integral_constant<Activation, Activation::Silu>{});
    case Activation::Tanh: return fn(std::integral_constant<Activation, Activation::Tanh>{});
  }
}
}  // namespace

template <typename T>
void activation_forward(Activation a, const T* x, T* y, size_t n) {
  dispatch(a, [&](auto A) { forward_loop<A.value, T>(x, y, n); });
}

template <typename T>
void activation_backward(Activation a, const T* x, const T* dy, T* dx, size_t n) {
  dispatch(a, [&](auto A) { backward_loop<A.value, T>(x, dy, dx, n); });
}

template <typename T>
void linear_act_forward(Activation a, const T* x, const T* W, const T* b, T* pre, T* y, int N, int in,
                        int out) {
  linear_forward(x, W, b, pre, N, in, out);
  activation_forward(a, pre, y, static_cast<size_t>(N) * out);
}

#define STRATA_INSTANTIATE(T)                                                            \
  template void activation_forward<T>(Activation, const T*, T*, size_t);                 \
  template void activation_backward<T>(Activation, const T*, const T*, T*, size_t);      \
  template void linear_act_forward<T>(Activation, const T*, const T*, const T*, T*, T*, int, int, int);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

}  // namespace strata::kernels
