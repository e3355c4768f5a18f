#include "models/memory_estimate.h"

namespace strata {

MemoryEstimate estimate_training_memory(const Model<float>& model, int B, int T, size_t bytes, int optimizer_states,
                                        const nn::ActivationPolicy& policy) {
  const size_t n = model.table().total();
  const nn::ActivationFootprint acts = model.activation_values(B, T, policy);
  return {n * bytes,
          n * bytes,
          n * bytes * optimizer_states,
          acts.resident * bytes,
          model.scratch_values(B, T) * bytes,
          acts.offloaded * bytes};
}

}  // namespace strata
