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
WORK=out/bench_pipeline
source bench/timed_runs.sh  # gpt2_8l_job, run, record (WORK, STEPS, REPEAT set above)
gpt2_8l_job pipeline.sh
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
