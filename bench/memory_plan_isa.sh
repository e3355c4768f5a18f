#!/usr/bin/env bash
# How close the memory plan comes to the measured peak RSS under each instruction set this
# CPU has (docs/reliability.md, "Memory plan per instruction set"). The jobs are those of
# tests/test_activation_memory_cli.cpp: a 4-layer BERT (hidden 64, FFN 256), batch 32 x 128,
# 2 steps, on 2 threads; trained plain, with gradient checkpointing, with activation offloading,
# and at batch 8 with an evaluation pass at 64 x 128 after each step. Each runs under
# strata's and oneDNN's caps together: baseline (SSE4.1), AVX2, and native (where the CPU has
# AVX-512). Prints one row per job and ISA: peak RSS, the prediction (the plan plus what the
# process held before training, the GEMM library's generated code included) and their ratio.
#   bench/memory_plan_isa.sh STRATA_BINARY [SOURCE_DIR]
set -euo pipefail
STRATA=${1:?usage: memory_plan_isa.sh STRATA_BINARY [SOURCE_DIR]}
SRC=${2:-$(cd "$(dirname "$0")/.." && pwd)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/model"
cat > "$WORK/model/config.json" <<'JSON'
{"model_type": "bert", "vocab_size": 8000, "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
 "intermediate_size": 256, "max_position_embeddings": 128, "pad_token_id": 3}
JSON
python3 - "$WORK/train.csv" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("text,label\n")
    for i in range(64):
        f.write(f'"{"win money now, click here" if i % 2 else "meeting notes for monday"} {i}",{"spam" if i % 2 else "ham"}\n')
PY
config() {  # NAME BATCH [extra lines]
  local name=$1 batch=$2
  shift 2
  {
    printf 'model_name_or_path: %s\ntokenizer_name: %s\ntrain_file: %s\noutput_dir: %s\n' \
      "$WORK/model" "$SRC/examples/spam/bert-small" "$WORK/train.csv" "$WORK/out-$name"
    printf 'overwrite_output_dir: true\nmax_seq_length: 128\npad_to_max_length: true\nmax_steps: 2\n'
    printf 'per_device_train_batch_size: %s\nlogging_steps: 1\nsave_strategy: "no"\nnum_threads: 2\n' "$batch"
    printf 'learning_rate: 1e-3\ndisable_tqdm: true\n'
    printf '%s\n' "$@"
  } > "$WORK/$name.yaml"
}
config plain 32
config checkpointing 32 "gradient_checkpointing: true"
config offloading 32 "offload_activations: true"
config evaluation 8 "validation_file: $WORK/train.csv" "per_device_eval_batch_size: 64" "eval_strategy: steps" "eval_steps: 1"

caps=("baseline SSE41" "avx2 AVX2")
grep -qw avx512f /proc/cpuinfo && caps+=("avx512 ALL")
printf '%-14s %-9s %10s %14s %9s\n' job isa "peak MiB" "predicted MiB" ratio
for job in plain checkpointing offloading evaluation; do
  for cap in "${caps[@]}"; do
    read -r strata_isa onednn_isa <<< "$cap"
    line=$(STRATA_MAX_CPU_ISA=$strata_isa ONEDNN_MAX_CPU_ISA=$onednn_isa OMP_WAIT_POLICY=PASSIVE \
      "$STRATA" train "$WORK/$job.yaml" 2>&1 | grep "memory measured, rank 0") ||
      { echo "$job ($strata_isa): no measured memory line" >&2; exit 1; }
    peak=$(sed -E 's/.*peak RSS ([0-9.]+) MiB.*/\1/' <<< "$line")
    predicted=$(sed -E 's/.*predicted peak ([0-9.]+) MiB.*/\1/' <<< "$line")
    ratio=$(sed -E 's/.*measured\/predicted ([0-9.]+).*/\1/' <<< "$line")
    printf '%-14s %-9s %10s %14s %9s\n' "$job" "$strata_isa" "$peak" "$predicted" "$ratio"
  done
done
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); strata $("$STRATA" --version | head -1)"
