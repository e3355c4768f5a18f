// gemm<float> under mixed precision (kernels/matmul_precision.h): the product of A and B
// rounded to the current precision, accumulated in fp32, by the current path.
#pragma once

namespace strata::kernels {

void half_gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
               float beta, float* C, int ldc);

}  // namespace strata::kernels
