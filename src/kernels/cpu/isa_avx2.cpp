// The kernels of kernels/cpu/simd/ for CPUs with AVX2 and FMA (kernels/cpu/isa.h).
#define STRATA_ISA avx2
#define STRATA_ISA_TARGET _Pragma("GCC target(\"avx2,fma\")")
#include "kernels/cpu/simd/all.inc"
