// Choosing GPU ranks' collectives (dist/gpu_collectives.h).
#include "dist/gpu_collectives.h"

#include "dist/nccl_communicator.h"
#include "dist/staged_communicator.h"

namespace strata::dist {

std::unique_ptr<Communicator> make_gpu_communicator(Communicator& world, bool gpu_per_rank, double timeout_s,
                                                    std::string* how) {
  std::string why_not = gpu_per_rank ? nccl_unavailable_reason()
                                     : "ranks share a GPU, and NCCL runs one rank per GPU";
  // Every rank must take the same path: one rank without NCCL sends them all through MPI.
  double nccl_everywhere = why_not.empty() ? 1.0 : 0.0;
  world.all_reduce_sum(&nccl_everywhere, 1, "choosing NCCL");
  const bool nccl = nccl_everywhere == world.size();
  if (!nccl && why_not.empty()) why_not = "another rank cannot use it";
  std::unique_ptr<Communicator> copy = world.split(0, world.rank());
  if (nccl) {
    *how = "collectives: NCCL, one GPU per rank";
    return make_nccl_communicator(std::move(copy), timeout_s);
  }
  *how = "collectives: MPI through host memory (not NCCL: " + why_not + ")";
  return make_staged_communicator(std::move(copy));
}

}  // namespace strata::dist
