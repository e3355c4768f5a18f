// The kernels of kernels/cpu/simd/ for any x86-64 CPU (SSE2), the fallback of kernels/cpu/isa.h.
#define STRATA_ISA baseline
#define STRATA_ISA_TARGET
#include "kernels/cpu/simd/all.inc"
