#!/usr/bin/env bash
# Tensor-parallel step time against tp, on this machine: the 8-layer GPT-2 of
# examples/pipeline/gpt2-8l (hidden 256, 4 heads, vocab 8000, 8.4M parameters, random init,
# dropout 0.1), causal LM on the first 3000 texts of examples/corpus in blocks of 128 tokens,
# batch 16 x 128 tokens per step. Runs, one after the other:
#   1 process x 1 thread                     (tp 1: the baseline for one core per rank)
#   1 process x 2 threads                    (the same 2 cores, no parallelism)
#   2 processes x 1 thread, tensor parallel  (tp 2: 2 heads and half the MLP per rank)
#   2 processes x 1 thread, data parallel    (per-device batch 8: the same global batch)
# The machine has 2 cores: tp 2 can at best halve the baseline's compute per rank, and pays 4
# all-reduces of [16*128, 256] per block per step (2 forward, 2 backward) plus the embedding's
# and the LM head's; a tp 4 or larger run would only oversubscribe the cores.
#
#   bench/tensor_parallel.sh [--steps S] [--repeat R]
#
# ms/step is the steady state (bench/steady_ms_per_step.awk: the first step left out), the
# median of --repeat runs; "x baseline" = baseline ms / ms (the speed-up over 1 process x 1
# thread); "efficiency" = that / processes or threads.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
STEPS=6
REPEAT=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) STEPS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "tensor_parallel.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
WORK=out/bench_tensor_parallel
source bench/timed_runs.sh  # gpt2_8l_job, run, record (WORK, STEPS, REPEAT set above)
gpt2_8l_job tensor_parallel.sh
echo "== tensor parallelism against one process" >&2
record "1 process x 1 thread" "$(run single1 1 1)"
record "1 process x 2 threads" "$(run single2 1 2)"
record "tp 2 x 1 thread" "$(run tp2 2 1 --set tensor_parallel_degree=2)"
record "dp 2 x 1 thread" "$(run dp2 2 1 --set per_device_train_batch_size=8)"

echo
echo "machine: $(lscpu | awk -F': *' '/^Model name/ {print $2; exit}'), $(nproc) cores; load average before the table: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "GPT-2 8 layers, hidden 256, 4 heads, vocab 8000; batch 16 x 128 tokens per step; $STEPS steps, steady state over the last $((STEPS - 1)), median of $REPEAT runs"
printf '%-24s %10s %10s %12s %12s\n' config ms/step tokens/s "x baseline" efficiency
base=${MS["1 process x 1 thread"]}
for name in "${ORDER[@]}"; do
  python3 - "$name" "${MS[$name]}" "$base" <<'PY'
import sys
name, ms, base = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
workers = 1 if name.startswith("1 process x 1") else 2
print(f"{name:<24} {ms:10.1f} {16 * 128 * 1000 / ms:10.0f} {base / ms:12.3f} {base / ms / workers:12.3f}")
PY
done
