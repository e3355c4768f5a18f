// The kernels of kernels/cpu/simd/ for CPUs with AVX-512 F/BW/VL/DQ (kernels/cpu/isa.h), with
// 512-bit vectors.
#define STRATA_ISA avx512
#define STRATA_ISA_TARGET \
  _Pragma("GCC target(\"avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,prefer-vector-width=512\")")
#include "kernels/cpu/simd/all.inc"
