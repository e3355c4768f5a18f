#include <algorithm>

#include "kernels/cpu/common.h"
#include "kernels/cpu/dropout_mask.h"
#include "kernels/ops.h"

namespace strata::kernels {

template <typename T>
void dropout_forward(const T* x, T* y, size_t n, float p, uint64_t seed, uint64_t stream) {
  const DropoutMask mask(p, seed, stream);
  if (!mask.active()) {
    if (x != y) std::copy(x, x + n, y);
    return;
  }
  parallel_blocks(n, [&](size_t b, size_t e) { mask.apply(x + b, y + b, e - b, b); });
}

template <typename T>
void dropout_backward(const T* dy, T* dx, size_t n, float p, uint64_t seed, uint64_t stream) {
  dropout_forward(dy, dx, n, p, seed, stream);  // same mask, same scale: the op is linear
}

template void dropout_forward<float>(const float*, float*, size_t, float, uint64_t, uint64_t);
template void dropout_forward<double>(const double*, double*, size_t, float, uint64_t, uint64_t);
template void dropout_backward<float>(const float*, float*, size_t, float, uint64_t, uint64_t);
template void dropout_backward<double>(const double*, double*, size_t, float, uint64_t, uint64_t);

}  // namespace strata::kernels
