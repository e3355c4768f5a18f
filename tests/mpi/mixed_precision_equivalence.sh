#!/usr/bin/env bash
# Mixed precision (train/mixed_precision.h) on the emulated path, which runs on every CPU, for
# the 4-layer GPT-2 causal LM or BERT masked LM of lm_jobs.sh (tied embeddings, clipping,
# accumulation):
#  - bf16: data (2 ranks), pipeline (2 stages, 2 micro-batches) and tensor (2 ranks) parallel
#    runs reproduce the single bf16 process; bf16 is not fp32 (the products are rounded) but
#    stays close to it; a run resumed from a bf16 checkpoint ends with the uninterrupted run's
#    bits;
#  - fp16 with a loss scale that overflows at first (2^24): steps are skipped and counted, the
#    scale halves until the gradients fit, doubles after 3 clean steps and backs off again when
#    that overflows, as GradScaler does; training goes on (finite, falling losses); 2
#    data-parallel ranks skip the same steps; a resume from a checkpoint taken after skips
#    restores the scale and ends with the uninterrupted run's bits.
#   mixed_precision_equivalence.sh STRATA_BINARY SOURCE_DIR bert|gpt2
set -euo pipefail
STRATA=${1:?usage: mixed_precision_equivalence.sh STRATA_BINARY SOURCE_DIR bert|gpt2}
SRC=${2:?}
FAMILY=${3:?}
source "$(dirname "$0")/work_dir.sh"  # $WORK (kept with KEEP=1), mpirun as root, one thread

source "$(dirname "$0")/lm_jobs.sh"  # lm_model, job, $WORK/train.txt
lm_model model 0.0
source "$(dirname "$0")/train_runs.sh"
BF16="bf16: true
half_precision_backend: emulated"
# 12 steps: the first ones overflow and are skipped.
FP16="fp16: true
half_precision_backend: emulated
fp16_init_scale: 16777216
fp16_growth_interval: 3
max_steps: 12"

job fp32 1 12 ""
run fp32 1
job single 1 12 "$BF16
save_strategy: steps
save_steps: 3"
run single 1
job dp2 2 6 "$BF16"
run dp2 2
job pp2 2 12 "$BF16
$(mp 1 2 2)"
run pp2 2
job tp2 2 12 "$BF16
$(mp 2 1 1)"
run tp2 2
resume r_single 1 12 "$WORK/single/checkpoint-3" "$BF16"
job fp16 1 12 "$FP16
save_strategy: steps
save_steps: 8"
run fp16 1
job fp16_dp2 2 6 "$FP16"
run fp16_dp2 2
resume r_fp16 1 12 "$WORK/fp16/checkpoint-8" "$FP16"
for name in single dp2 pp2 tp2 fp16; do
  grep -q "mixed precision: .*emulated: inputs rounded to" "$WORK/$name.log" || { echo "FAILED: $name has no mixed precision line"; exit 1; }
done
grep -q "resumed from .*checkpoint-8 at step 8" "$WORK/r_fp16.log" || { echo "FAILED: no fp16 resume"; exit 1; }

PYTHONPATH="$(dirname "$0")" python3 - "$WORK" <<'PY'
import json, math, sys
from equivalence import compare
from safetensors_f32 import read as tensors
work = sys.argv[1]

def entries(name):
    return [json.loads(l) for l in open(f"{work}/{name}/trainer_log.jsonl") if '"loss"' in l]

def param_diff(a, b):
    wa, wb = tensors(f"{work}/{a}/model.safetensors"), tensors(f"{work}/{b}/model.safetensors")
    scale = max(abs(x) for t in wb.values() for x in t)
    return max(abs(x - y) for k in wb for x, y in zip(wa[k], wb[k])) / scale

def same_bits(a, b):
    return open(f"{work}/{a}/model.safetensors", "rb").read() == open(f"{work}/{b}/model.safetensors", "rb").read()

# bf16 rounds the products' inputs (up to 2^-9 relative): visibly not fp32, yet close to it.
d = param_diff("single", "fp32")
good = 1e-5 < d < 1e-2
print(f"bf16 against fp32: max |param diff| / max |param| {d:.2e} (expected between 1e-5 and 1e-2) -> {'ok' if good else 'MISMATCH'}")
ok = good
# Parallel layouts sum in another order, and an input a last fp32 bit away can round to the
# neighbouring bf16 value; after AdamW's first steps (about lr x sign(gradient) per element)
# that leaves the parameters of the layouts as far from the single bf16 process as half of what
# separates bf16 from fp32: the bound is that distance. Losses and gradient norms agree to their
# logged 4 decimals.
ok &= compare(work, "single", ["dp2", "pp2", "tp2"], param_tol=d, eval_tol=1e-4)
good = same_bits("r_single", "single")
print(f"bf16 resumed from checkpoint-3: {'the same bits' if good else 'OTHER BITS'} as the uninterrupted run")
ok &= good

# fp16 with an overflowing initial scale.
log = entries("fp16")
scales = [e["loss_scale"] for e in log]
skipped = [e["skipped_steps"] for e in log]
losses = [e["loss"] for e in log]
state = json.load(open(f"{work}/fp16/checkpoint-8/strata_state.json"))["loss_scaler"]
print("fp16 loss scale by step:", scales)
print("fp16 skipped steps by step:", skipped)
print("fp16 losses:", losses)
first_clean = next(i for i in range(1, len(skipped)) if skipped[i] == skipped[i - 1])
good = (len(log) == 12 and skipped[0] == 1 and 1 < skipped[-1] < 8 and scales[0] == 2.0 ** 23
        and all(math.isfinite(x) for x in losses)
        # after clean steps the scale grows, and backs off again when that overflows
        and any(scales[i] == 2 * scales[i - 1] for i in range(first_clean, len(scales)))
        and any(scales[i] == scales[i - 1] / 2 for i in range(first_clean + 1, len(scales)))
        and state["scale"] == scales[7] and state["skipped_steps"] == skipped[7]
        and losses[-1] < losses[0])
print(f"fp16: {skipped[-1]} of 12 steps skipped, scale 2^24 -> {scales[-1]:g}, checkpoint-8 holds scale "
      f"{state['scale']:g} and {state['skipped_steps']} skipped -> {'ok' if good else 'MISMATCH'}")
ok &= good
dp = param_diff("fp16_dp2", "fp16")
good = [e["skipped_steps"] for e in entries("fp16_dp2")] == skipped and dp < d
print(f"fp16 on 2 data-parallel ranks: the same skipped steps, max |param diff| / max |param| {dp:.2e} (bound: "
      f"bf16's distance from fp32, as for the bf16 layouts) -> {'ok' if good else 'MISMATCH'}")
ok &= good
good = same_bits("r_fp16", "fp16") and [e["loss_scale"] for e in entries("r_fp16")] == scales
print(f"fp16 resumed from checkpoint-8: {'the same bits and scales' if good else 'OTHER BITS OR SCALES'} as the uninterrupted run")
ok &= good
sys.exit(0 if ok else 1)
PY
