#!/usr/bin/env bash
# Activation checkpointing and offloading under data parallelism (docs/parallelism.md):
#   - 2 ranks with gradient_checkpointing (every block) reproduce 1 rank without it, same
#     global batch, no dropout (the tolerance of ddp_equivalence.sh: summation order differs);
#   - with dropout on, 2 ranks checkpointing every 2nd block and offloading reproduce 2 ranks
#     that do neither bit for bit (the same masks are drawn: the recompute is exact); so do
#     2 ranks with ZeRO-2 checkpointing every block and offloading.
#   ddp_checkpointing.sh STRATA_BINARY SOURCE_DIR
set -euo pipefail
STRATA=${1:?usage: ddp_checkpointing.sh STRATA_BINARY SOURCE_DIR}
SRC=${2:?}
WORK=$(mktemp -d)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$WORK"' EXIT
echo "work dir: $WORK"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 TMPDIR="$WORK"

mkdir -p "$WORK/model" "$WORK/model_dropout"
# Four blocks: with offloading two records go through the pool on each rank.
config() {  # dropout
  echo "{\"model_type\": \"bert\", \"architectures\": [\"BertForSequenceClassification\"], \"vocab_size\": 8000,
 \"hidden_size\": 32, \"num_hidden_layers\": 4, \"num_attention_heads\": 2, \"intermediate_size\": 64,
 \"max_position_embeddings\": 64, \"pad_token_id\": 3, \"hidden_dropout_prob\": $1,
 \"attention_probs_dropout_prob\": $1}"
}
config 0.0 > "$WORK/model/config.json"
config 0.1 > "$WORK/model_dropout/config.json"
python3 - "$WORK" <<'PY'
import sys, random
random.seed(0)
words = "win money now click free offer meeting notes monday lunch project report cash prize".split()
with open(f"{sys.argv[1]}/train.csv", "w") as f:
    f.write("text,label\n")
    for i in range(64):
        spam = i % 3 == 0
        text = " ".join(random.choice(words[:7] if spam else words[7:]) for _ in range(random.randint(3, 12)))
        f.write(f'"{text}",{"spam" if spam else "ham"}\n')
PY

run() {  # name, ranks, per-device batch, model, extra options...
  local name=$1 ranks=$2 batch=$3 model=$4
  shift 4
  cat > "$WORK/$name.yaml" <<YAML
model_name_or_path: $WORK/$model
tokenizer_name: $SRC/examples/spam/bert-small
train_file: $WORK/train.csv
output_dir: $WORK/$name
max_seq_length: 16
per_device_train_batch_size: $batch
max_steps: 6
logging_steps: 1
learning_rate: 3.0e-3
save_strategy: "no"
num_threads: 1
seed: 7
YAML
  for opt in "$@"; do echo "$opt" >> "$WORK/$name.yaml"; done
  if [[ $ranks == 1 ]]; then
    "$STRATA" train "$WORK/$name.yaml" > "$WORK/$name.log" 2>&1
  else
    mpirun --oversubscribe -np "$ranks" "$STRATA" train "$WORK/$name.yaml" > "$WORK/$name.log" 2>&1
  fi || { echo "FAILED: $name"; tail -20 "$WORK/$name.log"; exit 1; }
}
run single 1 8 model
run ckpt2ranks 2 4 model "gradient_checkpointing: true"
run dropout2ranks 2 4 model_dropout
run dropout2ranks_ckpt_offload 2 4 model_dropout "gradient_checkpointing: true" "gradient_checkpointing_every: 2" \
  "offload_activations: true"
run zero2 2 4 model_dropout "zero_stage: 2"
run zero2_ckpt_offload 2 4 model_dropout "zero_stage: 2" "gradient_checkpointing: true" "offload_activations: true"
grep -q "memory measured, rank 1: peak RSS .*predicted peak" "$WORK/ckpt2ranks.log" || { echo "FAILED: no per-rank peak"; exit 1; }

PYTHONPATH="$(dirname "$0")" python3 - "$WORK" <<'PY'
import json, sys
import safetensors_f32
work = sys.argv[1]
def losses(name):
    return [r["loss"] for r in map(json.loads, open(f"{work}/{name}/trainer_log.jsonl")) if "loss" in r]
def model(name):
    return open(f"{work}/{name}/model.safetensors", "rb").read()
ok = True
ref = safetensors_f32.read(f"{work}/single/model.safetensors")
got = safetensors_f32.read(f"{work}/ckpt2ranks/model.safetensors")
scale = max(abs(x) for t in ref.values() for x in t)
dw = max(abs(a - b) for k in ref for a, b in zip(got[k], ref[k])) / scale
dl = max(abs(a - b) for a, b in zip(losses("ckpt2ranks"), losses("single")))
good = len(losses("ckpt2ranks")) == 6 and dl <= 2e-4 and dw <= 1e-5
ok &= good
print(f"2 ranks + checkpointing vs 1 rank: max |loss diff| {dl:.2e}, max |param diff| / max |param| {dw:.2e} "
      f"-> {'ok' if good else 'MISMATCH'}")
for plain, other, what in (("dropout2ranks", "dropout2ranks_ckpt_offload", "checkpointing every 2nd block + offloading"),
                           ("zero2", "zero2_ckpt_offload", "ZeRO-2, checkpointing every block + offloading")):
    same = model(plain) == model(other) and losses(plain) == losses(other)
    ok &= same
    print(f"2 ranks with dropout, {what} vs neither: {'bit-identical' if same else 'DIFFERENT'}")
sys.exit(0 if ok else 1)
PY
