// The dropout mask as a pure function of (seed, stream, element index): element i is kept iff
// the top 24 bits of a 32-bit hash of i >= p * 2^24, i.e. iff uniform(i) >= p. Written as
// integer compares and selects so that whole ranges vectorise.
//
// Why 32 bits: the mask is drawn twice per element and step (forward, backward) for every
// dropout site, attention probabilities included. A 64-bit hash (splitmix64) needs three 64-bit
// multiplies per element, which AVX2 emulates with 32-bit ones over 4 lanes; this one takes
// four 32-bit multiplies over 8 lanes, about 3x less work (docs/benchmarks.md).
#pragma once
#include <algorithm>
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

  // One round of a 32-bit integer hash (Wellons' lowbias32: two xor-shift-multiplies, a
  // bijection with low avalanche bias).
  static uint32_t mix32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
  }

  // Element i = hi * 2^32 + lo hashes lo under two 32-bit keys drawn for (key, hi): a round,
  // the second key, a round. Keying both rounds keeps masks of different keys unrelated (with
  // one key xor-ed in, two masks would be permutations of each other).
  struct Keys {
    uint32_t k0, k1;
  };
  Keys keys_for(uint64_t hi) const {
    const uint64_t k = mix64(key + (hi + 1) * 0x9e3779b97f4a7c15ull);
    return {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)};
  }
  static bool kept(uint32_t lo, Keys k, uint32_t threshold) {
    return (mix32(mix32(lo ^ k.k0) ^ k.k1) >> 8) >= threshold;
  }

  // y[k] = x[k] * mask(first + k) * scale for k < n; x and y may alias.
  template <typename T>
  void apply(const T* x, T* y, size_t n, size_t first) const {
    const T s = static_cast<T>(scale);
    const uint32_t th = threshold;
    for (size_t k = 0; k < n;) {  // runs of indices with the same high word: one pair of keys each
      const uint64_t i = first + k;
      const size_t run = static_cast<size_t>(std::min<uint64_t>(n - k, (((i >> 32) + 1) << 32) - i));
      const Keys keys = keys_for(i >> 32);
      const uint32_t lo = static_cast<uint32_t>(i);
      const T* xs = x + k;
      T* ys = y + k;
#pragma omp simd
      for (size_t j = 0; j < run; ++j) ys[j] = kept(lo + static_cast<uint32_t>(j), keys, th) ? xs[j] * s : T(0);
      k += run;
    }
  }
};

}  // namespace strata::kernels
