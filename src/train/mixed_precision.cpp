#include "train/mixed_precision.h"

#include <algorithm>

#include "util/error.h"

namespace strata {

namespace k = kernels;

namespace {
k::MatmulPrecision precision_of(bool bf16, bool fp16) {
  return bf16 ? k::MatmulPrecision::Bf16 : fp16 ? k::MatmulPrecision::Fp16 : k::MatmulPrecision::Fp32;
}
}  // namespace

MixedPrecision requested_precision(const TrainingArguments& a) {
  MixedPrecision m;
  m.train = precision_of(a.bf16, a.fp16);
  // As HF: evaluation runs under the training autocast unless a *_full_eval flag asks for more.
  m.eval = a.bf16_full_eval || a.fp16_full_eval ? precision_of(a.bf16_full_eval, a.fp16_full_eval) : m.train;
  m.path = a.half_precision_backend == "emulated" ? k::MatmulPath::Emulated : k::MatmulPath::Native;
  return m;
}

MixedPrecision mixed_precision(const TrainingArguments& a) {
  const MixedPrecision m = requested_precision(a);
  if (m.path == k::MatmulPath::Native) {
    for (const auto& [p, option] : {std::pair{m.train, a.bf16 ? "bf16" : "fp16"},
                                    std::pair{m.eval, a.bf16_full_eval ? "bf16_full_eval" : "fp16_full_eval"}}) {
      std::string why;
      if (p != k::MatmulPrecision::Fp32 && !k::native_matmul_available(p, &why))
        fail(option, ": ", why, ". Set ", option,
             ": false to train in fp32, or half_precision_backend: emulated to run the same numerics at fp32 "
             "speed (rounded inputs, fp32 products; for testing the recipe)");
    }
  }
  return m;
}

std::string MixedPrecision::describe() const {
  if (!any()) return "fp32";
  const k::MatmulPrecision reduced = train != k::MatmulPrecision::Fp32 ? train : eval;
  std::string s = cat(k::precision_name(train), " training");
  if (eval != train) s += cat(", ", k::precision_name(eval), " evaluation");
  s += cat(": products take ", k::precision_name(reduced), " inputs and accumulate in fp32 (",
           k::matmul_implementation(reduced, path),
           "); master weights, optimizer state, norms, softmax and losses fp32");
  if (loss_scaling()) s += "; dynamic loss scaling";
  return s;
}

size_t product_operand_bytes(const MixedPrecision& m, const ModelConfig& c, size_t tokens, bool on_gpu) {
  if (!m.any()) return 0;
  const bool native = m.path == k::MatmulPath::Native && m.train != k::MatmulPrecision::Fp16 &&
                      m.eval != k::MatmulPrecision::Fp16;
  const size_t d = static_cast<size_t>(std::max(c.tensor_split.degree, 1));
  const size_t C = static_cast<size_t>(c.hidden_size), N = tokens;
  const size_t F = static_cast<size_t>(c.intermediate_size) / d, QKV = 3 * C / d;
  // Each product's two operands: the FFN's (x W2 backward reads dy [N, C] with h [N, F] or
  // W2 [C, F]; W1's reads dh [N, F] with W1 [F, C] or x), the QKV projection's, the LM head's.
  size_t largest = std::max(N * F + std::max(F * C, N * C), N * QKV + std::max(QKV * C, N * C));
  if (vocab_logits(c.task)) {
    const size_t V = static_cast<size_t>(c.vocab_size) / d, E = static_cast<size_t>(c.embedding_size > 0 ? c.embedding_size : c.hidden_size);
    largest = std::max(largest, N * V + std::max(V * E, N * E));
  }
  if (on_gpu) return largest * 2;
  // The CPU converts at most kMostConvertedValues at once (larger products run in parts).
  return std::min(largest, k::kMostConvertedValues) * (native ? 2 : 4);
}

MatmulPrecisionScope::MatmulPrecisionScope(k::MatmulPrecision p, k::MatmulPath path)
    : before_(k::matmul_precision()), before_path_(k::matmul_path()) {
  k::set_matmul_precision(p, path);
}

MatmulPrecisionScope::~MatmulPrecisionScope() { k::set_matmul_precision(before_, before_path_); }

}  // namespace strata
