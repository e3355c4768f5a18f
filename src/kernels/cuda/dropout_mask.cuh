// The dropout mask of kernels/cpu/dropout_mask.h on the GPU: the same pure function of (seed,
// stream, element index), so a mask drawn here equals the CPU's bit for bit. The key and the
// threshold come from the CPU's DropoutMask itself (host code, one source of truth); the
// per-element hash is ported as __host__ __device__ code and must stay the CPU's: mix32 is
// lowbias32, keys_for is util/rng.h's mix64 over a Weyl step of the high word.
#pragma once
#include <cstdint>

#include "kernels/cpu/dropout_mask.h"

namespace strata::kernels::cuda {

struct GpuDropout {
  float p, scale;
  uint64_t key;
  uint32_t threshold;
  bool active;

  static GpuDropout make(float p, uint64_t seed, uint64_t stream) {
    const DropoutMask m(p, seed, stream);
    return {m.p, m.scale, m.key, m.threshold, m.active()};
  }

  __host__ __device__ static uint32_t mix32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
  }
  __host__ __device__ static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  struct Keys {
    uint32_t k0, k1;
  };
  __host__ __device__ Keys keys_for(uint64_t hi) const {
    const uint64_t k = mix64(key + (hi + 1) * 0x9e3779b97f4a7c15ull);
    return {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)};
  }
  __host__ __device__ static bool kept(uint32_t lo, Keys k, uint32_t threshold) {
    return (mix32(mix32(lo ^ k.k0) ^ k.k1) >> 8) >= threshold;
  }
  // Whether element i (of the whole stream) is kept.
  __host__ __device__ bool kept(uint64_t i) const {
    return kept(static_cast<uint32_t>(i), keys_for(i >> 32), threshold);
  }
};

}  // namespace strata::kernels::cuda
