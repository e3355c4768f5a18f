// Brackets the code of a kernels/cpu/simd/*.inc file. The file is compiled once per ISA by
// kernels/cpu/isa_<name>.cpp, which defines STRATA_ISA (the namespace) and STRATA_ISA_TARGET
// (a `#pragma GCC target` for it, or nothing for the baseline). Only the functions defined
// between STRATA_ISA_BEGIN and STRATA_ISA_END get the wider instructions: the headers a .inc
// file includes come first and stay baseline, so an inline or template function they define
// (std::, vec::, DropoutMask) is the same code in every object and the linker may keep any
// copy. GCC inlines them into the ISA's functions, where they are vectorised at its width.
#pragma once

#define STRATA_ISA_BEGIN \
  _Pragma("GCC push_options") STRATA_ISA_TARGET namespace strata::kernels::STRATA_ISA {
#define STRATA_ISA_END \
  }                    \
  _Pragma("GCC pop_options")
