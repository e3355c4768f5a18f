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
// Data movement (kernels/cuda/data.cu), with the signatures the `dataops` branch gives these
// ops in kernels/ops.h. Outside the op list until that branch lands (its CPU copies are not on
// this branch yet); then each joins kernels/op_list.inc, and cast is dispatched by hand (two
// element types).
void fill(T* x, size_t n, T value);
void copy(const T* src, T* dst, size_t n);
void copy_rows(const T* src, size_t ld_src, T* dst, size_t ld_dst, size_t rows, size_t cols);
void gather_rows(const T* src, const int32_t* index, T* dst, int rows, int cols);
void scatter_rows(const T* src, const int32_t* index, T* dst, int rows, int cols);
void argmax_rows(const T* x, int rows, int cols, int32_t* out);
void cast(const float* src, double* dst, size_t n);
void cast(const double* src, float* dst, size_t n);
double ce_slice_loss(const int32_t* labels, const T* mx, const double* sumexp, const double* target, int N,
                     double norm);

// Whether linear_act_forward's GeluTanh runs through cuBLASLt's GELU epilogue (on by
// default; tests/gpu/test_backend_ops.cpp checks the op both ways).
void set_gelu_epilogue(bool on);

}  // namespace strata::kernels::cuda
