#!/usr/bin/env bash
# Data parallelism, ZeRO and pipeline stages for an encoder-decoder (BART, 2 + 2 layers,
# sequence to sequence): 2 ranks, 3 ranks and 2 ranks with ZeRO-2 reproduce 1 rank with the
# same global batch (6 = ranks x per-device batch), 5 steps, no dropout, targets of their own
# length: every step's loss and gradient norm, the eval loss, the final parameters
# (tests/mpi/equivalence.py), and the evaluation by generating (predict_with_generate): ROUGE
# and gen_len equal, the generated predictions identical, whichever rank generated them. So do
# pipelines (whose stages cannot generate: evaluation by the loss): 2 stages cut after the
# first decoder layer (the boundary carries the encoder's output along), 2 stages with every
# layer recomputed and offloaded under GPipe, and 3 stages [2, 1, 1] (one of each boundary; the
# middle stage passes d(encoder output) through) recomputing every 2nd layer. And
# predict_with_generate with pipeline stages is refused before any work.
#   seq2seq_equivalence.sh STRATA_BINARY SOURCE_DIR
set -euo pipefail
STRATA=${1:?usage: seq2seq_equivalence.sh STRATA_BINARY SOURCE_DIR}
SRC=${2:?}
source "$(dirname "$0")/work_dir.sh"  # $WORK (kept with KEEP=1), mpirun as root, one thread

mkdir -p "$WORK/model"
cat > "$WORK/model/config.json" <<'JSON'
{"model_type": "bart", "architectures": ["BartForConditionalGeneration"], "vocab_size": 8000, "d_model": 32,
 "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 2, "decoder_attention_heads": 2,
 "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "max_position_embeddings": 64, "dropout": 0.0,
 "attention_dropout": 0.0, "activation_dropout": 0.0, "scale_embedding": true, "pad_token_id": 1,
 "bos_token_id": 0, "eos_token_id": 7999, "decoder_start_token_id": 2}
JSON
# eos_token_id: a token the 5-step model never picks, so every generation runs its 7 tokens.
# 13 validation examples: a size no world size divides
{ zcat "$SRC/examples/seq2seq/data/validation.jsonl.gz" || true; } | head -n 13 > "$WORK/val.jsonl"
# 60 training rows from the bundled test split (the example's training split is made on demand)
{ zcat "$SRC/examples/seq2seq/data/test.jsonl.gz" || true; } | head -n 60 > "$WORK/train.jsonl"

generating="do_predict: true
predict_with_generate: true"
run() {  # name, ranks, per-device batch, extra options, [evaluation: generating (default) or by the loss]
  local name=$1 ranks=$2 batch=$3
  cat > "$WORK/$name.yaml" <<YAML
model_name_or_path: $WORK/model
tokenizer_name: $SRC/examples/tokenizers/bpe-8k
train_file: $WORK/train.jsonl
validation_file: $WORK/val.jsonl
test_file: $WORK/val.jsonl
${5-$generating}
text_column: gloss
summary_column: words
max_source_length: 32
max_target_length: 12
generation_max_length: 8
output_dir: $WORK/$name
per_device_train_batch_size: $batch
per_device_eval_batch_size: 2
max_steps: 5
logging_steps: 1
learning_rate: 3.0e-3
weight_decay: 0.01
max_grad_norm: 0.25
save_strategy: 'no'
$4
YAML
  if [[ $ranks == 1 ]]; then "$STRATA" train "$WORK/$name.yaml" > "$WORK/$name.log" 2>&1
  else mpirun --oversubscribe -np "$ranks" "$STRATA" train "$WORK/$name.yaml" > "$WORK/$name.log" 2>&1; fi \
    || { cat "$WORK/$name.log"; exit 1; }
}

run one 1 6 ""
run dp2 2 3 ""
run dp3 3 2 ""
run zero2 2 3 "zero_stage: 2"
by_loss="predict_with_generate: false"
run pp2 2 6 "pipeline_parallel_degree: 2
microbatches: 2
pipeline_partition: [3, 1]" "$by_loss"
run pp2_ckpt 2 6 "pipeline_parallel_degree: 2
microbatches: 3
pipeline: simple
gradient_checkpointing: true
offload_activations: true" "$by_loss"
run pp3_ckpt 3 6 "pipeline_parallel_degree: 3
microbatches: 3
pipeline_partition: [2, 1, 1]
gradient_checkpointing: true
gradient_checkpointing_every: 2" "$by_loss"
grep -q "stage 1: blocks 2..2" "$WORK/pp3_ckpt.log" || { echo "FAILED: pp3_ckpt's stage table"; exit 1; }
"$(dirname "$0")/expect_failure.sh" 60 "predict_with_generate with pipeline_parallel_degree 2" -- \
  mpirun --oversubscribe -np 2 "$STRATA" train "$WORK/pp2.yaml" --set predict_with_generate=true \
  --set output_dir="$WORK/refused"
[[ ! -e "$WORK/refused" ]] || { echo "FAILED: the refused job made its output directory"; exit 1; }

python3 - "$WORK" "$(dirname "$0")" <<'PY'
import filecmp, json, sys
work, here = sys.argv[1:3]
sys.path.insert(0, here)
from equivalence import compare
ok = compare(work, "one", ["dp2", "dp3", "zero2", "pp2", "pp2_ckpt", "pp3_ckpt"])
one = json.load(open(f"{work}/one/eval_results.json"))
for name in ("dp2", "dp3", "zero2"):
    got = json.load(open(f"{work}/{name}/eval_results.json"))
    for k in ("eval_rouge1", "eval_rouge2", "eval_rougeL", "eval_rougeLsum", "eval_gen_len"):
        if got.get(k) != one.get(k):
            print(f"FAIL {name}: {k} {got.get(k)} vs {one.get(k)}"); ok = False
    if not filecmp.cmp(f"{work}/one/generated_predictions.txt", f"{work}/{name}/generated_predictions.txt", shallow=False):
        print(f"FAIL {name}: generated_predictions.txt differs"); ok = False
print("1 rank eval:", {k: v for k, v in one.items() if not k.endswith(("_runtime", "_per_second"))})
sys.exit(0 if ok else 1)
PY
echo "PASS: BART seq2seq, 2 and 3 ranks, ZeRO-2 and pipelines of 2 and 3 stages = 1 rank"
