#!/usr/bin/env bash
# Pipeline parallelism reproduces the single process, for BERT (masked LM: the decoder is tied
# to the word embeddings) or GPT-2 (causal LM: lm_head is tied to wte), both 4 layers: 5 steps
# of 2 accumulated batches of 12 rows, no dropout, weight decay on, clipping active
# (max_grad_norm 0.25), small buckets, and an evaluation through the pipeline at the end. Runs:
#   pp2 (1F1B, 4 micro-batches), pp2 simple (GPipe, 2), pp3 both schedules (3 micro-batches),
#   pp3 with every 2nd block checkpointed and the rest offloaded, pp2 x dp2, pp2 x dp2 x ZeRO-1
#   (spread placement), pp3 x dp2 x ZeRO-2 (6 ranks),
# then checkpoints across layouts: saved at step 3 by pp2, resumed by one process and by
# pp3 x dp2 x ZeRO-1; saved by one process, resumed by pp2. Every run must log the single
# process's losses and gradient norms and end with its parameters and evaluation loss. Also
# checked: the saved model is one HF directory, the optimizer state is per stage (the stages'
# slices add up to the single process's state, and a stage's resident parameters are less than
# the whole model), the checkpoint's layout record, and the bubble summary.
#   pipeline_equivalence.sh STRATA_BINARY SOURCE_DIR bert|gpt2
set -euo pipefail
STRATA=${1:?usage: pipeline_equivalence.sh STRATA_BINARY SOURCE_DIR bert|gpt2}
SRC=${2:?}
FAMILY=${3:?}
source "$(dirname "$0")/work_dir.sh"  # $WORK (kept with KEEP=1), mpirun as root, one thread

source "$(dirname "$0")/lm_jobs.sh"  # lm_model, job, $WORK/train.txt
lm_model model 0.0
# run, resume
source "$(dirname "$0")/train_runs.sh"
pipe() {  # partitions, microbatches, schedule, [more parameters]
  echo "distribution:
  smdistributed:
    modelparallel:
      enabled: true
      parameters: {partitions: $1, microbatches: $2, pipeline: $3, ddp: true${4:-}}
  mpi: {enabled: true}"
}

job single 1 12 ""
run single 1
job pp2 2 12 "$(pipe 2 4 interleaved)"
run pp2 2
job pp2_simple 2 12 "$(pipe 2 2 simple)"
run pp2_simple 2
job pp3 3 12 "$(pipe 3 3 interleaved)"
run pp3 3
job pp3_simple 3 12 "$(pipe 3 3 simple)"
run pp3_simple 3
job pp2_dp2 4 6 "$(pipe 2 2 interleaved)"
run pp2_dp2 4
job pp2_dp2_z1 4 6 "$(pipe 2 3 interleaved ', shard_optimizer_state: true, placement_strategy: spread')"
run pp2_dp2_z1 4
job pp3_ckpt 3 12 "$(pipe 3 3 interleaved ', activation_checkpointing: 2, offload_activations: true')"
run pp3_ckpt 3
job pp3_dp2_z2 6 6 "$(pipe 3 2 simple)
deepspeed: {zero_optimization: {stage: 2}}"
run pp3_dp2_z2 6
grep -q "pipeline: 3 stages" "$WORK/pp3.log" || { echo "FAILED: no stage table in the log"; exit 1; }
grep -q "pipeline bubble: stages idle .* of the pipeline phase of a step" "$WORK/pp2.log" \
  || { echo "FAILED: no bubble summary"; exit 1; }

# Checkpoints across layouts.
job save_pp2 2 12 "$(pipe 2 2 interleaved)
save_strategy: steps
save_steps: 3"
run save_pp2 2
job save_single 1 12 "save_strategy: steps
save_steps: 3"
run save_single 1
resume r_single 1 12 "$WORK/save_pp2/checkpoint-3" ""
resume r_pp3_dp2_z1 6 6 "$WORK/save_pp2/checkpoint-3" "$(pipe 3 3 interleaved ', shard_optimizer_state: true')"
resume r_pp2 2 12 "$WORK/save_single/checkpoint-3" "$(pipe 2 4 simple)"
grep -q "resumed from .*checkpoint-3 at step 3" "$WORK/r_pp3_dp2_z1.log" || { echo "FAILED: no resume"; exit 1; }

PYTHONPATH="$(dirname "$0")" python3 - "$WORK" <<'PY'
import json, os, sys
from equivalence import compare, measured_memory as measured
from safetensors_f32 import read as tensors
work = sys.argv[1]
# The gradient sums run over micro-batches, ranks and the tied copies in another order.
ok = compare(work, "single", ["pp2", "pp2_simple", "pp3", "pp3_simple", "pp3_ckpt", "pp2_dp2", "pp2_dp2_z1",
                              "pp3_dp2_z2", "save_pp2", "r_single", "r_pp3_dp2_z1", "r_pp2"])
ref_w = tensors(f"{work}/single/model.safetensors")

# Per-stage memory: each stage keeps optimizer state for its own parameters only (together the
# single process's), and holds fewer parameters than the whole model.
single, pp2, pp3 = measured(work, "single")[0], measured(work, "pp2"), measured(work, "pp3")
for name, stages in (("pp2", pp2), ("pp3", pp3)):
    opt_sum = sum(o for _, o in stages.values())
    good = (len(stages) == int(name[-1]) and abs(opt_sum - single[1]) <= 0.1 * len(stages)
            and all(o < single[1] for _, o in stages.values()) and all(p <= single[0] for p, _ in stages.values())
            and min(p for p, _ in stages.values()) < single[0])
    ok &= good
    print(f"{name} memory per stage (parameters, optimizer state MiB): {stages}; one process: {single}; optimizer "
          f"state summed over stages {opt_sum:.1f} -> {'ok' if good else 'BAD'}")

# The pipeline checkpoint: one HF model directory, one optimizer slice per stage, the layout record.
ck = f"{work}/save_pp2/checkpoint-3"
layout = json.load(open(f"{ck}/optimizer_layout.json"))
stages = [s["pipeline_stage"] for s in layout["shards"]]
good = (layout["pipeline_parallel_degree"] == 2 and stages == [0, 1] and layout["shards"][0]["begin"] == 0
        and layout["shards"][1]["end"] == layout["flat_size"] and os.path.exists(f"{ck}/model.safetensors")
        and tensors(f"{ck}/model.safetensors").keys() == ref_w.keys())
ok &= good
print(f"checkpoint: {[(s['file'], s['begin'], s['end']) for s in layout['shards']]} -> {'ok' if good else 'BAD'}")
sys.exit(0 if ok else 1)
PY
