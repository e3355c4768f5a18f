#include "models/memory_estimate.h"

#include <cstdio>

namespace strata {

MemoryEstimate estimate_training_memory(const Model<float>& model, int B, int T, const nn::ActivationPolicy& policy,
                                        size_t bytes, int optimizer_states) {
  const size_t n = model.table().total();
  const nn::ActivationFootprint acts = model.activation_values(B, T, policy);
  return {n * bytes,
          n * bytes,
          n * bytes * optimizer_states,
          acts.resident * bytes,
          model.scratch_values(B, T) * bytes,
          acts.offloaded * bytes,
          acts.inference * bytes};
}

std::string format_memory_estimate(const MemoryEstimate& m) {
  std::string out;
  auto line = [&](const char* name, size_t bytes, const char* note = "") {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-18s %9.1f MiB%s\n", name, static_cast<double>(bytes) / (1 << 20), note);
    out += buf;
  };
  line("parameters", m.parameters);
  line("gradients", m.gradients);
  line("optimizer state", m.optimizer_state);
  line("activations", m.activations);
  line("backward scratch", m.scratch);
  line("total", m.total(), " resident");
  if (m.offloaded) line("offload pool", m.offloaded, " file-backed, outside the resident set");
  if (m.evaluation) line("evaluation adds", m.evaluation, " (two block slots for inference)");
  return out;
}

}  // namespace strata
