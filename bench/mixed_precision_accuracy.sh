#!/bin/bash
# bf16 against fp32 on what the examples train (docs/mixed_precision.md, "Accuracy in
# training"): the spam job (examples/spam/demo.yaml) for each seed of SEEDS, and the
# pretraining + fine-tuning comparison (examples/run.sh compare: masked-LM pretraining, then
# WordNet supersense from it and from random init) for each seed of COMPARE_SEEDS, once in fp32
# and once with bf16: true (native products; half_precision_backend: emulated elsewhere, via
# EXTRA="--set half_precision_backend=emulated"). Prints one line per run; outputs in OUTDIR.
#
#   bench/mixed_precision_accuracy.sh BUILD_DIR OUTDIR    e.g. bench/mixed_precision_accuracy.sh build out/acc
# Env: SEEDS (spam; default "42 43 44 45"), COMPARE_SEEDS (default "42 43"), EXTRA (more strata options).
set -euo pipefail
STRATA=$1/strata
OUT=${2:?usage: mixed_precision_accuracy.sh BUILD_DIR OUTDIR}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
# EXTRA is split into words on purpose (several --set options).
# shellcheck disable=SC2086
train() {
  local log
  log="$OUT/$(basename "${*: -1}").log"
  "$STRATA" train "$@" --set disable_tqdm=true ${EXTRA:-} > "$log" 2>&1 || { echo "FAILED: $log" >&2; tail -n 5 "$log" >&2; exit 1; }
}
flags() { [[ $1 == bf16 ]] && echo "--set bf16=true" || true; }
metrics() {  # directory, keys...
  local dir=$1; shift
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(' '.join(f'{k} {r[k]:.4f}' for k in sys.argv[2:]))" \
    "$dir/all_results.json" "$@"
}
for p in fp32 bf16; do
  for seed in ${SEEDS:-42 43 44 45}; do
    # shellcheck disable=SC2046
    train examples/spam/demo.yaml $(flags $p) --set seed="$seed" --set output_dir="$OUT/spam-$p-$seed"
    echo "spam $p seed $seed: $(metrics "$OUT/spam-$p-$seed" eval_f1 predict_f1 eval_accuracy predict_accuracy train_runtime)"
  done
  # shellcheck disable=SC2046
  train examples/pretrain/mlm_pretrain.yaml $(flags $p) --set output_dir="$OUT/mlm-$p"
  echo "mlm $p: $(metrics "$OUT/mlm-$p" eval_loss eval_accuracy train_runtime)"
  for seed in ${COMPARE_SEEDS:-42 43}; do
    for arm in pretrained random; do
      from=(); [[ $arm == pretrained ]] && from=(--set model_name_or_path="$OUT/mlm-$p")
      # shellcheck disable=SC2046
      train examples/supersense/finetune_$arm.yaml "${from[@]}" $(flags $p) --set seed="$seed" \
        --set output_dir="$OUT/supersense-$arm-$p-$seed"
      echo "supersense $arm $p seed $seed: $(metrics "$OUT/supersense-$arm-$p-$seed" eval_accuracy predict_accuracy predict_f1_macro)"
    done
  done
done
