#!/usr/bin/env bash
# ZeRO reproduces the single process: 2, 3 and 4 ranks with optimizer-state sharding (ZeRO-1,
# spelled as SageMaker's shard_optimizer_state) and with gradient sharding too (ZeRO-2, spelled
# as HF's deepspeed zero_optimization.stage), against 1 rank with the same global batch (24 =
# ranks x per-device batch x 2 accumulation steps), 5 steps, no dropout, weight decay on
# (biases and LayerNorm weights excluded), gradient clipping active in the first steps (max_grad_norm 0.25), small
# buckets (ddp_bucket_cap_mb 0.1) so that many cross the ranks' slices. Checks every step's
# logged loss and gradient norm, the final parameters, and then checkpoints in other layouts:
# saved by 2 sharded ranks, resumed on 4 sharded ranks and on 1 unsharded rank; saved by 1
# rank (unsharded), resumed on 3 ranks with ZeRO-2; each must end where the uninterrupted run
# ends. Finally the checkpoint's files: an HF model directory plus per-rank optimizer slices
# and the layout record.
#   zero_equivalence.sh STRATA_BINARY SOURCE_DIR bert|gpt2
set -euo pipefail
STRATA=${1:?usage: zero_equivalence.sh STRATA_BINARY SOURCE_DIR bert|gpt2}
SRC=${2:?}
FAMILY=${3:?}
source "$(dirname "$0")/work_dir.sh"  # $WORK (kept with KEEP=1), mpirun as root, one thread

mkdir -p "$WORK/model"
if [[ $FAMILY == bert ]]; then
  cat > "$WORK/model/config.json" <<'JSON'
{"model_type": "bert", "architectures": ["BertForSequenceClassification"], "vocab_size": 8000,
 "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
 "max_position_embeddings": 64, "pad_token_id": 3, "hidden_dropout_prob": 0.0,
 "attention_probs_dropout_prob": 0.0}
JSON
  TOKENIZER=$SRC/examples/spam/bert-small
  DATA="train_file: $WORK/train.csv
max_seq_length: 16"
else
  cat > "$WORK/model/config.json" <<'JSON'
{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 8000, "n_embd": 32,
 "n_layer": 2, "n_head": 2, "n_positions": 64, "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}
JSON
  TOKENIZER=$SRC/examples/tokenizers/bpe-8k
  DATA="train_file: $WORK/train.txt
block_size: 16"
fi
python3 - "$WORK" <<'PY'
import sys, random
work = sys.argv[1]
random.seed(0)
words = "win money now click free offer meeting notes monday lunch project report cash prize".split()
with open(f"{work}/train.csv", "w") as csv, open(f"{work}/train.txt", "w") as txt:
    csv.write("text,label\n")
    for i in range(96):
        spam = i % 3 == 0
        text = " ".join(random.choice(words[:7] if spam else words[7:]) for _ in range(random.randint(3, 12)))
        csv.write(f'"{text}",{"spam" if spam else "ham"}\n')
        txt.write(text + "\n")
PY

# name, ranks, per-device batch, extra YAML
job() {
  cat > "$WORK/$1.yaml" <<YAML
model_name_or_path: $WORK/model
tokenizer_name: $TOKENIZER
$DATA
output_dir: $WORK/$1
per_device_train_batch_size: $3
gradient_accumulation_steps: 2
max_steps: 5
logging_steps: 1
learning_rate: 3.0e-3
weight_decay: 0.01
max_grad_norm: 0.25
warmup_steps: 2
save_strategy: "no"
do_eval: false
ddp_bucket_cap_mb: 0.1
num_threads: 1
seed: 7
$4
YAML
}
# run, resume
source "$(dirname "$0")/train_runs.sh"
ZERO1="distribution:
  smdistributed:
    modelparallel:
      enabled: true
      parameters: {partitions: 1, placement_strategy: spread, ddp: true, shard_optimizer_state: true}
  mpi: {enabled: true}"
ZERO2="deepspeed: {zero_optimization: {stage: 2}}"

job single 1 12 ""
run single 1
for n in 2 3 4; do
  job "z1_dp$n" "$n" $((12 / n)) "$ZERO1"
  run "z1_dp$n" "$n"
  job "z2_dp$n" "$n" $((12 / n)) "$ZERO2"
  run "z2_dp$n" "$n"
done
grep -q "memory plan per rank (fp32, AdamW; data parallel 3, ZeRO stage 2" "$WORK/z2_dp3.log" \
  || { echo "FAILED: no memory plan in the log"; exit 1; }
grep -q "memory measured, rank 2: peak RSS" "$WORK/z2_dp3.log" || { echo "FAILED: no measured memory"; exit 1; }
grep -q "parallel layout: 3 processes = data 3 x pipeline 1 x tensor 1" "$WORK/z1_dp3.log" \
  || { echo "FAILED: no rank grid in the log"; exit 1; }

# Checkpoints across layouts: saved at step 3 by 2 sharded ranks (and by 1 unsharded rank).
job save_z1_dp2 2 6 "$ZERO1
save_strategy: steps
save_steps: 3"
run save_z1_dp2 2
job save_single 1 12 "save_strategy: steps
save_steps: 3"
run save_single 1
resume r_z1_dp4 4 3 "$WORK/save_z1_dp2/checkpoint-3" "$ZERO1"
resume r_single 1 12 "$WORK/save_z1_dp2/checkpoint-3" ""
resume r_z2_dp3 3 4 "$WORK/save_single/checkpoint-3" "$ZERO2"
grep -q "resumed from .*checkpoint-3 at step 3" "$WORK/r_z1_dp4.log" || { echo "FAILED: r_z1_dp4 did not resume"; exit 1; }

PYTHONPATH="$(dirname "$0")" python3 - "$WORK" <<'PY'
import json, os, sys
from equivalence import compare
from safetensors_f32 import metadata, read as tensors
work = sys.argv[1]
# The gradient sums over ranks (and the sum of squares behind the clipping) run in another
# order, as plain data parallelism's do.
ok = compare(work, "single", ["z1_dp2", "z1_dp3", "z1_dp4", "z2_dp2", "z2_dp3", "z2_dp4", "r_z1_dp4", "r_single",
                              "r_z2_dp3"], evaluated=False)

# The sharded checkpoint: an HF model directory, one optimizer slice per rank, the layout record.
ck = f"{work}/save_z1_dp2/checkpoint-3"
layout = json.load(open(f"{ck}/optimizer_layout.json"))
files = sorted(f for f in os.listdir(ck) if f.startswith("optimizer-"))
total = layout["flat_size"]
covered = sum(s["end"] - s["begin"] for s in layout["shards"])
exp_avg = [tensors(f"{ck}/{s['file']}")["exp_avg"] for s in layout["shards"]]
good = (files == ["optimizer-00001-of-00002.safetensors", "optimizer-00002-of-00002.safetensors"]
        and layout["zero_stage"] == 1 and layout["data_parallel_degree"] == 2 and covered == total
        and layout["padding"] == 2 * layout["shard_size"] - total and layout["step"] == 3
        and sum(len(x) for x in exp_avg) == total and os.path.exists(f"{ck}/model.safetensors")
        and not os.path.exists(f"{ck}/optimizer.safetensors")
        and all(metadata(f"{ck}/{s['file']}")["begin"] == str(s["begin"]) and
                metadata(f"{ck}/{s['file']}")["end"] == str(s["end"]) for s in layout["shards"]))
# The slices put together equal the unsharded run's state at the same step.
full = tensors(f"{work}/save_single/checkpoint-3/optimizer.safetensors")
flat = [x for part in exp_avg for x in part]
ref_flat = [0.0] * total
for p in layout["parameters"]:
    t = full["exp_avg." + p["name"]]
    ref_flat[p["offset"]:p["offset"] + len(t)] = t
big = max(abs(x) for x in ref_flat)
dm = max(abs(a - b) for a, b in zip(flat, ref_flat)) / big
good &= dm <= 1e-4
ok &= good
print(f"checkpoint: {files}, stage {layout['zero_stage']}, {total} values, slice {layout['shard_size']}, padding "
      f"{layout['padding']}; exp_avg slices vs the unsharded run's: max rel diff {dm:.1e} -> {'ok' if good else 'BAD'}")
sys.exit(0 if ok else 1)
PY
