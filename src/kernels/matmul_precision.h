// The precision fp32 matrix products run in: PyTorch autocast's recipe for mixed precision.
// Under Bf16 or Fp16 every kernels::gemm<float> (and so every linear layer, attention's two
// products and the LM head) rounds its inputs to that type, nearest-even, and accumulates in
// fp32; everything else (layer norm, softmax, losses, GELU, reductions, the optimizer) stays
// fp32, and so do the weights (the fp32 master copy: the rounded working copy is made from it
// at each product, so it is always the master's nearest bf16 / fp16 and has no state).
// fp64 products (gradient checks) are never rounded.
//
// Two paths give the same products up to summation order:
//   Native    oneDNN's bf16 matmul (brgemm) on a CPU with avx512_bf16 or AMX; the operands
//             are converted to bf16 once per product.
//   Emulated  the operands are rounded to bf16 / fp16 in fp32 storage and multiplied by the
//             fp32 GEMM: exact products of the rounded values, summed in fp32. Runs anywhere,
//             at fp32 speed or a little below: it lets the recipe be tested on every machine.
#pragma once
#include <cstddef>
#include <string>

namespace strata::kernels {

enum class MatmulPrecision { Fp32, Bf16, Fp16 };

// The most operand values a CPU product converts at once (both operands; 4 MiB of bf16): a
// larger product runs in parts (kernels/cpu/half_gemm.cpp), so the conversion buffers, which
// keep their largest size, stay this small.
inline constexpr size_t kMostConvertedValues = size_t{1} << 21;
enum class MatmulPath { Native, Emulated };

const char* precision_name(MatmulPrecision p);  // "fp32", "bf16", "fp16"

// Process-wide, as torch.set_float32_matmul_precision: set before a run's first product.
// Native requires native_matmul_available(p).
void set_matmul_precision(MatmulPrecision p, MatmulPath path = MatmulPath::Emulated);
MatmulPrecision matmul_precision();
MatmulPath matmul_path();

// Whether this CPU multiplies `p` natively (oneDNN's ISA, capped by ONEDNN_MAX_CPU_ISA and
// STRATA_MAX_CPU_ISA, has avx512_bf16 or AMX for bf16; oneDNN 2.6 has no fp16 CPU matmul).
// Otherwise false, and *why says what the CPU has and what would do instead.
bool native_matmul_available(MatmulPrecision p, std::string* why);

// What performs products in `p` on `path`, for a run's log: "oneDNN brg:avx512_core_bf16",
// "emulated: inputs rounded to bf16, fp32 GEMM", "fp32 GEMM".
std::string matmul_implementation(MatmulPrecision p, MatmulPath path);

// TF32 for fp32 products on an NVIDIA GPU (HF's `tf32`, torch.backends.cuda.matmul.allow_tf32):
// off by default, so a GPU's fp32 products are exact fp32 (cuBLASLt's CUBLAS_COMPUTE_32F);
// on, they round their inputs to TF32 (CUBLAS_COMPUTE_32F_FAST_TF32). Process-wide, set
// before a run's first product; the CPU ignores it.
void set_tf32(bool on);
bool tf32();

// y[i] = x[i] rounded to p (nearest-even; fp16 overflows to inf, underflows to subnormals or
// zero), in fp32 storage. y may alias x. Fp32: a copy.
void round_to_precision(MatmulPrecision p, const float* x, float* y, size_t n);

}  // namespace strata::kernels
