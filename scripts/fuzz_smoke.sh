#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang with ASan + UBSan) in build-fuzz/ and runs them
# from their committed seed corpora. Any crash, hang, leak or sanitizer report fails the script;
# the reproducer is left in build-fuzz/findings/.
#   scripts/fuzz_smoke.sh [TARGET...]                the CI smoke (every target by default): seed 1,
#                                                    a fixed number of executions (SMOKE_RUNS
#                                                    below), a fresh corpus
#   scripts/fuzz_smoke.sh --seconds S [TARGET...]    exploration: a random seed for S seconds, the
#                                                    corpus kept in build-fuzz/corpus-work/
# The smoke is reproducible: the same commit gives the same inputs on any machine, so CI fails
# on a regression, not on the luck of a time-limited search. Exploration finds new bugs; each
# becomes a regression test and a fix (docs/reliability.md, "Fuzzing").
set -euo pipefail
cd "$(dirname "$0")/.."

# Executions per target: about 20 s each on one core of the 2-core development machine.
declare -A SMOKE_RUNS=(
  [batch_json]=25000 [csv]=25000 [job_spec]=20000 [jsonl]=20000 [model_config]=120000
  [regex_match]=15000 [safetensors_header]=100000 [safetensors_index]=150000 [tokenizer_encode]=2000
  [tokenizer_json]=6000 [torch_bin]=250000 [vocab_merges]=40000 [vocab_txt]=60000)
seconds=
if [[ ${1:-} == --seconds ]]; then
  [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "fuzz_smoke: --seconds expects a positive number of seconds" >&2; exit 2; }
  seconds=$2
  shift 2
fi
for t in "$@"; do
  [[ -d fuzz/corpus/$t ]] || { echo "fuzz_smoke: no fuzz target '$t' (fuzz/corpus/ names them)" >&2; exit 2; }
done

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
# fuzz_one TARGET: runs it; its log in build-fuzz/findings/TARGET.log, its exit status in
# TARGET.status. Each target is one process on one core: as many run at once as there are
# cores (the smoke's executions and seeds are fixed, so the order changes nothing).
fuzz_one() {
  local t=$1 work budget
  rm -f "build-fuzz/findings/$t.status"
  if [[ -n $seconds ]]; then
    # New inputs go to a scratch corpus: the committed seeds stay as they are.
    work=build-fuzz/corpus-work/$t
    mkdir -p "$work"
    budget=(-max_total_time="$seconds")
  else
    work=build-fuzz/corpus-smoke/$t
    rm -rf "$work"
    mkdir -p "$work"
    budget=(-seed=1 -runs="${SMOKE_RUNS[$t]}" -reload=0)
  fi
  local rc=0
  build-fuzz/fuzz/fuzz_$t "$work" "fuzz/corpus/$t" "${budget[@]}" -timeout=25 -rss_limit_mb=4096 \
    -artifact_prefix="build-fuzz/findings/$t-" -print_final_stats=1 > "build-fuzz/findings/$t.log" 2>&1 || rc=$?
  echo "$rc" > "build-fuzz/findings/$t.status"
}
for t in "${targets[@]}"; do
  [[ -n $seconds || -n ${SMOKE_RUNS[$t]:-} ]] || { echo "fuzz_smoke: $t has no entry in SMOKE_RUNS" >&2; exit 1; }
done
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= $(nproc))); do wait -n || true; done
  fuzz_one "$t" &
done
wait
failed=()
for t in "${targets[@]}"; do
  log=build-fuzz/findings/$t.log
  if [[ $(cat "build-fuzz/findings/$t.status" 2> /dev/null) == 0 ]]; then
    echo "fuzz_smoke: $t: $(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | awk '{print $2 " executions in " $5 " s"}'), no finding"
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
