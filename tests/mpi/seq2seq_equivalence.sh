#!/usr/bin/env bash
# Data, ZeRO, pipeline and tensor parallelism for encoder-decoders (sequence to sequence). BART
# (2 + 2 layers): 2 ranks, 3 ranks, 2 ranks with ZeRO-2, tensor_parallel_degree 2 and tensor 2 x
# data 2 reproduce 1 rank with the same global batch (6 = data-parallel ranks x per-device batch),
# 5 steps, no dropout, targets of their own length: every step's loss and gradient norm, the eval
# loss, the final parameters (tests/mpi/equivalence.py; the saved model is the unsplit HF one),
# and the evaluation by generating (predict_with_generate): ROUGE and gen_len equal, the
# generated predictions identical, whichever rank generated them (tensor-parallel ranks generate
# together through their split cached decoder). tp 2's checkpoint at step 3 (the unsplit model
# and optimizer state), resumed by one process, ends there too; a tensor-parallel rank holds
# about half the parameters. So do pipelines (whose stages cannot generate: evaluation by the
# loss): 2 stages cut after the first decoder layer (the boundary carries the encoder's output
# along), 2 stages with every layer recomputed and offloaded under GPipe, 3 stages [2, 1, 1] (one
# of each boundary; the middle stage passes d(encoder output) through) recomputing every 2nd
# layer, and tensor 2 x pipeline 2 recomputing every layer. And predict_with_generate with
# pipeline stages is refused before any work. T5 v1.1 (gated-gelu, lm_head of its own) with
# dropout on at tensor_parallel_degree 2 reproduces its 1-rank run (the split attention and FFN
# draw one process's dropout masks; one thread, so that the single process runs no replica
# threads, which draw masks of their own micro-batches).
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
mkdir -p "$WORK/t5"
cat > "$WORK/t5/config.json" <<'JSON'
{"model_type": "t5", "architectures": ["T5ForConditionalGeneration"], "vocab_size": 8000, "d_model": 32,
 "d_kv": 8, "d_ff": 64, "num_heads": 2, "num_layers": 1, "num_decoder_layers": 1,
 "relative_attention_num_buckets": 8, "relative_attention_max_distance": 16, "dropout_rate": 0.1,
 "initializer_factor": 0.1,
 "feed_forward_proj": "gated-gelu", "tie_word_embeddings": false, "pad_token_id": 1, "eos_token_id": 7999,
 "decoder_start_token_id": 1}
JSON
# T5: HF's init scaled down (initializer_factor) so that the untrained loss is log(vocab_size),
# not 23 from an lm_head of standard deviation 1, whose huge and cancelling gradients make
# AdamW's first steps sensitive to the order of sums.
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
model_name_or_path: ${MODEL:-$WORK/model}
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
run tp2 2 6 "tensor_parallel_degree: 2
save_strategy: steps
save_steps: 3"
# tp2's checkpoint (the unsplit HF model and optimizer state) resumed by one process
mkdir -p "$WORK/r_one" && cp -r "$WORK/tp2/checkpoint-3" "$WORK/r_one/"
run r_one 1 6 "resume_from_checkpoint: latest"
run tp2_dp2 4 3 "tensor_parallel_degree: 2"
MODEL=$WORK/t5 run t5_one 1 6 "num_threads: 1"
MODEL=$WORK/t5 run t5_tp2 2 6 "num_threads: 1
tensor_parallel_degree: 2"
grep -q "each layer split over 2 tensor-parallel ranks" "$WORK/tp2.log" || { echo "FAILED: no tensor banner"; exit 1; }
grep -q "resumed from .*checkpoint-3 at step 3" "$WORK/r_one.log" || { echo "FAILED: no resume"; exit 1; }
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
run tp2_pp2_ckpt 4 6 "tensor_parallel_degree: 2
pipeline_parallel_degree: 2
microbatches: 2
gradient_checkpointing: true" "$by_loss"
grep -q "stage 1: blocks 2..2" "$WORK/pp3_ckpt.log" || { echo "FAILED: pp3_ckpt's stage table"; exit 1; }
"$(dirname "$0")/expect_failure.sh" 60 "predict_with_generate with pipeline_parallel_degree 2" -- \
  mpirun --oversubscribe -np 2 "$STRATA" train "$WORK/pp2.yaml" --set predict_with_generate=true \
  --set output_dir="$WORK/refused"
[[ ! -e "$WORK/refused" ]] || { echo "FAILED: the refused job made its output directory"; exit 1; }

python3 - "$WORK" "$(dirname "$0")" <<'PY'
import filecmp, json, sys
work, here = sys.argv[1:3]
sys.path.insert(0, here)
from equivalence import compare, measured_memory as measured
# Tensor parallelism sums the row-parallel outputs, input gradients and the loss's exponentials
# in another order.
ok = compare(work, "one", ["dp2", "dp3", "zero2", "tp2", "tp2_dp2", "r_one", "pp2", "pp2_ckpt", "pp3_ckpt",
                           "tp2_pp2_ckpt"])
ok &= compare(work, "t5_one", ["t5_tp2"])
for ref, name in (("one", "dp2"), ("one", "dp3"), ("one", "zero2"), ("one", "tp2"), ("one", "tp2_dp2"),
                  ("one", "r_one"), ("t5_one", "t5_tp2")):
    one = json.load(open(f"{work}/{ref}/eval_results.json"))
    got = json.load(open(f"{work}/{name}/eval_results.json"))
    for k in ("eval_rouge1", "eval_rouge2", "eval_rougeL", "eval_rougeLsum", "eval_gen_len"):
        if got.get(k) != one.get(k):
            print(f"FAIL {name}: {k} {got.get(k)} vs {one.get(k)}"); ok = False
    if not filecmp.cmp(f"{work}/{ref}/generated_predictions.txt", f"{work}/{name}/generated_predictions.txt", shallow=False):
        print(f"FAIL {name}: generated_predictions.txt differs"); ok = False
    if name in ("tp2", "t5_tp2"):
        print(f"{ref} eval:", {k: v for k, v in one.items() if not k.endswith(("_runtime", "_per_second"))})
# A tensor-parallel rank holds its slices: about half the parameters (positions, norms and the
# row-parallel biases are whole on both ranks) and half the optimizer state.
one, tp = measured(work, "one")[0], measured(work, "tp2")
good = len(tp) == 2 and all(0.45 * one[1] <= o <= 0.6 * one[1] for _, o in tp.values())
ok &= good
print(f"tp2 memory per rank (parameters, optimizer state MiB): {tp}; one process: {one} -> {'ok' if good else 'BAD'}")
sys.exit(0 if ok else 1)
PY
echo "PASS: BART seq2seq, 2 and 3 ranks, ZeRO-2, pipelines of 2 and 3 stages, tensor 2, tensor 2 x data 2 and tensor 2 x pipeline 2 = 1 rank; T5 tensor 2 = 1 rank"
