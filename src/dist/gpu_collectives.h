// Which collectives GPU ranks train over, chosen alike on every rank.
#pragma once
#include <memory>
#include <string>

#include "dist/communicator.h"

namespace strata::dist {

// A communicator of the same ranks as `world` (made from a copy of it; `world` stays as it is)
// whose collectives take buffers in GPU memory: NCCL when every rank has a GPU of its own
// (`gpu_per_rank`, as this rank sees its host) and NCCL can run on every rank; else `world`'s
// own collectives with device buffers staged through host memory (dist/staged_communicator.h).
// Collective over `world`. `how` gets one line for the start-of-run banner saying which, and
// why not NCCL.
std::unique_ptr<Communicator> make_gpu_communicator(Communicator& world, bool gpu_per_rank, double timeout_s,
                                                    std::string* how);

}  // namespace strata::dist
