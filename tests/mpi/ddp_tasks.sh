#!/usr/bin/env bash
# Data parallelism for the tasks whose evaluation gathers more than labels: token
# classification (seqeval over sentences) and question answering (logits of every window,
# post-processed into answers). 2 and 3 ranks with per-device batch b against 1 rank with
# batch 2b / 3b, no dropout: evaluation metrics equal (loss to 1e-6), QA answers identical,
# prediction files identical. The validation sets' sizes are divisible by no world size.
#   ddp_tasks.sh STRATA_BINARY SOURCE_DIR
set -euo pipefail
STRATA=${1:?usage: ddp_tasks.sh STRATA_BINARY SOURCE_DIR}
SRC=${2:?}
source "$(dirname "$0")/work_dir.sh"  # $WORK (kept with KEEP=1), mpirun as root, one thread

python3 - "$WORK" <<'PY'
import json, os, sys
work = sys.argv[1]
base = {"model_type": "bert", "vocab_size": 8000, "hidden_size": 32, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 64, "pad_token_id": 0,
        "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
for task, arch in (("ner", "BertForTokenClassification"), ("qa", "BertForQuestionAnswering")):
    os.makedirs(f"{work}/model_{task}")
    json.dump(dict(base, architectures=[arch]), open(f"{work}/model_{task}/config.json", "w"))
fillers, colours = ["the", "cat", "saw", "a", "house", "near", "river"], ["red", "blue", "green"]
def sentence(i):
    words, tags = [], []
    for k in range(6):
        kind = (i * 7 + k * 3) % 5
        if kind == 0:
            words.append(str(10 + (i + k) % 80)); tags.append("B-NUM")
            if (i + k) % 2: words.append("thousand"); tags.append("I-NUM")
        elif kind == 1: words.append(colours[(i + k) % 3]); tags.append("B-COL")
        else: words.append(fillers[(i * 3 + k) % 7]); tags.append("O")
    return {"tokens": words, "tags": tags}
names, things = ["anna", "bob", "carl", "dora", "emil", "fay"], ["key", "map", "lamp", "book", "coin", "rope"]
def question(i):  # every 7th context is long enough for several windows
    n = 12 if i % 7 == 0 else 4
    context, asked = "", i % n
    for k in range(n):
        who, what = names[(i + k) % 6], things[(i + 2 * k) % 6]
        if k == asked: start, answer = len(context), who
        context += f"{who} has the {what} {k}. "
    return {"id": f"q{i}", "question": f"who has the {things[(i + 2 * asked) % 6]} {asked}?", "context": context,
            "answers": {"text": [answer], "answer_start": [start]}}
def write(name, rows):
    with open(f"{work}/{name}.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
write("ner_train", [sentence(i) for i in range(72)])
write("ner_val", [sentence(i) for i in range(100, 113)])
write("qa_train", [question(i) for i in range(72)])
write("qa_val", [question(i) for i in range(100, 113)])
PY

run() {  # task, ranks, per-device batch
  local task=$1 ranks=$2 batch=$3 extra="max_seq_length: 32"
  [[ $task == qa ]] && extra=$'max_seq_length: 48\ndoc_stride: 16'
  cat > "$WORK/$task-$ranks.yaml" <<YAML
model_name_or_path: $WORK/model_$task
tokenizer_name: $SRC/examples/spam/bert-small
train_file: $WORK/${task}_train.jsonl
validation_file: $WORK/${task}_val.jsonl
test_file: $WORK/${task}_val.jsonl
do_predict: true
output_dir: $WORK/$task-$ranks
per_device_train_batch_size: $batch
per_device_eval_batch_size: 2
max_steps: 6
learning_rate: 3.0e-3
save_strategy: 'no'
$extra
YAML
  if [[ $ranks == 1 ]]; then "$STRATA" train "$WORK/$task-$ranks.yaml" > "$WORK/$task-$ranks.log" 2>&1
  else mpirun --oversubscribe -np "$ranks" "$STRATA" train "$WORK/$task-$ranks.yaml" > "$WORK/$task-$ranks.log" 2>&1; fi \
    || { cat "$WORK/$task-$ranks.log"; exit 1; }
}

for task in ner qa; do
  run $task 1 6
  run $task 2 3
  run $task 3 2
done

python3 - "$WORK" <<'PY'
import json, sys, filecmp
work = sys.argv[1]
ok = True
def same_metrics(a, b, what):
    global ok
    for k in sorted(set(a) | set(b)):
        if k.endswith("_runtime") or k.endswith("_per_second"): continue
        x, y = a.get(k), b.get(k)
        close = x == y or (isinstance(x, float) and isinstance(y, float) and abs(x - y) <= 1e-6 * max(1.0, abs(x)))
        if not close:
            print(f"FAIL {what}: {k}: {x} vs {y}"); ok = False
for task, files in (("ner", ["predictions.txt"]), ("qa", ["eval_predictions.json", "predict_predictions.json",
                                                           "eval_nbest_predictions.json"])):
    one = json.load(open(f"{work}/{task}-1/eval_results.json"))
    for ranks in (2, 3):
        same_metrics(one, json.load(open(f"{work}/{task}-{ranks}/eval_results.json")), f"{task} {ranks} ranks eval")
        same_metrics(json.load(open(f"{work}/{task}-1/predict_results.json")),
                     json.load(open(f"{work}/{task}-{ranks}/predict_results.json")), f"{task} {ranks} ranks predict")
        for f in files:
            a, b = f"{work}/{task}-1/{f}", f"{work}/{task}-{ranks}/{f}"
            if f.endswith(".json") and "nbest" in f:  # logits may differ in the last bits; answers may not
                ja, jb = json.load(open(a)), json.load(open(b))
                same = all([c["text"] for c in ja[q]] == [c["text"] for c in jb[q]] for q in ja) and ja.keys() == jb.keys()
            else:
                same = filecmp.cmp(a, b, shallow=False)
            if not same:
                print(f"FAIL {task} {ranks} ranks: {f} differs"); ok = False
    print(task, "1 rank:", {k: v for k, v in one.items() if not k.endswith(("_runtime", "_per_second"))})
sys.exit(0 if ok else 1)
PY
echo "PASS: token classification and QA, 2 and 3 ranks = 1 rank"
