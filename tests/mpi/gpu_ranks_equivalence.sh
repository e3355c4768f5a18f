#!/usr/bin/env bash
# Ranks on GPUs train as ranks on CPUs do (issue 27): data parallelism, ZeRO-2, pipeline stages
# (both schedules; with activation checkpointing and offloading), pipeline x data x ZeRO-1,
# tensor parallelism (alone, with pipeline stages, with dropout, checkpointing and offloading),
# and a checkpoint saved by GPU pipeline stages resumed by GPU data-parallel ranks, on the tiny
# language model of the pipeline and tensor tests (lm_jobs.sh), against one CPU process.
#   gpu_ranks_equivalence.sh STRATA_BINARY SOURCE_DIR bert|gpt2 emulated|gpu
# emulated: every rank has an emulated GPU (STRATA_EMULATED_GPU=1, kernels/emulated_gpu.h) and
#   its collectives go through MPI with device buffers staged in host memory. The emulated GPU
#   computes with the CPU's kernels, so each layout must also give, byte for byte, the model and
#   log of the same layout on CPU ranks: any difference is data moved wrongly. And each rank's
#   GPU must hold no more of the parameters and gradients than the CPU rank holds.
# gpu: the ranks share this machine's GPU (NCCL refuses that, so MPI through host memory
#   carries their collectives); exit 77 where there is no GPU.
set -euo pipefail
STRATA=${1:?usage: gpu_ranks_equivalence.sh STRATA_BINARY SOURCE_DIR bert|gpt2 emulated|gpu}
SRC=${2:?}
FAMILY=${3:?}
MODE=${4:?}
case $MODE in
  emulated) export STRATA_EMULATED_GPU=1 ;;
  gpu) nvidia-smi -L > /dev/null 2>&1 || { echo "SKIP: no NVIDIA GPU (nvidia-smi -L)"; exit 77; }
       command -v mpirun > /dev/null || { echo "SKIP: no mpirun on this machine"; exit 77; } ;;
  *) echo "mode must be emulated or gpu, got $MODE"; exit 2 ;;
esac
source "$(dirname "$0")/work_dir.sh"  # $WORK (kept with KEEP=1), mpirun as root, one thread
source "$(dirname "$0")/lm_jobs.sh"   # lm_model, job, mp, $WORK/train.txt
lm_model model 0.0
lm_model model_drop 0.1
# A model whose MLPs hold most of its parameters (not the tied embedding), for ZeRO-2's memory.
lm_model model_wide 0.0
python3 - "$WORK/model_wide/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
wide = {"hidden_size": 16, "intermediate_size": 4096, "num_hidden_layers": 8} if c["model_type"] == "bert" else \
       {"n_embd": 16, "n_inner": 4096, "n_layer": 8}
json.dump({**c, **wide}, open(sys.argv[1], "w"))
PY
source "$(dirname "$0")/train_runs.sh"  # run, resume
ZERO2="deepspeed: {zero_optimization: {stage: 2}}"
SAVE="save_strategy: steps
save_steps: 3"

# NAME RANKS PER_DEVICE_BATCH EXTRA_YAML: the layout on GPU ranks (NAME), and in emulated mode
# on CPU ranks too (cpu_NAME).
both() {
  job "$1" "$2" "$3" "$4"
  run "$1" "$2"
  if [[ $MODE == emulated ]]; then
    job "cpu_$1" "$2" "$3" "$4
use_cpu: true"
    STRATA_EMULATED_GPU=0 run "cpu_$1" "$2"
  fi
}

job single 1 12 "use_cpu: true"
STRATA_EMULATED_GPU=0 run single 1
both dp2 2 6 ""
both z2_dp3 3 4 "$ZERO2"
both pp2 2 12 "$(mp 1 2 4 ', pipeline: interleaved')"
both pp3_ckpt 3 12 "$(mp 1 3 3 ', pipeline: simple, activation_checkpointing: 1, offload_activations: true')"
both pp2_dp2_z1 4 6 "$(mp 1 2 3 ', pipeline: interleaved, shard_optimizer_state: true')"
both tp2 2 12 "$(mp 2 1 1)"
both tp2_pp2 4 12 "$(mp 2 2 2)"
MODEL=$WORK/model_drop job single_drop 1 12 "use_cpu: true"
STRATA_EMULATED_GPU=0 run single_drop 1
MODEL=$WORK/model_drop both tp2_drop_ckpt 2 12 "$(mp 2 1 1 ', activation_checkpointing: true, offload_activations: true')"
both save_pp2 2 12 "$(mp 1 2 2 ', pipeline: interleaved')
$SAVE"
for side in "" cpu_; do
  [[ -d "$WORK/${side}save_pp2" ]] && mkdir -p "$WORK/${side}r_dp2" && cp -r "$WORK/${side}save_pp2/checkpoint-3" "$WORK/${side}r_dp2/"
done
both r_dp2 2 6 "resume_from_checkpoint: latest"
[[ $MODE == emulated ]] && MODEL=$WORK/model_wide both z2_wide_dp3 3 4 "$ZERO2"

grep -q "device: cuda:0" "$WORK/dp2.log" || { echo "FAILED: dp2 did not train on a GPU"; exit 1; }
grep -q "collectives: MPI through host memory" "$WORK/dp2.log" || { echo "FAILED: no collectives line"; exit 1; }
grep -q "resumed from .*checkpoint-3 at step 3" "$WORK/r_dp2.log" || { echo "FAILED: no resume"; exit 1; }

LAYOUTS="dp2 z2_dp3 pp2 pp3_ckpt pp2_dp2_z1 tp2 tp2_pp2 save_pp2 r_dp2"
if [[ $MODE == emulated ]]; then
  for name in $LAYOUTS tp2_drop_ckpt; do
    cmp -s "$WORK/$name/model.safetensors" "$WORK/cpu_$name/model.safetensors" &&
      cmp -s <(grep -o '"loss":[^,]*,"\|"grad_norm":[^,]*' "$WORK/$name/trainer_log.jsonl") \
             <(grep -o '"loss":[^,]*,"\|"grad_norm":[^,]*' "$WORK/cpu_$name/trainer_log.jsonl") ||
      { echo "FAILED: $name on emulated GPUs differs from $name on CPU ranks"; exit 1; }
    echo "$name: GPU ranks' model and logged losses equal CPU ranks' byte for byte -> ok"
  done
  # What each rank's GPU holds of the flat parameters and gradients (reserved memory, backed
  # where used: kernels/reserved_memory.h) is at most what its CPU rank holds in pages (which
  # may be a page more: the CPU zeroes the partial page at either end of what it gives back,
  # and so touches it): a pipeline stage only its window. Under ZeRO-2 a GPU backs each unit's
  # gradients whole before its backward, where the CPU's pages come as written (an embedding's
  # gradient only in the rows a batch has), so there the GPU may hold more, but never more than
  # the whole model.
  held() { grep -o "memory measured, rank [0-9]*: .*gradients resident at most [0-9.]* MiB" "$WORK/$1.log" |
           sed 's/peak RSS [0-9.]* MiB; //'; }
  figure() { grep -o "$1 [0-9.]*" | grep -o "[0-9.]*$"; }
  at_most() {  # GPU_FIGURES CPU_FIGURES (one a line, rank by rank): each GPU figure <= the CPU's
    paste <(echo "$1") <(echo "$2") | awk 'NF != 2 || $1 > $2 { bad = 1 } END { exit bad || NR == 0 }'
  }
  for name in $LAYOUTS; do
    at_most "$(held "$name" | figure "parameters resident")" "$(held "cpu_$name" | figure "parameters resident")" &&
      if [[ $name == z2_* ]]; then
        held "$name" | figure "at most" |
          awk -v w="$(held single | figure "parameters resident")" '$1 > w { bad = 1 } END { exit bad }'
      else
        at_most "$(held "$name" | figure "at most")" "$(held "cpu_$name" | figure "at most")"
      fi || { echo "FAILED: $name: GPU ranks hold more parameter or gradient memory than CPU ranks:"; held "$name";
              held "cpu_$name"; exit 1; }
  done
  whole=$(held single | figure "parameters resident")
  middle=$(held pp3_ckpt | grep "rank 1:" | figure "parameters resident")
  awk -v m="$middle" -v w="$whole" 'BEGIN { exit !(m > 0 && m < w / 2) }' ||
    { echo "FAILED: pp3_ckpt's middle stage holds $middle MiB of the parameters, the whole model is $whole MiB"; exit 1; }
  echo "GPU ranks hold at most the parameters and gradients CPU ranks hold (pp3_ckpt's middle stage: $middle of" \
       "$whole MiB) -> ok"
  # ZeRO-2 on a model whose blocks hold most of it: each GPU gives back the buckets it reduced
  # and backs a unit's gradients only for its backward, so none ever holds them all at once.
  cmp -s "$WORK/z2_wide_dp3/model.safetensors" "$WORK/cpu_z2_wide_dp3/model.safetensors" ||
    { echo "FAILED: z2_wide_dp3 on emulated GPUs differs from CPU ranks"; exit 1; }
  wide=$(held z2_wide_dp3 | grep "rank 0:" | figure "parameters resident")
  held z2_wide_dp3 | figure "at most" | awk -v w="$wide" '$1 > 0.85 * w { bad = 1 } END { exit bad }' ||
    { echo "FAILED: z2_wide_dp3: a GPU rank held more than 0.85 of the model's $wide MiB of gradients:";
      held z2_wide_dp3; exit 1; }
  echo "ZeRO-2 on 3 GPU ranks: gradients held at most $(held z2_wide_dp3 | figure "at most" | sort -n | tail -1) MiB" \
       "of the model's $wide MiB (CPU ranks: $(held cpu_z2_wide_dp3 | figure "at most" | sort -n | tail -1)) -> ok"
fi
# shellcheck disable=SC2086
PYTHONPATH="$(dirname "$0")" python3 - "$WORK" $LAYOUTS <<'PY'
import sys
from equivalence import compare
ok = compare(sys.argv[1], "single", sys.argv[2:])
ok &= compare(sys.argv[1], "single_drop", ["tp2_drop_ckpt"])
sys.exit(0 if ok else 1)
PY
