#include "nn/activation_policy.h"

namespace strata::nn {

std::string ActivationPolicy::describe() const {
  std::string s;
  if (checkpoint_every == 1) s = "recomputed every block";
  else if (checkpoint_every == 2) s = "recomputed every 2nd block";
  else if (checkpoint_every > 2) s = "recomputed every " + std::to_string(checkpoint_every) + "th block";
  else s = "kept";
  if (offload) s += ", offloaded to a file-backed pool in " + offload_dir;
  return s;
}

// Mirrors nn/block_activations.h; tests/test_activation_policy.cpp checks both against the
// buffers a state really holds.
ActivationFootprint block_footprint(const ActivationPolicy& p, int first, int end, size_t saved, size_t boundary) {
  ActivationFootprint f;
  const int n = end - first;
  if (n <= 0) return f;
  f.resident = 2 * boundary;  // the hand-off buffer and the range's output
  bool any_checkpointed = false;
  bool slot_input[2] = {false, false}, slot_saved[2] = {false, false};  // offloading's two resident records
  bool record_saved[2] = {false, false};  // records 0 and 1 hold saved state (inference reuses them)
  for (int i = first; i < end; ++i) {
    const bool recomputed = p.checkpointed(i), has_input = i > first;
    any_checkpointed |= recomputed;
    if (i - first < 2) record_saved[i - first] = !recomputed;
    const size_t record = (has_input ? boundary : 0) + (recomputed ? 0 : saved);
    if (!p.offload) {
      f.resident += record;
      continue;
    }
    if (i + 2 < end) f.offloaded += record;  // the last two records never leave the ring
    slot_input[(i - first) % 2] |= has_input;
    slot_saved[(i - first) % 2] |= !recomputed;
  }
  if (p.offload)
    for (int s = 0; s < 2; ++s) f.resident += (slot_input[s] ? boundary : 0) + (slot_saved[s] ? saved : 0);
  if (any_checkpointed) f.resident += saved + boundary;  // the recompute workspace, with its output
  // Inference runs blocks through two slots in turn (BlockActivations::inference_slot),
  // writing their outputs too: the workspace (already whole) or record 0, and record 1.
  if (p.checkpoint_every > 0) f.inference += any_checkpointed ? 0 : saved + boundary;
  else f.inference += boundary + ((p.offload ? slot_saved[0] : record_saved[0]) ? 0 : saved);
  f.inference += boundary + ((p.offload ? slot_saved[1] : record_saved[1]) ? 0 : saved);
  return f;
}

}  // namespace strata::nn
