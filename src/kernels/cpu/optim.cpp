// The gradient-norm sum; the optimizer updates are in simd/optim.inc (one copy per ISA).
#include <algorithm>

#include "kernels/ops.h"

namespace strata::kernels {

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

template double sum_squares<float>(const float*, size_t);
template double sum_squares<double>(const double*, size_t);

}  // namespace strata::kernels
