// Losses return sum(per-element loss) / norm and write the matching gradient. The caller
// chooses norm (the number of labels in the whole, possibly accumulated or distributed,
// batch), which is what makes gradient accumulation equal one big batch.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/vec_math.h"
#include "kernels/ops.h"

namespace strata::kernels {

// One exp per logit, vectorised (vec::exp in fp32): with a 50257-token vocabulary (GPT-2's LM
// head) this row loop is a visible share of the step, and libm's scalar exp was most of it.
// Each row is one thread's, summed in a fixed order: the result is the same for any thread count.
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
    T mx = x[0];
#pragma omp simd reduction(max : mx)
    for (int v = 0; v < V; ++v) mx = std::max(mx, x[v]);
    double sum = 0;
    if (dx) {  // dx holds exp(x - mx) until the sum is known
#pragma omp simd reduction(+ : sum)
      for (int v = 0; v < V; ++v) {
        const T e = vec::exp(x[v] - mx);
        dx[v] = e;
        sum += e;
      }
      const T s = static_cast<T>(1.0 / (sum * norm));
#pragma omp simd
      for (int v = 0; v < V; ++v) dx[v] *= s;
      dx[labels[n]] -= static_cast<T>(1.0 / norm);
    } else {
#pragma omp simd reduction(+ : sum)
      for (int v = 0; v < V; ++v) sum += vec::exp(x[v] - mx);
    }
    row_loss[n] = std::log(sum) + mx - x[labels[n]];
  }
  double total = 0;
  for (double l : row_loss) total += l;
  return total / norm;
}

template <typename T>
void ce_slice_row_max(const T* logits, int N, int V, T* mx) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* x = logits + static_cast<size_t>(n) * V;
    T m = x[0];
#pragma omp simd reduction(max : m)
    for (int v = 0; v < V; ++v) m = std::max(m, x[v]);
    mx[n] = m;
  }
}

template <typename T>
void ce_slice_exp(const T* logits, const int32_t* labels, const T* mx, int N, int V, int v0, T* e, double* sumexp,
                  double* target) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* x = logits + static_cast<size_t>(n) * V;
    T* ex = e + static_cast<size_t>(n) * V;
    sumexp[n] = target[n] = 0;
    if (labels[n] == -100) {
      std::fill(ex, ex + V, T(0));
      continue;
    }
    const T m = mx[n];
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int v = 0; v < V; ++v) {
      const T t = vec::exp(x[v] - m);
      ex[v] = t;
      sum += t;
    }
    sumexp[n] = sum;
    const int local = labels[n] - v0;
    if (local >= 0 && local < V) target[n] = x[local];
  }
}

template <typename T>
void ce_slice_grad(T* e, const int32_t* labels, const double* sumexp, int N, int V, int v0, double norm) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    if (labels[n] == -100) continue;
    T* ex = e + static_cast<size_t>(n) * V;
    const T s = static_cast<T>(1.0 / (sumexp[n] * norm));
#pragma omp simd
    for (int v = 0; v < V; ++v) ex[v] *= s;
    const int local = labels[n] - v0;
    if (local >= 0 && local < V) ex[local] -= static_cast<T>(1.0 / norm);
  }
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
#define STRATA_INSTANTIATE(T)                                                                                  \
  template void ce_slice_row_max<T>(const T*, int, int, T*);                                                   \
  template void ce_slice_exp<T>(const T*, const int32_t*, const T*, int, int, int, T*, double*, double*);      \
  template void ce_slice_grad<T>(T*, const int32_t*, const double*, int, int, int, double);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
template double mse<float>(const float*, const double*, float*, size_t, double);
template double mse<double>(const double*, const double*, double*, size_t, double);
template double bce_with_logits<float>(const float*, const double*, float*, size_t, double);
template double bce_with_logits<double>(const double*, const double*, double*, size_t, double);

}  // namespace strata::kernels
