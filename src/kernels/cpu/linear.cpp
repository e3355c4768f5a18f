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
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/gemm_tiles.h"
#include "kernels/cpu/half_gemm.h"
#include "kernels/gemm_threading.h"
#include "kernels/matmul_precision.h"
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

}  // namespace

void set_gemm_threading(GemmThreading mode) { g_threading = mode; }
GemmThreading gemm_threading() { return g_threading; }

template <typename T>
void plain_gemm(bool ta, bool tb, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb, T beta,
                T* C, int ldc) {
  if (M == 0 || N == 0) return;
  // In Library mode the same call, made outside any team, is threaded by oneDNN.
  if (whole_product(std::is_same_v<T, float>)) {
    blas_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  for_each_tile(ta, tb, M, N, K, A, lda, B, ldb, C, ldc,
                [&](int m, int n, const T* a, int la, const T* b, int lb, T* c) {
                  blas_gemm(ta, tb, m, n, K, alpha, a, la, b, lb, beta, c, ldc);
                });
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

namespace cpu {

template <typename T>
void gemm(bool ta, bool tb, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb, T beta, T* C,
          int ldc) {
  if constexpr (std::is_same_v<T, float>) {
    if (matmul_precision() != MatmulPrecision::Fp32) {
      half_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
      return;
    }
  }
  plain_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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

}  // namespace cpu

template void plain_gemm<float>(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*,
                                 int);
template void plain_gemm<double>(bool, bool, int, int, int, double, const double*, int, const double*, int, double,
                                  double*, int);
namespace cpu {
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

}  // namespace cpu

}  // namespace strata::kernels
