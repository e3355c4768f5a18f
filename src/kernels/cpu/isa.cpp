#include "kernels/cpu/isa.h"

#include <strings.h>

#include <cstdlib>

#include "util/error.h"

namespace strata::kernels {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Baseline: return "baseline";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

Isa detected_isa() {
  // libgcc's checks include the OS's XSAVE support for the wider registers.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return Isa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::Avx2;
  return Isa::Baseline;
}

Isa choose_isa(Isa cpu, const char* cap) {
  if (cap == nullptr || *cap == '\0') return cpu;
  for (const Isa isa : {Isa::Baseline, Isa::Avx2, Isa::Avx512})
    if (strcasecmp(cap, isa_name(isa)) == 0) return isa < cpu ? isa : cpu;
  fail("STRATA_MAX_CPU_ISA=", cap, ": expected baseline, avx2 or avx512 (the most the kernels may use)");
}

Isa active_isa() {
  static const Isa isa = choose_isa(detected_isa(), std::getenv("STRATA_MAX_CPU_ISA"));
  return isa;
}

}  // namespace strata::kernels
