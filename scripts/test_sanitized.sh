#!/usr/bin/env bash
# Builds the test suite with AddressSanitizer + UndefinedBehaviorSanitizer (CMakePresets.json,
# "asan") into build-asan/ and runs it; any sanitizer report fails its test.
# docs/reliability.md, "Sanitizers", says what runs and why.
#   scripts/test_sanitized.sh [ctest options...]   the whole suite through CTest, e.g. -R 'Kernels|Trainer'
#   scripts/test_sanitized.sh --ci                 what .ci/run runs: the unit-test binary whole, and
#                                                  the MPI tests of the collectives, the watchdog and
#                                                  data parallelism through `strata train`
set -euo pipefail
cd "$(dirname "$0")/.."
ci=0
if [[ ${1:-} == --ci ]]; then ci=1; shift; fi
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
if [[ ! -f build-asan/build.ninja ]]; then cmake --preset asan "${launcher[@]}"; fi
supp=$PWD/tests/sanitizers
# halt_on_error / abort_on_error: the first report ends the process with a failure status.
# detect_leaks: LeakSanitizer runs at exit; OpenMPI's and oneDNN's one-time allocations that
# live until exit are suppressed by library (tests/sanitizers/lsan.supp). fast_unwind_on_malloc=0:
# the frame-pointer unwinder stops at the first frame of OpenMPI's components (built without
# frame pointers), so their allocations showed as "<unknown module>" and no suppression matched.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=0:fast_unwind_on_malloc=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
# OpenMPI's shared-memory transport maps memory ASan does not know; vader's single-copy
# mechanism (CMA) is not needed for correctness.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=2
if ((ci)); then
  cmake --build build-asan --target strata_tests strata strata_dist_check
  # One process for all unit tests: CTest would start 500 sanitized processes, one per test.
  build-asan/tests/strata_tests --gtest_brief=1
  ctest --test-dir build-asan --output-on-failure -j2 --timeout 1200 \
    -R '^(DistCollectives2Ranks|DistTimeout4Ranks|DdpEquivalence)$'
else
  cmake --build build-asan
  ctest --test-dir build-asan --output-on-failure -j2 --timeout 1200 "$@"
fi
