#include <dlfcn.h>

#include <mutex>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cublaslt_api.cuh"

namespace strata::kernels::cuda {

namespace {

// The soname of the toolkit the backend was compiled with (CUBLAS_VER_MAJOR: 13 for CUDA 13).
const std::string kLibrary = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);

template <typename Fn>
void resolve(void* lib, const char* name, Fn* fn) {
  void* sym = dlsym(lib, name);
  if (!sym) throw std::runtime_error(kLibrary + " has no symbol " + name + " (" + dlerror() + ")");
  *fn = reinterpret_cast<Fn>(sym);
}

CublasLtApi open_cublaslt() {
  void* lib = dlopen(kLibrary.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    throw std::runtime_error("cannot load " + kLibrary + " for the GPU's matrix products: " + dlerror() +
                             " (install CUDA " + std::to_string(CUBLAS_VER_MAJOR) +
                             "'s cuBLAS, or put its lib64 on LD_LIBRARY_PATH)");
  CublasLtApi api{};
  resolve(lib, "cublasLtCreate", &api.Create);
  resolve(lib, "cublasLtMatmul", &api.Matmul);
  resolve(lib, "cublasLtMatmulAlgoGetHeuristic", &api.MatmulAlgoGetHeuristic);
  resolve(lib, "cublasLtMatmulDescCreate", &api.MatmulDescCreate);
  resolve(lib, "cublasLtMatmulDescSetAttribute", &api.MatmulDescSetAttribute);
  resolve(lib, "cublasLtMatmulPreferenceCreate", &api.MatmulPreferenceCreate);
  resolve(lib, "cublasLtMatmulPreferenceDestroy", &api.MatmulPreferenceDestroy);
  resolve(lib, "cublasLtMatmulPreferenceSetAttribute", &api.MatmulPreferenceSetAttribute);
  resolve(lib, "cublasLtMatrixLayoutCreate", &api.MatrixLayoutCreate);
  return api;  // the library stays open for the process
}

}  // namespace

const CublasLtApi& cublaslt_api() {
  static const CublasLtApi api = open_cublaslt();
  return api;
}

}  // namespace strata::kernels::cuda
