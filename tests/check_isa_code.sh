#!/bin/sh
# Reads the machine code of strata's binaries (objdump -d) and fails if any function outside the
# per-ISA kernel copies (strata::kernels::avx2:: / ::avx512::, kernels/cpu/isa.h) uses a 256- or
# 512-bit register, or if an AVX2 copy uses a 512-bit one: either would die with "Illegal
# instruction" on a CPU without that ISA. It also fails if the copies hold no such register at
# all (the dispatch would then buy nothing, and this check would prove nothing).
# Usage: check_isa_code.sh BINARY...
set -eu
status=0
for bin in "$@"; do
  objdump -d --no-show-raw-insn -C "$bin" | awk -v bin="$bin" '
    /^[0-9a-f]+ <.*>:$/ { fn = $0; next }
    /%[yz]mm[0-9]/ {
      z = ($0 ~ /%zmm[0-9]/)
      if (fn ~ /strata::kernels::avx512::/) { wide512 += z; next }
      if (fn ~ /strata::kernels::avx2::/) { wide256 += !z; if (!z) next }
      if (!(fn in bad)) { bad[fn] = $0; nbad++ }
    }
    END {
      for (f in bad) printf "%s: %s uses %s\n", bin, f, bad[f]
      if (wide256 == 0) { printf "%s: no ymm register in the AVX2 kernels\n", bin; nbad++ }
      if (wide512 == 0) { printf "%s: no 512-bit kernel code in the AVX-512 kernels\n", bin; nbad++ }
      if (nbad > 0) exit 1
      printf "%s: wide registers only in the per-ISA kernels (%d AVX2, %d AVX-512 instructions)\n", bin, wide256, wide512
    }' || status=1
done
exit $status
