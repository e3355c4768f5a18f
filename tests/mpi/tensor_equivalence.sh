#!/usr/bin/env bash
# Tensor parallelism (Megatron style) reproduces the single process, for a 4-layer GPT-2 causal
# LM (vocabulary-parallel wte tied to lm_head) or BERT masked LM (vocabulary-parallel word
# embeddings tied to the decoder, whose bias is split too), 2 heads, so that tp 2 puts one head
# on each rank:
# 5 steps of 2 accumulated batches of 12 rows, weight decay on, clipping active (max_grad_norm
# 0.25), small buckets, and an evaluation at the end (gathered logits). Runs:
#   tp2; tp2 x dp2 with ZeRO-1; tp2 x pp2 (1F1B, 2 micro-batches); tp2 x pp2 x dp2 with
#   shard_optimizer_state (8 ranks, spread placement); with dropout on (0.1 everywhere), tp2
#   with every block recomputed and offloaded against one process with the same dropout;
# then checkpoints across layouts: saved at step 3 by tp2 (the unsplit optimizer layout),
# resumed by one process and by tp2 x dp2 with ZeRO-2; saved by dp2 with ZeRO-1 (slices of the
# unsplit buffer), resumed by tp2. Every run must log the single process's losses and gradient
# norms and end with its parameters and evaluation loss; the saved model and checkpoints are
# the unsplit HF model, and a tp rank holds about half the parameters.
#   tensor_equivalence.sh STRATA_BINARY SOURCE_DIR bert|gpt2
set -euo pipefail
STRATA=${1:?usage: tensor_equivalence.sh STRATA_BINARY SOURCE_DIR bert|gpt2}
SRC=${2:?}
FAMILY=${3:?}
source "$(dirname "$0")/work_dir.sh"  # $WORK (kept with KEEP=1), mpirun as root, one thread

source "$(dirname "$0")/lm_jobs.sh"  # lm_model, job, $WORK/train.txt
lm_model model 0.0
lm_model model_drop 0.1
source "$(dirname "$0")/train_runs.sh"

job single 1 12 ""
run single 1
job tp2 2 12 "$(mp 2 1 1)
save_strategy: steps
save_steps: 3"
run tp2 2
job tp2_dp2_z1 4 6 "$(mp 2 1 1 ', shard_optimizer_state: true')"
run tp2_dp2_z1 4
job tp2_pp2 4 12 "$(mp 2 2 2)"
run tp2_pp2 4
job tp2_pp2_dp2_z1 8 6 "$(mp 2 2 2 ', shard_optimizer_state: true, placement_strategy: spread')"
run tp2_pp2_dp2_z1 8
MODEL=$WORK/model_drop job single_drop 1 12 ""
run single_drop 1
MODEL=$WORK/model_drop job tp2_drop_ckpt 2 12 "$(mp 2 1 1 ', activation_checkpointing: true, offload_activations: true')"
run tp2_drop_ckpt 2
grep -q "each layer split over 2 tensor-parallel ranks" "$WORK/tp2.log" || { echo "FAILED: no tensor banner"; exit 1; }

# Checkpoints across layouts.
job save_dp2_z1 2 6 "shard_optimizer_state: true
save_strategy: steps
save_steps: 3"
run save_dp2_z1 2
resume r_single 1 12 "$WORK/tp2/checkpoint-3" ""
resume r_tp2_dp2_z2 4 6 "$WORK/tp2/checkpoint-3" "$(mp 2 1 1)
zero_stage: 2"
resume r_tp2 2 12 "$WORK/save_dp2_z1/checkpoint-3" "$(mp 2 1 1)"
grep -q "resumed from .*checkpoint-3 at step 3" "$WORK/r_tp2.log" || { echo "FAILED: no resume"; exit 1; }

PYTHONPATH="$(dirname "$0")" python3 - "$WORK" <<'PY'
import os, sys
from equivalence import compare, measured_memory as measured
from safetensors_f32 import read as tensors
work = sys.argv[1]
# The sums over tensor-parallel ranks (row-parallel outputs, input gradients, the loss's
# exponentials), micro-batches and data-parallel ranks run in another order.
ok = compare(work, "single", ["tp2", "tp2_dp2_z1", "tp2_pp2", "tp2_pp2_dp2_z1", "save_dp2_z1", "r_single",
                              "r_tp2_dp2_z2", "r_tp2"])
ok &= compare(work, "single_drop", ["tp2_drop_ckpt"])

# A tensor-parallel rank holds its slices: about half the parameters (wpe and the layer norms
# are whole on both ranks) and half the optimizer state.
one, tp = measured(work, "single")[0], measured(work, "tp2")
good = len(tp) == 2 and all(0.45 * one[1] <= o <= 0.6 * one[1] for _, o in tp.values())
ok &= good
print(f"tp2 memory per rank (parameters, optimizer state MiB): {tp}; one process: {one} -> {'ok' if good else 'BAD'}")

# The tp2 checkpoint: the unsplit HF model and the unsplit optimizer state (HF shapes).
ck = f"{work}/tp2/checkpoint-3"
opt = tensors(f"{ck}/optimizer.safetensors")
ref_opt = tensors(f"{work}/save_dp2_z1/checkpoint-3/model.safetensors")
good = (not os.path.exists(f"{ck}/optimizer_layout.json") and tensors(f"{ck}/model.safetensors").keys() == ref_opt.keys()
        and {k.split(".", 1)[1] for k in opt} == set(ref_opt.keys()))
ok &= good
print(f"tp2 checkpoint: {len(opt)} optimizer tensors, unsplit -> {'ok' if good else 'BAD'}")
sys.exit(0 if ok else 1)
PY
