#include "data/sampler.h"

#include <algorithm>

namespace strata::data {

uint64_t Draws::below(uint64_t n) {
  unsigned __int128 m = static_cast<unsigned __int128>(bits()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;  // 2^64 mod n: the biased low values
    while (low < threshold) {
      m = static_cast<unsigned __int128>(bits()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

std::vector<size_t> permutation(size_t n, uint64_t seed, uint64_t stream) {
  std::vector<size_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = i;
  Draws d(seed, stream);
  for (size_t i = n; i > 1; --i) std::swap(p[i - 1], p[d.below(i)]);
  return p;
}

size_t BatchPlan::num_batches() const {
  const size_t global = batch_size * world_size;
  return drop_last ? num_examples / global : (num_examples + global - 1) / global;
}

std::pair<size_t, size_t> BatchPlan::range(size_t j) const {
  const size_t global = batch_size * world_size;
  const size_t start = j * global;
  const size_t len = std::min(global, num_examples - start);
  if (len == global) return {start + rank * batch_size, start + (rank + 1) * batch_size};
  const size_t base = len / world_size, extra = len % world_size;
  const size_t begin = start + rank * base + std::min(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

}  // namespace strata::data
