// Counter-based random numbers: value i of stream s under seed k is a pure function
// f(k, s, i) (SplitMix64's finaliser over a Weyl sequence). No state is carried between
// calls, so dropout masks can be regenerated in backward instead of stored, and results
// do not depend on how the work is split across threads.
#pragma once
#include <cmath>
#include <cstdint>

namespace strata {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct CounterRng {
  uint64_t key;
  CounterRng(uint64_t seed, uint64_t stream)
      : key(mix64(seed * 0x9e3779b97f4a7c15ull ^ mix64(stream + 0x632be59bd9b4e019ull))) {}
  uint64_t bits(uint64_t i) const { return mix64(key + (i + 1) * 0x9e3779b97f4a7c15ull); }
  // Uniform in [0, 1) with 24 bits, exact in float.
  float uniform(uint64_t i) const { return static_cast<float>(bits(i) >> 40) * 0x1.0p-24f; }
  // Uniform in [0, 1) with 53 bits (a sampling draw over a large vocabulary).
  double uniform53(uint64_t i) const { return static_cast<double>(bits(i) >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller over counters 2i, 2i+1), in double.
  double normal(uint64_t i) const {
    const double u1 = (static_cast<double>(bits(2 * i) >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = static_cast<double>(bits(2 * i + 1) >> 11) * 0x1.0p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

}  // namespace strata
