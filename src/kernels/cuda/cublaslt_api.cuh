// cuBLASLt, opened on first use instead of linked. libcublasLt is 540 MB; linked, every strata
// process (each test, each CLI call) spent 0.1 s and 210 MB resident loading it, GPU or not.
// Opened with dlopen when the first product runs on a GPU, it costs only the runs that use it.
#pragma once
#include <cublasLt.h>

namespace strata::kernels::cuda {

// The cuBLASLt functions gemm.cu calls, with their own signatures.
struct CublasLtApi {
  decltype(&cublasLtCreate) Create;
  decltype(&cublasLtMatmul) Matmul;
  decltype(&cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic;
  decltype(&cublasLtMatmulDescCreate) MatmulDescCreate;
  decltype(&cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute;
  decltype(&cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate;
  decltype(&cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute;
  decltype(&cublasLtMatrixLayoutCreate) MatrixLayoutCreate;
};

// Opens libcublasLt.so.<the toolkit's major version> once (the dynamic loader's search path:
// RUNPATH, LD_LIBRARY_PATH, ld.so.cache); throws naming the library or symbol it could not find.
const CublasLtApi& cublaslt_api();

}  // namespace strata::kernels::cuda
