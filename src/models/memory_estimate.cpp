#include "models/memory_estimate.h"

namespace strata {

MemoryEstimate estimate_training_memory(const Model<float>& model, int B, int T, size_t bytes, int optimizer_states) {
  const size_t n = model.table().total();
  return {n * bytes, n * bytes, n * bytes * optimizer_states, model.activation_values(B, T) * bytes,
          model.scratch_values(B, T) * bytes};
}

}  // namespace strata
