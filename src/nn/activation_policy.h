// How a model state keeps what each transformer block's forward saves for its backward
// (DESIGN.md principle 4: the caller owns `saved`): in memory (the default); recomputed from
// the block's input just before its backward (activation checkpointing, HF's
// gradient_checkpointing); or moved to a host-memory pool after forward and fetched back,
// overlapped, before backward (offloading). The result is bit for bit the same either way:
// dropout masks are counter-based (seed, stream), so a recompute draws the same masks.
#pragma once
#include <cstddef>
#include <string>

namespace strata::nn {

struct ActivationPolicy {
  // 0: no checkpointing. k >= 1: block i (0-based, counted over the whole model, so every
  // pipeline stage agrees with one process) is recomputed when i % k == 0: every block for
  // k = 1, every 2nd for k = 2, ... (ALBERT counts layer applications, not shared groups).
  int checkpoint_every = 0;
  // Move the saved state of blocks that are not recomputed (and every block's input) to the
  // offload pool (tensor/file_pool.h), created in offload_dir.
  bool offload = false;
  std::string offload_dir = "/tmp";

  bool checkpointed(int block) const { return checkpoint_every > 0 && block % checkpoint_every == 0; }
  // "kept", "recomputed every 2nd block, offloaded to /tmp", ...: for the memory plan.
  std::string describe() const;
};

// Values a state holds for the blocks of one range under a policy (BlockActivations allocates
// exactly these; models/memory_estimate.h adds them up).
struct ActivationFootprint {
  size_t resident = 0;   // in memory through a training step
  size_t offloaded = 0;  // in the offload pool, out of the resident set
  size_t inference = 0;  // what an inference pass (evaluation) adds to `resident`
  // The sum of two ranges' (an encoder-decoder keeps its two stacks apart).
  ActivationFootprint& operator+=(const ActivationFootprint& o) {
    resident += o.resident;
    offloaded += o.offloaded;
    inference += o.inference;
    return *this;
  }
};

// Blocks [first, end), each saving `saved` values for backward besides its output, with
// `boundary` values (B*T*C) passed between blocks.
ActivationFootprint block_footprint(const ActivationPolicy& p, int first, int end, size_t saved, size_t boundary);

}  // namespace strata::nn
