// Matrix products through OpenBLAS (chosen by measurement: docs/gemm.md), and the Linear
// layer built on them. Bias gradients are column sums taken in a fixed row order.
#include <cblas-openblas.h>

#include <algorithm>

#include "kernels/cpu/common.h"
#include "kernels/ops.h"

namespace strata::kernels {

namespace {
CBLAS_TRANSPOSE tr(bool t) { return t ? CblasTrans : CblasNoTrans; }
}  // namespace

template <>
void gemm<float>(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                 const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

template <>
void gemm<double>(bool ta, bool tb, int M, int N, int K, double alpha, const double* A, int lda,
                  const double* B, int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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

template void linear_forward<float>(const float*, const float*, const float*, float*, int, int, int);
template void linear_forward<double>(const double*, const double*, const double*, double*, int, int, int);
template void linear_backward<float>(const float*, const float*, const float*, float*, float*, float*,
                                     int, int, int);
template void linear_backward<double>(const double*, const double*, const double*, double*, double*,
                                      double*, int, int, int);

}  // namespace strata::kernels
