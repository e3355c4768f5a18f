// Matrix products through oneDNN (fp32) and OpenBLAS (fp64), chosen by measurement
// (docs/gemm.md), and the Linear layer built on them. Bias gradients are column sums taken
// in a fixed row order.
//
// Determinism: a threaded GEMM splits a product differently for each thread count, and the
// last bits change with it. So the libraries always run single-threaded, and gemm() cuts C
// into tiles whose size depends only on the shape; OpenMP threads take whole tiles. Every
// element is then computed by the same single-threaded call whatever the thread count.
#include <cblas-openblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/common.h"
#include "kernels/ops.h"

namespace strata::kernels {

namespace {
CBLAS_TRANSPOSE tr(bool t) { return t ? CblasTrans : CblasNoTrans; }

// Before the first product, whether or not set_num_threads() was called.
void keep_openblas_single_threaded() {
  static const bool done = (openblas_set_num_threads(1), true);
  (void)done;
}

// Called only from inside an OpenMP parallel region, where oneDNN runs on the calling thread.
void blas_gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
               float beta, float* C, int ldc) {
  dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void blas_gemm(bool ta, bool tb, int M, int N, int K, double alpha, const double* A, int lda, const double* B,
               int ldb, double beta, double* C, int ldc) {
  keep_openblas_single_threaded();
  cblas_dgemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Tiles are cut along the longer side of C; 256 keeps each tile large enough that
// re-packing the shared operand per tile costs well under 1% (K x 256 packs per 256 x K x N flops).
constexpr int kTile = 256;
}  // namespace

template <typename T>
void gemm(bool ta, bool tb, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb, T beta, T* C,
          int ldc) {
  if (M == 0 || N == 0) return;
  if (omp_in_parallel()) {  // already on one thread of a team: the library runs serially
    blas_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  const bool split_rows = M >= N;
  const int tiles = ((split_rows ? M : N) + kTile - 1) / kTile;
  // Even a single tile runs inside the parallel region, so the library sees omp_in_parallel().
#pragma omp parallel for schedule(dynamic, 1)
  for (int t = 0; t < tiles; ++t) {
    const int s = t * kTile;
    if (split_rows) {  // rows s.. of op(A) and C
      const int m = std::min(kTile, M - s);
      const T* a = ta ? A + s : A + static_cast<size_t>(s) * lda;
      blas_gemm(ta, tb, m, N, K, alpha, a, lda, B, ldb, beta, C + static_cast<size_t>(s) * ldc, ldc);
    } else {  // columns s.. of op(B) and C
      const int n = std::min(kTile, N - s);
      const T* b = tb ? B + static_cast<size_t>(s) * ldb : B + s;
      blas_gemm(ta, tb, M, n, K, alpha, A, lda, b, ldb, beta, C + s, ldc);
    }
  }
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
  if (dx) gemm<T>(false, false, N, in, out, T(1), dy, out, W, in, T(0), dx, in);
  gemm<T>(true, false, out, in, N, T(1), dy, out, x, in, T(1), dW, in);
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
  if (dx) gemm<T>(false, true, N, in, out, T(1), dy, out, W, out, T(0), dx, in);
  gemm<T>(true, false, in, out, N, T(1), x, in, dy, out, T(1), dW, out);
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
