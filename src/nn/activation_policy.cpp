#include "nn/activation_policy.h"

namespace strata::nn {

std::string ActivationPolicy::describe() const {
  std::string s;
  if (checkpoint_every == 1) s = "recomputed every block";
  else if (checkpoint_every == 2) s = "recomputed every 2nd block";
  else if (checkpoint_every > 2) s = "recomputed every " + std::to_string(checkpoint_every) + "th block";
  else s = "kept";
  if (offload) s += ", offloaded to a file-backed pool in " + offload_dir;
  if (halves_product_inputs()) s += std::string(", product inputs in ") + kernels::precision_name(products);
  return s;
}

// Mirrors nn/block_activations.h; tests/test_activation_policy.cpp checks both against the
// buffers a state really holds.
ActivationFootprint block_footprint(const ActivationPolicy& p, int first, int end, const BlockSaved& s,
                                    size_t boundary) {
  ActivationFootprint f;
  const int n = end - first;
  if (n <= 0) return f;
  // Under half products a record keeps its saved state but the product inputs, and their
  // halves unless it is the range's last; one full set of product inputs exists apart (lent to
  // the block running, kept by the last, or spare).
  const size_t products = p.halves_product_inputs() ? s.products : 0;
  auto halved = [&](int i) { return products > 0 && !p.checkpointed(i) && i + 1 < end; };
  auto kept = [&](int i) { return s.saved - products + (halved(i) ? s.halves : 0); };
  f.resident = 2 * boundary;  // the hand-off buffer and the range's output
  bool any_checkpointed = false, any_kept = false;
  bool slot_input[2] = {false, false}, slot_saved[2] = {false, false};  // offloading's two resident records
  bool slot_halves[2] = {false, false};
  bool record_saved[2] = {false, false};  // records 0 and 1 hold saved state (inference reuses them)
  for (int i = first; i < end; ++i) {
    const bool recomputed = p.checkpointed(i), has_input = i > first;
    any_checkpointed |= recomputed;
    any_kept |= !recomputed;
    if (i - first < 2) record_saved[i - first] = !recomputed;
    const size_t record = (has_input ? boundary : 0) + (recomputed ? 0 : kept(i));
    if (!p.offload) {
      f.resident += record;
      continue;
    }
    if (i + 2 < end) f.offloaded += record;  // the last two records never leave the ring
    slot_input[(i - first) % 2] |= has_input;
    slot_saved[(i - first) % 2] |= !recomputed;
    slot_halves[(i - first) % 2] |= halved(i);
  }
  if (p.offload)
    for (int r = 0; r < 2; ++r)
      f.resident += (slot_input[r] ? boundary : 0) + (slot_saved[r] ? s.saved - products : 0) +
                    (slot_halves[r] ? s.halves : 0);
  if (any_kept) f.resident += products;  // the full set of product inputs
  if (any_checkpointed) f.resident += s.saved + boundary;  // the recompute workspace, with its output
  // Inference runs blocks through two slots in turn (BlockActivations::inference_slot),
  // writing their outputs too: the workspace (already whole) or record 0, and record 1. A
  // record borrows the full set of product inputs when there is one.
  auto inference = [&](bool has_saved) { return boundary + (has_saved ? 0 : s.saved - (any_kept ? products : 0)); };
  if (p.checkpoint_every > 0) f.inference += any_checkpointed ? 0 : s.saved + boundary;
  else f.inference += inference(p.offload ? slot_saved[0] : record_saved[0]);
  f.inference += inference(p.offload ? slot_saved[1] : record_saved[1]);
  return f;
}

}  // namespace strata::nn
