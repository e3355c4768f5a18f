// NCCL in a build without CUDA: there is no GPU to run it on, so it is never available.
#ifndef STRATA_WITH_CUDA
#include "dist/nccl_communicator.h"
#include "util/error.h"

namespace strata::dist {

std::string nccl_unavailable_reason() {
  return "this build of strata has no CUDA backend, so no NCCL (no CUDA toolkit when it was configured, or "
         "STRATA_CUDA=OFF)";
}

std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator>, double) {
  fail("NCCL collectives: ", nccl_unavailable_reason());
}

}  // namespace strata::dist
#endif
