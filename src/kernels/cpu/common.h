// Helpers shared by the CPU kernels (not part of the op interface).
#pragma once
#include <algorithm>
#include <cstddef>

namespace strata::kernels {

// sums[c] += sum over rows n of m[n, c], rows in order 0..N-1 whatever the thread count:
// threads split the columns into blocks, each block walks all rows.
template <typename T>
void add_column_sums(const T* m, T* sums, int N, int C) {
  constexpr int kBlock = 64;
  const int blocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < blocks; ++blk) {
    const int c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
    T acc[kBlock] = {};
    for (int n = 0; n < N; ++n) {
      const T* row = m + static_cast<size_t>(n) * C;
      for (int c = c0; c < c1; ++c) acc[c - c0] += row[c];
    }
    for (int c = c0; c < c1; ++c) sums[c] += acc[c - c0];
  }
}

}  // namespace strata::kernels

namespace strata::kernels {

// Runs fn(begin, end) over [0, n) in blocks of a fixed size, blocks spread over the OpenMP
// threads. The cut points depend only on n, so vectorised bodies and their scalar tails touch
// the same elements whatever the thread count.
template <typename Fn>
void parallel_blocks(size_t n, Fn fn) {
  constexpr size_t kBlock = 4096;
  const size_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (size_t b = 0; b < blocks; ++b) fn(b * kBlock, std::min(n, (b + 1) * kBlock));
}

}  // namespace strata::kernels
