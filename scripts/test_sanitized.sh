#!/usr/bin/env bash
# Builds the test suite with AddressSanitizer + UndefinedBehaviorSanitizer (CMakePresets.json,
# "asan") into build-asan/ and runs it through CTest; any sanitizer report fails its test.
# docs/reliability.md, "Sanitizers", says what runs and why.
#   scripts/test_sanitized.sh [ctest options...]   e.g. -R 'Kernels|Trainer'
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
if [[ ! -f build-asan/build.ninja ]]; then cmake --preset asan "${launcher[@]}"; fi
cmake --build build-asan
supp=$PWD/tests/sanitizers
# halt_on_error / abort_on_error: the first report ends the process with a failure status.
# detect_leaks: LeakSanitizer runs at exit; OpenMPI's and oneDNN's one-time allocations that
# live until exit are suppressed by library (tests/sanitizers/lsan.supp).
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
# OpenMPI's shared-memory transport maps memory ASan does not know; vader's single-copy
# mechanism (CMA) is not needed for correctness.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=2 ctest --test-dir build-asan --output-on-failure -j2 --timeout 1200 "$@"
