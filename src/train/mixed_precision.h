// HF's mixed-precision flags (bf16, fp16, bf16_full_eval, fp16_full_eval,
// half_precision_backend) resolved for this CPU into the precision of the matrix products in
// training and in evaluation, and the path that runs them (kernels/matmul_precision.h).
#pragma once
#include <cstddef>
#include <string>

#include "kernels/matmul_precision.h"
#include "models/config.h"
#include "train/training_args.h"

namespace strata {

struct MixedPrecision {
  kernels::MatmulPrecision train = kernels::MatmulPrecision::Fp32;
  kernels::MatmulPrecision eval = kernels::MatmulPrecision::Fp32;
  kernels::MatmulPath path = kernels::MatmulPath::Emulated;
  bool loss_scaling() const { return train == kernels::MatmulPrecision::Fp16; }
  bool any() const { return train != kernels::MatmulPrecision::Fp32 || eval != kernels::MatmulPrecision::Fp32; }
  // One line for the run's log, e.g. "bf16 products (oneDNN brg:avx512_core_bf16) with fp32
  // accumulation; fp32 master weights, optimizer state and element-wise ops".
  std::string describe() const;
};

// What the arguments ask for, whatever this CPU can do (`strata plan` plans for other machines).
MixedPrecision requested_precision(const TrainingArguments& a);
// requested_precision, checked against this CPU: throws strata::Error, naming the option and
// what to set instead, when backend auto finds no native support (fp16 never has it here;
// bf16 needs avx512_bf16 or AMX).
MixedPrecision mixed_precision(const TrainingArguments& a);

// The bytes a thread keeps for the converted operands of its largest product over `tokens`
// rows (kernels/cpu/half_gemm.cpp: each operand is converted into a buffer of the thread's that
// only grows) under `m`: 2 bytes a value natively (bf16), 4 emulated (and fp16, which has no
// native CPU path), none in fp32. The largest product is the FFN's, the fused QKV projection's
// or a language-model head's over the vocabulary (each a tensor-parallel rank's slice), up to
// kernels::kMostConvertedValues (a larger one converts in parts). `on_gpu`: the GPU converts
// both operands of a product whole, 2 bytes a value, into blocks its caching allocator keeps
// (kernels/cuda/gemm.cu).
size_t product_operand_bytes(const MixedPrecision& m, const ModelConfig& c, size_t tokens, bool on_gpu = false);

// Products in `p` (on the given path) until the scope ends, then as before.
class MatmulPrecisionScope {
 public:
  MatmulPrecisionScope(kernels::MatmulPrecision p, kernels::MatmulPath path);
  ~MatmulPrecisionScope();
  MatmulPrecisionScope(const MatmulPrecisionScope&) = delete;
  MatmulPrecisionScope& operator=(const MatmulPrecisionScope&) = delete;

 private:
  kernels::MatmulPrecision before_;
  kernels::MatmulPath before_path_;
};

}  // namespace strata
