// Losses return sum(per-element loss) / norm and write the matching gradient. The caller
// chooses norm (the number of labels in the whole, possibly accumulated or distributed,
// batch), which is what makes gradient accumulation equal one big batch.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/ops.h"

namespace strata::kernels {

template <typename T>
double cross_entropy(const T* logits, const int32_t* labels, T* dlogits, int N, int V, double norm) {
  std::vector<double> row_loss(N, 0.0);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* x = logits + static_cast<size_t>(n) * V;
    T* dx = dlogits ? dlogits + static_cast<size_t>(n) * V : nullptr;
    if (labels[n] == -100) {
      if (dx) std::fill(dx, dx + V, T(0));
      continue;
    }
    const T mx = *std::max_element(x, x + V);
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(static_cast<double>(x[v] - mx));
    const double lse = std::log(sum) + mx;
    row_loss[n] = lse - x[labels[n]];
    if (dx) {
      const double inv = 1.0 / norm;
      for (int v = 0; v < V; ++v) dx[v] = static_cast<T>(std::exp(x[v] - lse) * inv);
      dx[labels[n]] -= static_cast<T>(inv);
    }
  }
  double total = 0;
  for (double l : row_loss) total += l;
  return total / norm;
}

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

template double cross_entropy<float>(const float*, const int32_t*, float*, int, int, double);
template double cross_entropy<double>(const double*, const int32_t*, double*, int, int, double);
template double mse<float>(const float*, const double*, float*, size_t, double);
template double mse<double>(const double*, const double*, double*, size_t, double);
template double bce_with_logits<float>(const float*, const double*, float*, size_t, double);
template double bce_with_logits<double>(const double*, const double*, double*, size_t, double);

}  // namespace strata::kernels
