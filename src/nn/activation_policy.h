// How a model state keeps what each transformer block's forward saves for its backward
// (DESIGN.md principle 4: the caller owns `saved`): in memory (the default); recomputed from
// the block's input just before its backward (activation checkpointing, HF's
// gradient_checkpointing); or moved to a host-memory pool after forward and fetched back,
// overlapped, before backward (offloading). The result is bit for bit the same either way:
// dropout masks are counter-based (seed, stream), so a recompute draws the same masks.
#pragma once
#include <cstddef>
#include <string>

#include "kernels/matmul_precision.h"

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
  // The precision the products run in (kernels/matmul_precision.h), set as the run sets it.
  // Under bf16 / fp16 a block's activations that backward reads only as inputs of products
  // (its Saved's product_inputs()) are kept in that type, half their bytes: the products round
  // them to it anyway, so backward reads the values it would have read (nn/block_activations.h).
  kernels::MatmulPrecision products = kernels::MatmulPrecision::Fp32;

  bool halves_product_inputs() const { return products != kernels::MatmulPrecision::Fp32; }

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

// What a block saves for backward besides its output: `saved` values, of which `products` are
// product inputs (ActivationPolicy::products), which take `halves` values of the saved type
// when kept in 16 bits (two to a float; each buffer rounded up to whole floats).
struct BlockSaved {
  size_t saved = 0, products = 0, halves = 0;
  // One product-input buffer of n values.
  void add_product_input(size_t n) {
    products += n;
    halves += (n + 1) / 2;
  }
};

// Blocks [first, end), each saving `s` for backward, with `boundary` values (B*T*C) passed
// between blocks.
ActivationFootprint block_footprint(const ActivationPolicy& p, int first, int end, const BlockSaved& s,
                                    size_t boundary);

}  // namespace strata::nn
