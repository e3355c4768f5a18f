// Activation names and the fused Linear + activation forward; the element-wise loops are in
// simd/activations.inc.
#include <string_view>

#include "kernels/cpu/cpu_ops.h"

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

namespace cpu {

template <typename T>
void linear_act_forward(Activation a, const T* x, const T* W, const T* b, T* pre, T* y, int N, int in,
                        int out) {
  cpu::linear_forward<T>(x, W, b, pre, N, in, out);
  cpu::activation_forward<T>(a, pre, y, static_cast<size_t>(N) * out);
}

template void linear_act_forward<float>(Activation, const float*, const float*, const float*, float*, float*, int,
                                        int, int);
template void linear_act_forward<double>(Activation, const double*, const double*, const double*, double*, double*,
                                         int, int, int);

}  // namespace cpu

}  // namespace strata::kernels
