// Which instruction set the element-wise and attention kernels run with. The build is portable
// (no -march=native by default): kernels/cpu/simd/ is compiled once per ISA below, each copy in
// its own namespace (strata::kernels::baseline / avx2 / avx512), and the public ops pick one
// copy once, at the first call, from the CPU's features. oneDNN chooses its own GEMM kernels
// (and honours ONEDNN_MAX_CPU_ISA).
#pragma once

namespace strata::kernels {

// Ordered: a cap keeps every ISA at or below it.
enum class Isa { Baseline, Avx2, Avx512 };

// "baseline" (x86-64, SSE2), "avx2" (AVX2 + FMA), "avx512" (AVX-512 F/BW/VL/DQ).
const char* isa_name(Isa isa);

// The best ISA this CPU (and its OS) supports.
Isa detected_isa();

// The ISA the kernels use: `cpu` capped by `cap`, the value of STRATA_MAX_CPU_ISA (null or
// empty: no cap). A cap above the CPU's ISA is no cap, as with ONEDNN_MAX_CPU_ISA. Throws
// strata::Error naming the variable and the accepted values for any other string.
Isa choose_isa(Isa cpu, const char* cap);

// choose_isa(detected_isa(), getenv("STRATA_MAX_CPU_ISA")), computed once per process.
Isa active_isa();

}  // namespace strata::kernels
