// Losses return sum(per-element loss) / norm and write the matching gradient. The caller
// chooses norm (the number of labels in the whole, possibly accumulated or distributed,
// batch), which is what makes gradient accumulation equal one big batch. Cross entropy is in
// simd/cross_entropy.inc.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_ops.h"

namespace strata::kernels::cpu {

template <typename T>
double mse(const T* x, const double* target, T* dx, size_t n, double norm) {
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - target[i];
    total += d * d;
    if (dx) dx[i] = static_cast<T>(2.0 * d / norm);
  }
  return total / norm;
}

template <typename T>
double bce_with_logits(const T* x, const double* target, T* dx, size_t n, double norm) {
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    const double z = x[i], y = target[i];
    // max(z,0) - z*y + log(1 + exp(-|z|)): no overflow for any z.
    total += std::max(z, 0.0) - z * y + std::log1p(std::exp(-std::abs(z)));
    if (dx) dx[i] = static_cast<T>((1.0 / (1.0 + std::exp(-z)) - y) / norm);
  }
  return total / norm;
}

template <typename T>
double ce_slice_loss(const int32_t* labels, const T* mx, const double* sumexp, const double* target, int N,
                     double norm) {
  double total = 0;
  for (int n = 0; n < N; ++n)
    if (labels[n] != -100) total += std::log(sumexp[n]) + static_cast<double>(mx[n]) - target[n];
  return total / norm;
}

template double ce_slice_loss<float>(const int32_t*, const float*, const double*, const double*, int, double);
template double ce_slice_loss<double>(const int32_t*, const double*, const double*, const double*, int, double);
template double mse<float>(const float*, const double*, float*, size_t, double);
template double mse<double>(const double*, const double*, double*, size_t, double);
template double bce_with_logits<float>(const float*, const double*, float*, size_t, double);
template double bce_with_logits<double>(const double*, const double*, double*, size_t, double);

}  // namespace strata::kernels::cpu
