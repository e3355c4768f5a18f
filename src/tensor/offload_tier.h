// Where activation offloading moves saved tensors, and how the copies run while the model
// computes (nn/block_activations.h):
//   - on the CPU, a helper thread copies them into a file-backed pool (tensor/file_pool.h),
//     whose pages leave the process's resident set;
//   - on a GPU, the copy stream moves them to and from page-locked host memory, ordered against
//     the compute stream by events: the host never waits for a copy.
// Copies are grouped by ring slot (the two records in device memory that offloaded blocks
// take in turn): wait(slot) orders what touches a slot's buffers after its last copy.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kernels/device.h"

namespace strata {

class OffloadTier {
 public:
  virtual ~OffloadTier() = default;

  // One tensor's move: `bytes` between `region` (of allocate()) and `memory` (of the device).
  struct Copy {
    std::byte* region;
    void* memory;
    size_t bytes;
  };

  // A new pass: every region of the last one is free (their copies are ordered before any of
  // this pass's by wait_all()).
  virtual void begin_pass() = 0;
  // A region for `bytes`, valid until the next begin_pass().
  virtual std::byte* allocate(size_t bytes) = 0;
  // Queue copies out of (store) and back into (load) device memory, after the work queued so
  // far (on a GPU: on the compute stream). They belong to ring slot `slot` (0 or 1).
  virtual void store(int slot, std::vector<Copy> copies) = 0;
  virtual void load(int slot, std::vector<Copy> copies) = 0;
  // Work that follows (the host's on the CPU, the compute stream's on a GPU) runs after the
  // slot's last copy; wait_all() after both slots'.
  virtual void wait(int slot) = 0;
  virtual void wait_all() = 0;
  // The most one pass has held.
  virtual size_t peak_bytes() const = 0;
};

// The tier for memory of `device`: the file-backed pool in `dir` on the CPU, page-locked
// host memory on a GPU.
std::unique_ptr<OffloadTier> make_offload_tier(kernels::Device device, const std::string& dir);

}  // namespace strata
