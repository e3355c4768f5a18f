# Sourced by the job tests (tests/jobs/*.sh). tiny_training DIR STEPS BATCH writes, in DIR:
#   model/config.json   a 2-layer BERT of hidden 32 with dropout on (its masks are part of what
#                       an exact resume must reproduce), initialised at random by strata train
#   train.csv           400 generated e-mails, spam or ham
#   train.yaml          a strata train config: STEPS steps of BATCH examples per rank,
#                       a checkpoint every 100 steps (the last 2 kept)
# Paths are absolute: the jobs run from other directories.
tiny_training() {
  local dir=$1 steps=$2 batch=$3
  mkdir -p "$dir/model"
  cat > "$dir/model/config.json" <<'JSON'
{"model_type": "bert", "architectures": ["BertForSequenceClassification"], "vocab_size": 8000,
 "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
 "max_position_embeddings": 64, "pad_token_id": 3, "hidden_dropout_prob": 0.1,
 "attention_probs_dropout_prob": 0.1}
JSON
  python3 - "$dir/train.csv" <<'PY'
import random, sys
random.seed(0)
words = "win money now click free offer meeting notes monday lunch project report cash prize".split()
with open(sys.argv[1], "w") as f:
    f.write("text,label\n")
    for i in range(400):
        spam = i % 3 == 0
        text = " ".join(random.choice(words[:7] if spam else words[7:]) for _ in range(random.randint(3, 12)))
        f.write(f'"{text}",{"spam" if spam else "ham"}\n')
PY
  cat > "$dir/train.yaml" <<YAML
model_name_or_path: $dir/model
tokenizer_name: $SRC/examples/spam/bert-small
train_file: $dir/train.csv
output_dir: $dir/out
max_seq_length: 16
per_device_train_batch_size: $batch
max_steps: $steps
logging_steps: 50
learning_rate: 3.0e-3
save_strategy: steps
save_steps: 100
save_total_limit: 2
seed: 7
disable_tqdm: true
YAML
}

# job_field DIR KEY: a top-level value of the job's status.json (python3 expression on `s`).
job_field() {
  python3 -c "import json,sys; s=json.load(open(sys.argv[1]+'/status.json')); print($2)" "$1"
}

fail() { echo "FAIL: $*"; exit 1; }

# log_appears FILE_GLOB TEXT: waits until a file of the glob holds TEXT; returns 1 if none does
# within 4 minutes. An event, not a time: the bound only keeps a broken run inside CTest's
# 300 s, with room for a requeue and a start-up on one busy core.
log_appears() {
  local deadline=$((SECONDS + 240))
  while ((SECONDS < deadline)); do
    # shellcheck disable=SC2086  # the glob expands here
    grep -qs "$2" $1 && return 0
    sleep 0.1
  done
  return 1
}
