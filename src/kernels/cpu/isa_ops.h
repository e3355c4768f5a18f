// The per-ISA copies of the kernels in kernels/cpu/simd/ (kernels/cpu/isa.h): the public ops
// call one of them (isa_dispatch.cpp); tests call each directly to compare them bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/isa.h"
#include "kernels/ops.h"

namespace strata::kernels::baseline {
#include "kernels/cpu/isa_ops.inc"
}  // namespace strata::kernels::baseline
namespace strata::kernels::avx2 {
#include "kernels/cpu/isa_ops.inc"
}  // namespace strata::kernels::avx2
namespace strata::kernels::avx512 {
#include "kernels/cpu/isa_ops.inc"
}  // namespace strata::kernels::avx512

// Calls the copy of kernel `fn` (a name inside the ISA namespaces, e.g. scale<float>) for ISA
// `isa` with the remaining arguments, and returns its result.
#define STRATA_ISA_CALL(isa, fn, ...)                                              \
  do {                                                                             \
    switch (isa) {                                                                 \
      case ::strata::kernels::Isa::Avx512: return ::strata::kernels::avx512::fn(__VA_ARGS__); \
      case ::strata::kernels::Isa::Avx2: return ::strata::kernels::avx2::fn(__VA_ARGS__);     \
      case ::strata::kernels::Isa::Baseline: break;                                \
    }                                                                              \
    return ::strata::kernels::baseline::fn(__VA_ARGS__);                           \
  } while (0)
