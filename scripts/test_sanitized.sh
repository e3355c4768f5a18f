#!/usr/bin/env bash
# Builds the test suite with AddressSanitizer + UndefinedBehaviorSanitizer (CMakePresets.json,
# "asan") into build-asan/ and runs it; any sanitizer report fails its test.
# docs/reliability.md, "Sanitizers", says what runs and why.
#   scripts/test_sanitized.sh [ctest options...]   the whole suite through CTest, e.g. -R 'Kernels|Trainer'
#   scripts/test_sanitized.sh --ci                 what .ci/run runs: the unit-test binary whole, and
#                                                  the MPI tests of the collectives, the watchdog and
#                                                  data parallelism through `strata train`
#   scripts/test_sanitized.sh --tsan               ThreadSanitizer ("tsan" preset, build-tsan/) over
#                                                  the tests of strata's own threads
set -euo pipefail
cd "$(dirname "$0")/.."
configure() {  # PRESET: configures build-PRESET/ once (CMakePresets.json; through ccache if present: CMakeLists.txt)
  if [[ ! -f build-$1/build.ninja ]]; then cmake --preset "$1"; fi
}
ci=0
if [[ ${1:-} == --ci ]]; then ci=1; shift; fi
if [[ ${1:-} == --tsan ]]; then
  configure tsan
  cmake --build build-tsan --target strata_tests strata strata_dist_check
  # One OpenMP thread: libgomp is not instrumented, so ThreadSanitizer cannot see the barriers
  # of a parallel region and reports every kernel that runs on two threads. The threads under
  # test are strata's own: the data loader's workers, the tokenizer's encode threads, the
  # signal thread, the watchdog and the gradient reducer's communication thread.
  export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
  # Reports go to files: the tests that expect a rank to fail (the watchdog's) would not
  # notice a report on their own; any file left there fails the run.
  reports=$PWD/build-tsan/tsan-reports
  rm -rf "$reports" && mkdir -p "$reports"
  export TSAN_OPTIONS="second_deadlock_stack=1:suppressions=$PWD/tests/sanitizers/tsan.supp:log_path=$reports/report"
  status=0
  build-tsan/tests/strata_tests --gtest_brief=1 --gtest_filter='DataLoader.*:DataMlm.GroupedBlocksAndLoaderDeterminism:PretrainingDeterminism.*:TokenizerThreads.*:TrainInterrupt.*:TrainerTest.*:QaCli.*:Tokenizers/QaFeaturesHf.*' || status=1
  ctest --test-dir build-tsan --output-on-failure -j2 --timeout 600 \
    -R '^(DistCollectives[24]Ranks|DistTimeout4Ranks|DistTimeoutRoot4Ranks|DistTimeoutRecv2Ranks|DistTimeoutIrecv2Ranks|DistEarlyExit3Ranks|DistDieKill3Ranks|DdpEquivalence|DdpCheckpointing)$' || status=1
  if compgen -G "$reports/report.*" > /dev/null; then
    cat "$reports"/report.*
    echo "ThreadSanitizer reported races: $reports" >&2
    exit 1
  fi
  echo "ThreadSanitizer: no report"
  exit $status
fi
configure asan
supp=$PWD/tests/sanitizers
# halt_on_error / abort_on_error: the first report ends the process with a failure status.
# detect_leaks: LeakSanitizer runs at exit; OpenMPI's and oneDNN's one-time allocations that
# live until exit are suppressed by library (tests/sanitizers/lsan.supp).
asan="halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=0"
# Under mpirun, fast_unwind_on_malloc=0: the frame-pointer unwinder stops at the first frame of
# OpenMPI's components (built without frame pointers), so their allocations showed as
# "<unknown module>" and no suppression matched. It doubles the unit tests' time (9 min
# against 4 here), which need no MPI suppression, so they keep the fast unwinder.
export ASAN_OPTIONS="$asan:fast_unwind_on_malloc=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
# OpenMPI's shared-memory transport maps memory ASan does not know; vader's single-copy
# mechanism (CMA) is not needed for correctness.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=2
if ((ci)); then
  cmake --build build-asan --target strata_tests strata strata_dist_check
  # One process for all unit tests: CTest would start 500 sanitized processes, one per test.
  ASAN_OPTIONS=$asan build-asan/tests/strata_tests --gtest_brief=1
  ctest --test-dir build-asan --output-on-failure -j2 --timeout 1200 \
    -R '^(DistCollectives2Ranks|DistTimeout4Ranks|DdpEquivalence)$'
else
  cmake --build build-asan
  ctest --test-dir build-asan --output-on-failure -j2 --timeout 1200 "$@"
fi
