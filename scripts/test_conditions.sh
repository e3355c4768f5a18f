#!/usr/bin/env bash
# The whole test suite (scripts/test.sh) under a condition of the machine, RUNS times, one
# line per run: its duration, passed / failed / skipped counts and the failed tests' names;
# the logs in build/test-conditions/. docs/reliability.md, "Every machine", records the runs.
#   scripts/test_conditions.sh CONDITION [RUNS [CTEST_ARGS...]]   e.g. ... busy 5 -R 'Job|Memory'
# (CTEST_ARGS narrow the suite to the tests named; without them it is the whole suite).
# CONDITION:
#   native     as the machine is
#   avx2       strata's kernels and oneDNN capped at AVX2 (STRATA_MAX_CPU_ISA, ONEDNN_MAX_CPU_ISA)
#   baseline   capped at the x86-64 baseline (oneDNN at SSE4.1)
#   busy       every core busy: stress-ng runs one CPU hog per core for the whole suite
#   one-core   the suite and everything it starts on core 0 only (taskset -c 0)
# Exits non-zero if any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
CONDITION=${1:?usage: test_conditions.sh native|avx2|baseline|busy|one-core [RUNS]}
RUNS=${2:-1}
shift $(($# < 2 ? $# : 2))
prefix=()
case $CONDITION in
  native) ;;
  avx2) prefix=(env STRATA_MAX_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2) ;;
  baseline) prefix=(env STRATA_MAX_CPU_ISA=baseline ONEDNN_MAX_CPU_ISA=SSE41) ;;
  busy)
    if ! command -v stress-ng > /dev/null; then
      PKGS=(stress-ng)
      source scripts/apt_packages.sh
      apt_packages
    fi
    ;;
  one-core) prefix=(taskset -c 0) ;;
  *) echo "test_conditions.sh: unknown condition '$CONDITION'" >&2; exit 2 ;;
esac
# Built first, so that the runs time the tests only.
[[ -f build/build.ninja ]] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build > /dev/null
logs=build/test-conditions
mkdir -p "$logs"
hog=
trap '[[ -z $hog ]] || kill "$hog" 2> /dev/null || true' EXIT
if [[ $CONDITION == busy ]]; then
  stress-ng --cpu "$(nproc)" --cpu-method matrixprod --quiet &
  hog=$!
fi
failures=0
for ((r = 1; r <= RUNS; ++r)); do
  log=$logs/$CONDITION-$r.log
  t0=$SECONDS
  rc=0
  "${prefix[@]}" ./scripts/test.sh "$@" > "$log" 2>&1 || rc=$?
  summary=$(grep -E "tests passed, [0-9]+ tests failed" "$log" | tail -1 || true)
  skipped=$(grep -c "\*\*\*Skipped" "$log" || true)
  failed=$(sed -n '/The following tests FAILED/,$p' "$log" | grep -E "^\s+[0-9]+ - " | sed -E 's/^\s+[0-9]+ - //' | tr '\n' ';' || true)
  echo "$CONDITION run $r: rc $rc, $((SECONDS - t0)) s; ${summary:-no ctest summary}; $skipped skipped${failed:+; failed: $failed}"
  ((rc == 0)) || failures=$((failures + 1))
done
echo "$CONDITION: $RUNS run(s), $failures failed; CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"
((failures == 0))
