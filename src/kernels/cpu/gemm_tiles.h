// How kernels::gemm spreads one product over the threads (linear.cpp's header comment says
// why): shared by the fp32 / fp64 products and the reduced-precision ones (half_gemm.cpp).
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "kernels/gemm_threading.h"

namespace strata::kernels {

// The fp32 (T = float) or fp64 product C = alpha op(A) op(B) + beta C under the threading
// policy, without the mixed-precision rounding that gemm<float> may apply (linear.cpp).
template <typename T>
void plain_gemm(bool ta, bool tb, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb, T beta,
                T* C, int ldc);

// True when a product runs as one library call: on one thread of a team already (the
// attention kernel's per-head products; omp_get_level() also counts a one-thread team, so a
// product is never tiled on one thread and whole on two), or threaded by the library itself
// (GemmThreading::Library, fp32 and reduced precision only).
inline bool whole_product(bool library_may_thread) {
  return omp_get_level() > 0 || (library_may_thread && gemm_threading() == GemmThreading::Library);
}

namespace tiles {
// Tiles are cut along the longer side of C, up to kTile wide; 256 keeps each tile large
// enough that re-packing the shared operand per tile costs well under 1% (K x 256 packs per
// 256 x K x N flops). The tile count is rounded up to a multiple of 4, so that 2 or 4 threads
// get equal shares: a side of 768 (GPT-2's C, at B*T = 256 tokens the longer side of most
// products) is 4 tiles of 192, not 3 of 256 that leave one of two threads idle for a third of
// the product. Widths are multiples of 16 floats (whole vectors), at least 64.
constexpr int kTile = 256;
inline int tile_width(int len) {
  const int tiles = ((len + kTile - 1) / kTile + 3) / 4 * 4;
  const int width = ((len + tiles - 1) / tiles + 15) / 16 * 16;
  return std::max(width, 64);
}

// oneDNN packs an fp32 operand whose rows lie a multiple of 4 KiB apart (rows of 3072, the
// FFN width) at a fraction of its speed: each row of a panel maps to the same cache sets.
// Measured on the AVX2-only EPYC, one thread: x^T dy for the FFN output weight's gradient, x = a tile of
// the [N, 3072] activations, 32 GFLOP/s as is and 78 with the tile copied to rows 272 floats
// apart, copy included; products reading a [., 3072] weight tile gain ~20%. So a tile's own
// slice of A or B with such a stride is copied first; the values multiplied are the same.
inline bool aliased_stride(int ld) { return ld % 1024 == 0; }

// Copies rows x cols of src (row stride ld) to a thread-local buffer with a stride that is
// not a multiple of 4 KiB; returns it and its stride.
template <typename E>
const E* copy_unaliased(const E* src, int ld, int rows, int cols, int* ld_out) {
  thread_local std::vector<E> buf;
  int ld2 = (cols + 15) / 16 * 16;
  if (aliased_stride(ld2)) ld2 += 16;
  buf.resize(static_cast<size_t>(rows) * ld2);
  for (int r = 0; r < rows; ++r)
    std::copy_n(src + static_cast<size_t>(r) * ld, cols, buf.data() + static_cast<size_t>(r) * ld2);
  *ld_out = ld2;
  return buf.data();
}
}  // namespace tiles

// Runs product(m, n, a, lda, b, ldb, c) on C's tiles over the OpenMP threads: C [M, N] is cut
// by shape alone and each tile is one single-threaded call, so every element comes from the
// same call whatever the thread count. E: the operands' element type, C_T: C's.
template <typename E, typename C_T, typename Product>
void for_each_tile(bool ta, bool tb, int M, int N, int K, const E* A, int lda, const E* B, int ldb, C_T* C, int ldc,
                   Product product) {
  const bool split_rows = M >= N;
  const int width = tiles::tile_width(split_rows ? M : N);
  const int count = ((split_rows ? M : N) + width - 1) / width;
  // Even a single tile runs inside the parallel region, so the library sees omp_in_parallel().
#pragma omp parallel for schedule(dynamic, 1)
  for (int t = 0; t < count; ++t) {
    const int s = t * width;
    if (split_rows) {  // rows s.. of op(A) and C
      const int m = std::min(width, M - s);
      const E* a = ta ? A + s : A + static_cast<size_t>(s) * lda;
      int ld = lda;
      if (tiles::aliased_stride(lda))
        a = ta ? tiles::copy_unaliased(a, lda, K, m, &ld) : tiles::copy_unaliased(a, lda, m, K, &ld);
      product(m, N, a, ld, B, ldb, C + static_cast<size_t>(s) * ldc);
    } else {  // columns s.. of op(B) and C
      const int n = std::min(width, N - s);
      const E* b = tb ? B + static_cast<size_t>(s) * ldb : B + s;
      int ld = ldb;
      if (tiles::aliased_stride(ldb))
        b = tb ? tiles::copy_unaliased(b, ldb, n, K, &ld) : tiles::copy_unaliased(b, ldb, K, n, &ld);
      product(M, n, A, lda, b, ld, C + s);
    }
  }
}

}  // namespace strata::kernels
