// Training memory of an EncoderModel step, counted from the buffers the code allocates
// (see EncoderLayerSaved, Activations): parameters, gradients, optimizer state, saved
// activations and backward scratch, for a batch of B sequences of length T.
#pragma once
#include <cstddef>

#include "models/config.h"

namespace strata {

struct MemoryEstimate {
  size_t parameters, gradients, optimizer_state, activations, scratch;
  size_t total() const { return parameters + gradients + optimizer_state + activations + scratch; }
};

MemoryEstimate estimate_training_memory(const ModelConfig& c, size_t num_params, int B, int T,
                                        size_t bytes_per_value = 4, int optimizer_states = 2);

}  // namespace strata
