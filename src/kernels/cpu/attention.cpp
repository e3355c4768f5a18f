// The attention kernels are in simd/attention.inc (one copy per ISA); this is their shape.
#include <cmath>

#include "kernels/ops.h"

namespace strata::kernels {

double AttentionShape::score_scale() const { return scale_scores ? 1.0 / std::sqrt(static_cast<double>(C / NH)) : 1.0; }

}  // namespace strata::kernels
