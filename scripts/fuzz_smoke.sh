#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang with ASan + UBSan) in build-fuzz/ and runs each
# from its committed seed corpus for SECONDS seconds (default 30). Any crash, hang, leak or
# sanitizer report fails the script; the reproducer is left in build-fuzz/findings/.
#   scripts/fuzz_smoke.sh [SECONDS] [TARGET...]
# docs/reliability.md ("Fuzzing") has the long runs and how to reproduce a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true

runtime=$(clang++-14 -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null || true)
if [[ ! -f "$runtime" ]]; then
  echo "fuzz_smoke: libFuzzer's runtime (libclang_rt.fuzzer-x86_64.a) is missing: install clang-14 and" \
       "libclang-rt-14-dev (scripts/install_deps.sh)" >&2
  exit 1
fi
# The fuzz build links what the parsers reference but do not run from the regular build's
# libstrata_core.a (fuzz/CMakeLists.txt).
if [[ ! -f build/build.ninja ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build build --target strata_core
if [[ ! -f build-fuzz/build.ninja ]]; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Fuzz -DCMAKE_CXX_COMPILER=clang++-14 -DSTRATA_FUZZ=ON \
    -DBUILD_TESTING=OFF -DSTRATA_BUILD_BENCH=OFF
fi
cmake --build build-fuzz --target fuzz_targets

targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for d in fuzz/corpus/*/; do targets+=("$(basename "$d")"); done
fi
mkdir -p build-fuzz/findings
failed=()
for t in "${targets[@]}"; do
  # New inputs go to a scratch corpus: the committed seeds stay as they are.
  work=build-fuzz/corpus-work/$t
  mkdir -p "$work"
  log=build-fuzz/findings/$t.log
  if build-fuzz/fuzz/fuzz_$t "$work" "fuzz/corpus/$t" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 \
      -artifact_prefix="build-fuzz/findings/$t-" -print_final_stats=1 >"$log" 2>&1; then
    echo "fuzz_smoke: $t: $(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}') executions, no finding"
  else
    echo "fuzz_smoke: $t: FINDING (see $log and build-fuzz/findings/$t-*)" >&2
    grep -E "^==[0-9]+==ERROR|runtime error|SUMMARY|Test unit written" "$log" | head -5 >&2 || true
    failed+=("$t")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz_smoke: findings in: ${failed[*]}" >&2
  exit 1
fi
