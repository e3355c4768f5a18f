// The dropout mask as a pure function of (seed, stream, element index).
#pragma once
#include <cstddef>
#include <cstdint>

#include "util/rng.h"

namespace strata::kernels {

struct DropoutMask {
  float p;
  float scale;
  CounterRng rng;
  DropoutMask(float p_, uint64_t seed, uint64_t stream)
      : p(p_), scale(p_ < 1.0f ? 1.0f / (1.0f - p_) : 0.0f), rng(seed, stream) {}
  bool keep(size_t i) const { return p <= 0.0f || rng.uniform(i) >= p; }
  template <typename T>
  T apply(T v, size_t i) const {
    if (p <= 0.0f) return v;
    return keep(i) ? v * static_cast<T>(scale) : T(0);
  }
};

}  // namespace strata::kernels
