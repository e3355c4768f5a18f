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

// The log-sum-exp of each row, [B, NH, T], then the key mask as floats, [B, T]: the backward
// recomputes the probabilities, and its signature has no mask (attention.cu).
size_t attention_saved_size(const AttentionShape& s);
// Two element types, so outside the list (kernels/cuda/data.cu).
void cast(const float* src, double* dst, size_t n);
void cast(const double* src, float* dst, size_t n);
// No element type, so outside the list too (kernels/cuda/data.cu).
void slice_ids(const int32_t* ids, int n, int first, int rows, int skip_id, int32_t* out);
void to_half(MatmulPrecision p, const float* x, uint16_t* y, size_t n);
void from_half(MatmulPrecision p, const uint16_t* x, float* y, size_t n);

// Whether linear_act_forward's GeluTanh runs through cuBLASLt's GELU epilogue (on by
// default; tests/gpu/test_backend_ops.cpp checks the op both ways).
void set_gelu_epilogue(bool on);

}  // namespace strata::kernels::cuda
