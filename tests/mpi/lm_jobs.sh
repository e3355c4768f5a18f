# The tiny language-model jobs of the pipeline and tensor-parallel equivalence scripts
# (sourced, not run): a 4-layer BERT masked LM or GPT-2 causal LM (hidden 32, 2 heads, vocab
# 8000, embeddings tied to the LM head) on 110 short texts, 5 steps of 2 accumulated batches,
# weight decay, clipping active (max_grad_norm 0.25), 0.1 MiB buckets, an evaluation at the end.
# The script sets SRC (the source tree), WORK and FAMILY (bert | gpt2); this defines
#   lm_model DIR DROPOUT                       $WORK/DIR/config.json of the family's model
#   job NAME RANKS PER_DEVICE_BATCH EXTRA_YAML writing $WORK/NAME.yaml (output_dir $WORK/NAME;
#                                              MODEL: the model directory, default $WORK/model)
#   mp TENSOR PARTITIONS MICROBATCHES [MORE]   the SageMaker modelparallel block of that layout
#                                              (MORE: further parameters, e.g. ', zero_stage: 1')
# and writes $WORK/train.txt.

lm_model() {
  mkdir -p "$WORK/$1"
  if [[ $FAMILY == bert ]]; then
    cat > "$WORK/$1/config.json" <<JSON
{"model_type": "bert", "architectures": ["BertForMaskedLM"], "vocab_size": 8000, "hidden_size": 32,
 "num_hidden_layers": 4, "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 64,
 "pad_token_id": 3, "hidden_dropout_prob": $2, "attention_probs_dropout_prob": $2}
JSON
  else
    cat > "$WORK/$1/config.json" <<JSON
{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 8000, "n_embd": 32,
 "n_layer": 4, "n_head": 2, "n_positions": 64, "resid_pdrop": $2, "embd_pdrop": $2, "attn_pdrop": $2}
JSON
  fi
}
if [[ $FAMILY == bert ]]; then
  LM_DATA="tokenizer_name: $SRC/examples/spam/bert-small
line_by_line: true
max_seq_length: 16"
else
  LM_DATA="tokenizer_name: $SRC/examples/tokenizers/bpe-8k
block_size: 16"
fi
python3 - "$WORK" <<'PY'
import sys, random
random.seed(0)
words = "win money now click free offer meeting notes monday lunch project report cash prize".split()
with open(f"{sys.argv[1]}/train.txt", "w") as txt:
    for i in range(110):
        spam = i % 3 == 0
        txt.write(" ".join(random.choice(words[:7] if spam else words[7:]) for _ in range(random.randint(3, 12))) + "\n")
PY

job() {
  cat > "$WORK/$1.yaml" <<YAML
model_name_or_path: ${MODEL:-$WORK/model}
$LM_DATA
train_file: $WORK/train.txt
validation_split_percentage: 10
per_device_eval_batch_size: 4
output_dir: $WORK/$1
per_device_train_batch_size: $3
gradient_accumulation_steps: 2
max_steps: 5
logging_steps: 1
eval_strategy: steps
eval_steps: 5
learning_rate: 3.0e-3
weight_decay: 0.01
max_grad_norm: 0.25
warmup_steps: 2
save_strategy: "no"
ddp_bucket_cap_mb: 0.1
num_threads: 1
seed: 7
$4
YAML
}

mp() {  # tensor degree, partitions, microbatches, [more parameters]
  echo "distribution:
  smdistributed:
    modelparallel:
      enabled: true
      parameters: {tensor_parallel_degree: $1, partitions: $2, microbatches: $3, ddp: true${4:-}}
  mpi: {enabled: true}"
}
