#!/usr/bin/env bash
# Pipeline throughput against the number of micro-batches, on this machine: the 8-layer GPT-2
# of examples/pipeline/gpt2-8l (hidden 256, vocab 8000, 8.4M parameters, random init, dropout
# 0.1), causal LM on the first 3000 texts of examples/corpus in blocks of 128 tokens, batch 16
# per replica. Runs, one after the other:
#   1 process x 2 threads                       (the baseline: the same 2 cores, no parallelism)
#   2 processes x 1 thread, data parallel       (per-device batch 8: the same global batch)
#   2 processes x 1 thread, 2 pipeline stages   for each micro-batch count in --micro
#
#   bench/pipeline.sh [--steps S] [--micro "1 2 4 8 16"] [--schedule interleaved|simple] [--repeat R]
#
# ms/step is the steady state (bench/steady_ms_per_step.awk: log lines timestamped as they
# arrive, the first step left out), the median of --repeat runs. The bubble columns are the
# job's own end-of-training summary (of the last run): measured = the fraction of a step's
# pipeline phase (as long as the longest stage's schedule) in which a stage was not computing,
# mean over stages; theory = (p-1)/(m+p-1) for equal stages.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
STEPS=6
MICRO="1 2 4 8 16"
SCHEDULE=interleaved
REPEAT=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) STEPS=$2; shift 2 ;;
    --micro) MICRO=$2; shift 2 ;;
    --schedule) SCHEDULE=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "pipeline.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x build/strata ]] || { echo "pipeline.sh: build/strata is missing (cmake --build build)" >&2; exit 1; }
if pgrep -x cc1plus >/dev/null || pgrep -x ninja >/dev/null; then
  echo "pipeline.sh: warning: a compiler is running; the numbers will be low" >&2
fi
WORK=out/bench_pipeline
mkdir -p "$WORK/logs"
python3 -c "import gzip, itertools, sys; sys.stdout.writelines(itertools.islice(gzip.open(sys.argv[1], 'rt'), 3000))" \
  examples/corpus/pretrain.txt.gz > "$WORK/train.txt"
cat > "$WORK/job.yaml" <<YAML
model_name_or_path: examples/pipeline/gpt2-8l
tokenizer_name: examples/tokenizers/bpe-8k
train_file: $WORK/train.txt
block_size: 128
overwrite_output_dir: true
do_eval: false
save_strategy: "no"
per_device_train_batch_size: 16
learning_rate: 1.0e-3
logging_steps: 1
seed: 42
YAML
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# name, processes, threads, strata --set options...: one run per repeat; prints "ms bubble theory"
run() {
  local name=$1 np=$2 threads=$3
  shift 3
  local ms=() bubble=- theory=-
  for ((r = 1; r <= REPEAT; ++r)); do
    local log=$WORK/logs/$name.$r.log out=$WORK/$name
    local args=(train "$WORK/job.yaml" --set output_dir="$out" --set max_steps="$STEPS" --set num_threads="$threads" "$@")
    local cmd=(build/strata "${args[@]}")
    [[ $np == 1 ]] || cmd=(mpirun --oversubscribe -np "$np" -x OMP_NUM_THREADS="$threads" build/strata "${args[@]}")
    set +e
    OMP_NUM_THREADS=$threads "${cmd[@]}" 2>&1 | while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done > "$log"
    local rc=${PIPESTATUS[0]}
    set -e
    if [[ $rc != 0 ]]; then
      echo "$name: FAILED (rc $rc): ${cmd[*]}" >&2; tail -n 15 "$log" | cut -d' ' -f2- >&2; exit 1
    fi
    ms+=("$(awk -f bench/steady_ms_per_step.awk "$log" | cut -d' ' -f2)")
    bubble=$(python3 -c "import json;print(json.load(open('$out/train_results.json')).get('pipeline_bubble_measured','-'))")
    theory=$(python3 -c "import json;print(json.load(open('$out/train_results.json')).get('pipeline_bubble_theoretical','-'))")
  done
  echo "$(printf '%s\n' "${ms[@]}" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}') $bubble $theory"
}

declare -A MS BUBBLE THEORY
ORDER=()
record() {  # name, "ms bubble theory"
  local ms bubble theory
  read -r ms bubble theory <<< "$2"
  MS["$1"]=$ms
  BUBBLE["$1"]=$bubble
  THEORY["$1"]=$theory
  ORDER+=("$1")
  echo "  $1: ${MS[$1]} ms/step (median of $REPEAT), bubble measured ${BUBBLE[$1]}, theory ${THEORY[$1]}" >&2
}
echo "== baseline and data parallel" >&2
record "1 process x 2 threads" "$(run single 1 2)"
record "dp 2 x 1 thread" "$(run dp2 2 1 --set per_device_train_batch_size=8)"
for m in $MICRO; do
  echo "== pipeline 2 stages, $m micro-batches ($SCHEDULE)" >&2
  record "pp 2, m $m, $SCHEDULE" "$(run "pp2_m$m" 2 1 --set pipeline_parallel_degree=2 --set microbatches="$m" \
    --set pipeline="$SCHEDULE")"
done

echo
echo "machine: $(lscpu | awk -F': *' '/^Model name/ {print $2; exit}'), $(nproc) cores; load average before the table: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "GPT-2 8 layers, hidden 256, vocab 8000; global batch 16 x 128 tokens; $STEPS steps, steady state over the last $((STEPS - 1)), median of $REPEAT runs"
printf '%-30s %10s %10s %12s %16s %14s\n' config ms/step tokens/s "x baseline" "bubble measured" "bubble theory"
base=${MS["1 process x 2 threads"]}
for name in "${ORDER[@]}"; do
  python3 - "$name" "${MS[$name]}" "$base" "${BUBBLE[$name]}" "${THEORY[$name]}" <<'PY'
import sys
name, ms, base, bubble, theory = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
print(f"{name:<30} {ms:10.1f} {16 * 128 * 1000 / ms:10.0f} {base / ms:12.3f} {bubble:>16} {theory:>14}")
PY
done
