// The dropout mask as a pure function of (seed, stream, element index): element i is kept
// iff the top 24 bits of CounterRng::bits(i) >= p * 2^24, i.e. iff uniform(i) >= p. Written
// as integer compares and selects so that whole ranges vectorise.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "util/rng.h"

namespace strata::kernels {

struct DropoutMask {
  float p;
  float scale;
  uint64_t key;
  uint32_t threshold;  // ceil(p * 2^24): p * 2^24 is exact in float, so this equals uniform >= p

  DropoutMask(float p_, uint64_t seed, uint64_t stream)
      : p(p_),
        scale(p_ < 1.0f ? 1.0f / (1.0f - p_) : 0.0f),
        key(CounterRng(seed, stream).key),
        threshold(static_cast<uint32_t>(std::ceil(static_cast<double>(p_) * 16777216.0))) {}

  bool active() const { return p > 0.0f; }

  // y[k] = x[k] * mask(first + k) * scale for k < n; x and y may alias.
  template <typename T>
  void apply(const T* x, T* y, size_t n, size_t first) const {
    const T s = static_cast<T>(scale);
#pragma omp simd
    for (size_t k = 0; k < n; ++k) {
      const uint64_t bits = mix64(key + (first + k + 1) * 0x9e3779b97f4a7c15ull);
      y[k] = static_cast<uint32_t>(bits >> 40) >= threshold ? x[k] * s : T(0);
    }
  }
};

}  // namespace strata::kernels
