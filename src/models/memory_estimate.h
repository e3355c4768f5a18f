// Training memory of one step, counted from the buffers the code allocates: parameters,
// gradients, optimizer state, and the saved activations and backward scratch the model
// reports for a batch of B sequences of length T (Model::activation_values / scratch_values)
// under an activation policy (checkpointing and offloading change the activations).
#pragma once
#include <cstddef>

#include "models/model.h"

namespace strata {

struct MemoryEstimate {
  size_t parameters, gradients, optimizer_state, activations, scratch;
  size_t offloaded;  // activations in the offload pool (file-backed, not resident)
  // Resident bytes at the peak of a training step.
  size_t total() const { return parameters + gradients + optimizer_state + activations + scratch; }
};

MemoryEstimate estimate_training_memory(const Model<float>& model, int B, int T, size_t bytes_per_value = 4,
                                        int optimizer_states = 2, const nn::ActivationPolicy& activations = {});

}  // namespace strata
