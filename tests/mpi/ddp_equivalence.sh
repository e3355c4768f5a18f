#!/usr/bin/env bash
# Data parallelism reproduces the single process: 2 and 4 ranks with per-device batch b
# against 1 rank with batch 2b / 4b, same global batches, 10 steps, no dropout. Checks the
# logged losses of every step, the final parameters, and distributed evaluation on a
# validation set whose size (7) no world size divides; and a checkpoint saved by 2 ranks
# resumed on 4 ranks and on 1 rank ends where the uninterrupted run ends; ranks started with
# different configurations, or with different weights under the same path, are refused.
#   ddp_equivalence.sh STRATA_BINARY SOURCE_DIR
set -euo pipefail
STRATA=${1:?usage: ddp_equivalence.sh STRATA_BINARY SOURCE_DIR}
SRC=${2:?}
source "$(dirname "$0")/work_dir.sh"  # $WORK (kept with KEEP=1), mpirun as root, one thread

mkdir -p "$WORK/model"
cat > "$WORK/model/config.json" <<'JSON'
{"model_type": "bert", "architectures": ["BertForSequenceClassification"], "vocab_size": 8000,
 "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
 "max_position_embeddings": 64, "pad_token_id": 3, "hidden_dropout_prob": 0.0,
 "attention_probs_dropout_prob": 0.0}
JSON
python3 - "$WORK" <<'PY'
import sys, random
work = sys.argv[1]
random.seed(0)
words = "win money now click free offer meeting notes monday lunch project report cash prize".split()
def rows(n):
    out = []
    for i in range(n):
        spam = i % 3 == 0
        k = random.randint(3, 12)
        text = " ".join(random.choice(words[:7] if spam else words[7:]) for _ in range(k))
        out.append((text, "spam" if spam else "ham"))
    return out
for name, n in (("train", 96), ("val", 7)):
    with open(f"{work}/{name}.csv", "w") as f:
        f.write("text,label\n")
        for t, l in rows(n):
            f.write(f'"{t}",{l}\n')
PY

run() {  # name, ranks, per-device batch
  local name=$1 ranks=$2 batch=$3
  cat > "$WORK/$name.yaml" <<YAML
model_name_or_path: $WORK/model
tokenizer_name: $SRC/examples/spam/bert-small
train_file: $WORK/train.csv
validation_file: $WORK/val.csv
output_dir: $WORK/$name
max_seq_length: 16
per_device_train_batch_size: $batch
per_device_eval_batch_size: 2
max_steps: 10
logging_steps: 1
learning_rate: 3.0e-3
warmup_steps: 2
eval_strategy: steps
eval_steps: 5
save_strategy: "no"
num_threads: 1
seed: 7
YAML
  if [[ $ranks == 1 ]]; then
    "$STRATA" train "$WORK/$name.yaml" > "$WORK/$name.log" 2>&1
  else
    mpirun --oversubscribe -np "$ranks" "$STRATA" train "$WORK/$name.yaml" > "$WORK/$name.log" 2>&1
  fi || { echo "FAILED: $name"; tail -20 "$WORK/$name.log"; exit 1; }
}
run single 1 8
run ddp2 2 4
run ddp4 4 2
# A checkpoint saved by 2 ranks resumes on 4 ranks (same global batch) and on 1 rank.
sed -i 's/save_strategy: "no"/save_strategy: steps\nsave_steps: 5/' "$WORK/ddp2.yaml"
mkdir -p "$WORK/resumed4" "$WORK/resumed1"
mpirun --oversubscribe -np 2 "$STRATA" train "$WORK/ddp2.yaml" --set overwrite_output_dir=true > "$WORK/ddp2b.log" 2>&1
cp -r "$WORK/ddp2/checkpoint-5" "$WORK/resumed4/" && cp -r "$WORK/ddp2/checkpoint-5" "$WORK/resumed1/"
mpirun --oversubscribe -np 4 "$STRATA" train "$WORK/ddp4.yaml" --set output_dir="$WORK/resumed4" \
    --set resume_from_checkpoint=latest > "$WORK/resumed4.log" 2>&1 || { tail -20 "$WORK/resumed4.log"; exit 1; }
"$STRATA" train "$WORK/single.yaml" --set output_dir="$WORK/resumed1" --set resume_from_checkpoint=latest \
    > "$WORK/resumed1.log" 2>&1 || { tail -20 "$WORK/resumed1.log"; exit 1; }

# Ranks started with different configurations are refused at start, on every rank.
if mpirun --oversubscribe -np 1 "$STRATA" train "$WORK/ddp2.yaml" --set output_dir="$WORK/mismatch" : \
     -np 1 "$STRATA" train "$WORK/ddp2.yaml" --set output_dir="$WORK/mismatch" --set learning_rate=0.1 \
     > "$WORK/mismatch.log" 2>&1; then
  echo "FAILED: ranks with different learning rates were not refused"; exit 1
fi
grep -q "configuration differs across ranks: rank 1 has a different configuration or model files than rank 0" \
  "$WORK/mismatch.log" || { echo "FAILED: no mismatch diagnostic"; tail -20 "$WORK/mismatch.log"; exit 1; }
echo "mismatch: refused with 'configuration differs across ranks' -> ok"
# The same options and model path, but each rank's directory holds other weights of the same
# architecture (the final model against its checkpoint at step 5): refused too, though no rank
# reads the weights whole to compare them (io/file_fingerprint.h).
for side in a b; do
  mkdir -p "$WORK/weights-$side"
  sed -e "s|^model_name_or_path: .*|model_name_or_path: model|" -e "s|^output_dir: .*|output_dir: out|" \
    "$WORK/single.yaml" > "$WORK/weights-$side/job.yaml"
done
cp -r "$WORK/single" "$WORK/weights-a/model"
cp -r "$WORK/ddp2/checkpoint-5" "$WORK/weights-b/model"
if mpirun --oversubscribe -np 1 -wdir "$WORK/weights-a" "$STRATA" train job.yaml : \
     -np 1 -wdir "$WORK/weights-b" "$STRATA" train job.yaml > "$WORK/weights.log" 2>&1; then
  echo "FAILED: ranks with different weights were not refused"; exit 1
fi
grep -q "rank 1 has a different configuration or model files than rank 0" "$WORK/weights.log" ||
  { echo "FAILED: no diagnostic for different weights"; tail -20 "$WORK/weights.log"; exit 1; }
echo "mismatch: different weights under one path refused -> ok"

PYTHONPATH="$(dirname "$0")" python3 - "$WORK" <<'PY'
import json, sys
import safetensors_f32
work = sys.argv[1]
def log(name):
    rows = [json.loads(l) for l in open(f"{work}/{name}/trainer_log.jsonl")]
    return [r["loss"] for r in rows if "loss" in r], [r for r in rows if "eval_loss" in r]
def weights(name):
    return safetensors_f32.read(f"{work}/{name}/model.safetensors")
ref_loss, ref_eval = log("single")
ref_w = weights("single")
scale = max(abs(x) for t in ref_w.values() for x in t)
ok = True
for name in ("ddp2", "ddp4", "resumed4", "resumed1"):
    loss, ev = log(name)
    w = weights(name)
    dl = max(abs(a - b) for a, b in zip(loss, ref_loss))
    dw = max(abs(a - b) for k in ref_w for a, b in zip(w[k], ref_w[k])) / scale
    de = max(abs(a[k] - b[k]) for a, b in zip(ev, ref_eval) for k in a if k.startswith("eval_") and "runtime" not in k and "per_second" not in k)
    resumed = name.startswith("resumed")  # the log holds the checkpoint's history, then the rest
    # 3 evaluations: 2 during training and the final one, which the log records as HF's does
    good = len(loss) == len(ref_loss) == 10 and dl <= 2e-4 and dw <= 1e-5 and de <= 1e-5 and len(ev) == len(ref_eval) == 3
    ok &= good
    print(f"{name}: {len(loss)} logged losses, max |loss - single| {dl:.2e} (logged to 4 decimals); "
          f"max |param - single| / max |param| {dw:.2e}; max eval metric diff {de:.2e} -> {'ok' if good else 'MISMATCH'}")
print("single losses:", ref_loss)
sys.exit(0 if ok else 1)
PY
