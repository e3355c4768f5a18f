// Error checks for CUDA runtime and library calls: a failed call throws with the call's text,
// the error's name and where it was made, so a failure on the GPU machine says what broke
// without a debugger. Kernel launches are checked with STRATA_CUDA_CHECK(cudaGetLastError()).
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace strata::kernels::cuda {

[[noreturn]] inline void throw_cuda_error(const char* call, const char* name, const char* text, const char* file,
                                          int line) {
  throw std::runtime_error(std::string("CUDA error ") + name + " (" + text + ") in " + call + " at " + file + ":" +
                           std::to_string(line));
}

}  // namespace strata::kernels::cuda

#define STRATA_CUDA_CHECK(call)                                                                          \
  do {                                                                                                   \
    const cudaError_t strata_err_ = (call);                                                              \
    if (strata_err_ != cudaSuccess)                                                                      \
      ::strata::kernels::cuda::throw_cuda_error(#call, cudaGetErrorName(strata_err_),                    \
                                                cudaGetErrorString(strata_err_), __FILE__, __LINE__);   \
  } while (0)
