// Matrix products through oneDNN (fp32) and OpenBLAS (fp64), chosen by measurement
// (docs/gemm.md), and the Linear layer built on them. Bias gradients are column sums taken
// in a fixed row order.
//
// Determinism: a threaded GEMM splits a product differently for each thread count, and the
// last bits change with it. Under GemmThreading::FixedTiles the libraries run single-threaded
// and gemm() cuts C into tiles whose size depends only on the shape; OpenMP threads take whole
// tiles, so every element is computed by the same single-threaded call whatever the thread
// count. Under GemmThreading::Library (fp32 only) oneDNN threads the whole product itself:
// faster (its own blocking, no per-tile re-packing of the shared operand), and the same bits
// at the same thread count (gemm_threading.h).
#include <cblas-openblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/gemm_threading.h"
#include "kernels/ops.h"

namespace strata::kernels {

namespace {
std::atomic<GemmThreading> g_threading{GemmThreading::FixedTiles};

CBLAS_TRANSPOSE tr(bool t) { return t ? CblasTrans : CblasNoTrans; }

// Before the first product, whether or not set_num_threads() was called.
void keep_openblas_single_threaded() {
  static const bool done = (openblas_set_num_threads(1), true);
  (void)done;
}

// Inside an OpenMP parallel region oneDNN runs on the calling thread; outside one (Library
// mode) it threads the product over omp_get_max_threads() threads.
void blas_gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
               float beta, float* C, int ldc) {
  dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void blas_gemm(bool ta, bool tb, int M, int N, int K, double alpha, const double* A, int lda, const double* B,
               int ldb, double beta, double* C, int ldc) {
  keep_openblas_single_threaded();
  cblas_dgemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Tiles are cut along the longer side of C, up to kTile wide; 256 keeps each tile large
// enough that re-packing the shared operand per tile costs well under 1% (K x 256 packs per
// 256 x K x N flops). The tile count is rounded up to a multiple of 4, so that 2 or 4 threads
// get equal shares: a side of 768 (GPT-2's C, at B*T = 256 tokens the longer side of most
// products) is 4 tiles of 192, not 3 of 256 that leave one of two threads idle for a third of
// the product. Widths are multiples of 16 floats (whole vectors), at least 64.
constexpr int kTile = 256;
int tile_width(int len) {
  const int tiles = ((len + kTile - 1) / kTile + 3) / 4 * 4;
  const int width = ((len + tiles - 1) / tiles + 15) / 16 * 16;
  return std::max(width, 64);
}

// oneDNN packs an operand whose rows lie a multiple of 4 KiB apart (fp32 rows of 3072, the
// FFN width) at a fraction of its speed: each row of a panel maps to the same cache sets.
// Measured on the AVX2-only EPYC, one thread: x^T dy for the FFN output weight's gradient, x = a tile of
// the [N, 3072] activations, 32 GFLOP/s as is and 78 with the tile copied to rows 272 floats
// apart, copy included; products reading a [., 3072] weight tile gain ~20%. So a tile's own
// slice of A or B with such a stride is copied first; the values multiplied are the same.
bool aliased_stride(int ld) { return ld % 1024 == 0; }

// Copies rows x cols of src (row stride ld) to a thread-local buffer with a stride that is
// not a multiple of 4 KiB; returns it and its stride.
template <typename T>
const T* copy_unaliased(const T* src, int ld, int rows, int cols, int* ld_out) {
  thread_local std::vector<T> buf;
  int ld2 = (cols + 15) / 16 * 16;
  if (aliased_stride(ld2)) ld2 += 16;
  buf.resize(static_cast<size_t>(rows) * ld2);
  for (int r = 0; r < rows; ++r) std::copy_n(src + static_cast<size_t>(r) * ld, cols, buf.data() + static_cast<size_t>(r) * ld2);
  *ld_out = ld2;
  return buf.data();
}
}  // namespace

void set_gemm_threading(GemmThreading mode) { g_threading = mode; }
GemmThreading gemm_threading() { return g_threading; }

template <typename T>
void gemm(bool ta, bool tb, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb, T beta, T* C,
          int ldc) {
  if (M == 0 || N == 0) return;
  // Already on one thread of a team (the attention kernel's per-head products): one serial
  // call. omp_get_level() also counts a one-thread team, where omp_in_parallel() is false, so
  // a product is never tiled on one thread and whole on two. In Library mode the same call,
  // made outside any team, is threaded by oneDNN.
  if (omp_get_level() > 0 || (std::is_same_v<T, float> && g_threading == GemmThreading::Library)) {
    blas_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  const bool split_rows = M >= N;
  const int width = tile_width(split_rows ? M : N);
  const int tiles = ((split_rows ? M : N) + width - 1) / width;
  // Even a single tile runs inside the parallel region, so the library sees omp_in_parallel().
#pragma omp parallel for schedule(dynamic, 1)
  for (int t = 0; t < tiles; ++t) {
    const int s = t * width;
    if (split_rows) {  // rows s.. of op(A) and C
      const int m = std::min(width, M - s);
      const T* a = ta ? A + s : A + static_cast<size_t>(s) * lda;
      int ld = lda;
      if (aliased_stride(lda)) a = ta ? copy_unaliased(a, lda, K, m, &ld) : copy_unaliased(a, lda, m, K, &ld);
      blas_gemm(ta, tb, m, N, K, alpha, a, ld, B, ldb, beta, C + static_cast<size_t>(s) * ldc, ldc);
    } else {  // columns s.. of op(B) and C
      const int n = std::min(width, N - s);
      const T* b = tb ? B + static_cast<size_t>(s) * ldb : B + s;
      int ld = ldb;
      if (aliased_stride(ldb)) b = tb ? copy_unaliased(b, ldb, n, K, &ld) : copy_unaliased(b, ldb, K, n, &ld);
      blas_gemm(ta, tb, M, n, K, alpha, A, lda, b, ld, beta, C + s, ldc);
    }
  }
}

void warm_up_gemm() {
  constexpr int n = 96;  // past the sizes oneDNN treats as small
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.f);
  auto every_kind = [&] {
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (float beta : {0.f, 1.f}) blas_gemm(ta, tb, n, n, n, 1.f, a.data(), n, b.data(), n, beta, c.data(), n);
  };
  every_kind();  // outside a team: oneDNN threads the product (GemmThreading::Library)
#pragma omp parallel
#pragma omp single
  every_kind();  // on one thread of a team: oneDNN runs it on that thread (FixedTiles' tiles)
}

template <typename T>
void linear_forward(const T* x, const T* W, const T* b, T* y, int N, int in, int out) {
  if (b) {
    // Start from the bias and let the GEMM accumulate (beta = 1): one pass over y fewer.
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) std::copy(b, b + out, y + static_cast<size_t>(n) * out);
  }
  gemm<T>(false, true, N, out, in, T(1), x, in, W, in, b ? T(1) : T(0), y, out);
}

template <typename T>
void linear_backward(const T* x, const T* W, const T* dy, T* dx, T* dW, T* db, int N, int in,
                     int out) {
  gemm<T>(true, false, out, in, N, T(1), dy, out, x, in, T(1), dW, in);  // before dx: dx may alias x
  if (dx) gemm<T>(false, false, N, in, out, T(1), dy, out, W, in, T(0), dx, in);
  if (db) add_column_sums(dy, db, N, out);
}

template <typename T>
void conv1d_forward(const T* x, const T* W, const T* b, T* y, int N, int in, int out) {
  if (b) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) std::copy(b, b + out, y + static_cast<size_t>(n) * out);
  }
  gemm<T>(false, false, N, out, in, T(1), x, in, W, out, b ? T(1) : T(0), y, out);
}

template <typename T>
void conv1d_backward(const T* x, const T* W, const T* dy, T* dx, T* dW, T* db, int N, int in,
                     int out) {
  gemm<T>(true, false, in, out, N, T(1), x, in, dy, out, T(1), dW, out);  // before dx: dx may alias x
  if (dx) gemm<T>(false, true, N, in, out, T(1), dy, out, W, out, T(0), dx, in);
  if (db) add_column_sums(dy, db, N, out);
}

template void gemm<float>(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*, int);
template void gemm<double>(bool, bool, int, int, int, double, const double*, int, const double*, int, double, double*,
                           int);
template void linear_forward<float>(const float*, const float*, const float*, float*, int, int, int);
template void linear_forward<double>(const double*, const double*, const double*, double*, int, int, int);
template void linear_backward<float>(const float*, const float*, const float*, float*, float*, float*,
                                     int, int, int);
template void linear_backward<double>(const double*, const double*, const double*, double*, double*,
                                      double*, int, int, int);

template void conv1d_forward<float>(const float*, const float*, const float*, float*, int, int, int);
template void conv1d_forward<double>(const double*, const double*, const double*, double*, int, int, int);
template void conv1d_backward<float>(const float*, const float*, const float*, float*, float*, float*,
                                     int, int, int);
template void conv1d_backward<double>(const double*, const double*, const double*, double*, double*,
                                      double*, int, int, int);

}  // namespace strata::kernels
