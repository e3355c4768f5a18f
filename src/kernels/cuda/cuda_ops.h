// The GPU's copy of every device op (kernels/op_list.inc), fp32 only: fp64 (the gradient
// checks) runs on the CPU. Defined in this folder's .cu files by family; in a build without
// CUDA, kernels/no_cuda.cpp defines each as a stub that names it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/ops.h"

namespace strata::kernels::cuda {

using T = float;  // the element type the list's signatures are written in
#define STRATA_OP(ret, name, params, args) ret name params;
#include "kernels/op_list.inc"
#undef STRATA_OP

size_t attention_saved_size(const AttentionShape& s);  // the log-sum-exp of each row, [B, NH, T]

}  // namespace strata::kernels::cuda
