// The CPU's copy of every device op (kernels/op_list.inc): templates over the element type,
// fp32 for training and fp64 for gradient checks. kernels/dispatch.cpp calls them when the
// current device is the CPU; they are defined in this folder's files by family.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/ops.h"

namespace strata::kernels::cpu {

#define STRATA_OP(ret, name, params, args) \
  template <typename T>                    \
  ret name params;
#include "kernels/op_list.inc"
#undef STRATA_OP

size_t attention_saved_size(const AttentionShape& s);  // the probabilities, [B, NH, T, T]
template <typename From, typename To>
void cast(const From* src, To* dst, size_t n);
void slice_ids(const int32_t* ids, int n, int first, int rows, int skip_id, int32_t* out);
void to_half(MatmulPrecision p, const float* x, uint16_t* y, size_t n);
void from_half(MatmulPrecision p, const uint16_t* x, float* y, size_t n);

}  // namespace strata::kernels::cpu
