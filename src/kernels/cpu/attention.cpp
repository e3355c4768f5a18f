// The attention kernels are in simd/attention.inc (one copy per ISA); this is their shape.
#include <cmath>

#include "kernels/cpu/cpu_ops.h"

namespace strata::kernels {

double AttentionShape::score_scale() const { return scale_scores ? 1.0 / std::sqrt(static_cast<double>(C / NH)) : 1.0; }

// The CPU keeps the probabilities: its backward multiplies by them instead of recomputing.
size_t cpu::attention_saved_size(const AttentionShape& s) {
  return static_cast<size_t>(s.B) * s.NH * s.T * s.T;
}

}  // namespace strata::kernels
