#include "models/memory_estimate.h"

namespace strata {

MemoryEstimate estimate_training_memory(const ModelConfig& c, size_t num_params, int B, int T, size_t bytes,
                                        int optimizer_states) {
  const size_t N = static_cast<size_t>(B) * T, C = c.hidden_size, F = c.intermediate_size;
  const size_t NC = N * C, NF = N * F;
  const size_t per_layer = 3 * NC                                   // qkv
                           + static_cast<size_t>(B) * c.num_heads * T * T  // attention probabilities
                           + NC                                     // context
                           + 4 * NC                                 // LN1 in/out, LN2 in/out
                           + 2 * NF                                 // FFN pre-activation and activation
                           + 4 * N;                                 // LayerNorm statistics
  size_t acts = 2 * NC + 2 * N + per_layer * c.num_layers;          // embeddings
  size_t logits = 0;
  if (c.task == Task::SequenceClassification) {
    acts += 3 * static_cast<size_t>(B) * C;
    logits = static_cast<size_t>(B) * c.num_labels;
  } else if (c.task == Task::MaskedLM) {
    acts += 3 * NC + 2 * N;
    logits = N * c.vocab_size;
  }
  acts += logits;
  const size_t scratch = 3 * NC + NF + 3 * NC  // layer backward
                         + 2 * NC + 2 * NC     // hidden-state gradients, head / embedding scratch
                         + logits;             // d(loss)/d(logits)
  return {num_params * bytes, num_params * bytes, num_params * bytes * optimizer_states, acts * bytes,
          scratch * bytes};
}

}  // namespace strata
