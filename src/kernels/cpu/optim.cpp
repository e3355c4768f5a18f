// Optimizer updates fused over one contiguous slice of the flat parameter / gradient /
// state buffers: one pass over memory per step, element-wise, so any split is exact.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/common.h"
#include "kernels/ops.h"

namespace strata::kernels {

template <typename T>
void adamw_update(T* p, const T* g, T* m, T* v, size_t n, const AdamWParams& a) {
  const double bc1 = 1.0 - std::pow(a.beta1, static_cast<double>(a.step));
  const double bc2 = 1.0 - std::pow(a.beta2, static_cast<double>(a.step));
  const T decay = static_cast<T>(1.0 - a.lr * a.weight_decay);
  // 1 - beta is formed in double, as PyTorch does: float(1 - 0.999) != 1 - float(0.999).
  const T b1 = static_cast<T>(a.beta1), b2 = static_cast<T>(a.beta2);
  const T one_minus_b1 = static_cast<T>(1.0 - a.beta1), one_minus_b2 = static_cast<T>(1.0 - a.beta2);
  const T step_size = static_cast<T>(a.lr / bc1);
  const T bc2_sqrt = static_cast<T>(std::sqrt(bc2));
  const T eps = static_cast<T>(a.eps);
  // Vectorised (sqrt needs -fno-math-errno, set in CMakeLists.txt; the scalar loop took 0.28 s
  // per GPT-2 124M step on 2 cores of the AVX2-only EPYC). Fixed blocks keep each element in the vector body or
  // the scalar tail whatever the thread count.
  parallel_blocks(n, [&](size_t begin, size_t end) {
#pragma omp simd
    for (size_t i = begin; i < end; ++i) {
      const T gi = g[i];
      const T mi = b1 * m[i] + one_minus_b1 * gi;
      const T vi = b2 * v[i] + one_minus_b2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      p[i] = p[i] * decay - step_size * mi / (std::sqrt(vi) / bc2_sqrt + eps);
    }
  });
}

template <typename T>
void sgd_update(T* p, const T* g, T* buf, size_t n, const SGDParams& a) {
  const T lr = static_cast<T>(a.lr), wd = static_cast<T>(a.weight_decay);
  const T mom = static_cast<T>(a.momentum), damp = static_cast<T>(1.0 - a.dampening);
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; ++i) {
    T d = g[i] + wd * p[i];
    if (a.momentum != 0.0) {
      const T b = a.first_step ? d : mom * buf[i] + damp * d;
      buf[i] = b;
      d = a.nesterov ? d + mom * b : b;
    }
    p[i] -= lr * d;
  }
}

template <typename T>
double sum_squares(const T* x, size_t n) {
  constexpr size_t kBlock = 1 << 14;
  const size_t blocks = (n + kBlock - 1) / kBlock;
  double total = 0;
  // Fixed blocks, each summed in order, then the block sums in order: independent of threads.
#pragma omp parallel for ordered schedule(static)
  for (size_t b = 0; b < blocks; ++b) {
    double s = 0;
    const size_t end = std::min(n, (b + 1) * kBlock);
    for (size_t i = b * kBlock; i < end; ++i) s += static_cast<double>(x[i]) * x[i];
#pragma omp ordered
    total += s;
  }
  return total;
}

template <typename T>
void scale(T* x, size_t n, T s) {
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; ++i) x[i] *= s;
}

template <typename T>
void add(const T* a, const T* b, T* y, size_t n) {
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

#define STRATA_INSTANTIATE(T)                                                        \
  template void adamw_update<T>(T*, const T*, T*, T*, size_t, const AdamWParams&);   \
  template void sgd_update<T>(T*, const T*, T*, size_t, const SGDParams&);           \
  template double sum_squares<T>(const T*, size_t);                                  \
  template void scale<T>(T*, size_t, T);                                             \
  template void add<T>(const T*, const T*, T*, size_t);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

}  // namespace strata::kernels
