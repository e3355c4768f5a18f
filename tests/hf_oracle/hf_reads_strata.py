"""HF reads what `strata train` writes: HF's own code (transformers v4.36.2, huggingface_hub
v0.19.4, the hf-oracle environment) loads strata's trainer_state.json, saved model and model
card, and HF's TrainingSummary, given the same log history and arguments, writes the same card.

    hf_reads_strata.py STRATA_BINARY SOURCE_DIR WORK_DIR

Two tiny GLUE-MRPC-style jobs: one trains a BERT from its config.json, the second fine-tunes
the first's output (so the card has a base model). Checked for each:
  - every trainer_state.json (checkpoints and output_dir) has exactly HF's TrainerState fields,
    TrainerState.load_from_json loads it, and save_to_json writes back the same text;
  - total_flos is HF's 6 x input tokens x num_parameters(exclude_embeddings=True) of the model
    BertForSequenceClassification.from_pretrained loads from the output;
  - huggingface_hub's ModelCard loads README.md: its metadata and model-index results;
  - the card equals HF's TrainingSummary.to_model_card() for the same inputs, but for the two
    sections strata writes its own way ("Training and evaluation data", "Framework versions").
The fine-tune runs again with max_shard_size 300KB: HF loads the shards and their index, and
finds the same weights as in the unsharded run's model.safetensors.
"""
import dataclasses
import json
import os
import re
import subprocess
import sys
import types

import yaml
from huggingface_hub import ModelCard
from transformers import BertForSequenceClassification
from transformers.modelcard import TrainingSummary, extract_hyperparameters_from_trainer, parse_log_history
from transformers.trainer_callback import TrainerState
from transformers.trainer_utils import SchedulerType
from transformers.training_args import ParallelMode

from oracle_checks import check, exit_status

strata, source, work = sys.argv[1:4]

os.makedirs(f"{work}/scratch", exist_ok=True)
json.dump({"model_type": "bert", "architectures": ["BertForSequenceClassification"], "vocab_size": 8000,
           "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64,
           "max_position_embeddings": 64, "pad_token_id": 0}, open(f"{work}/scratch/config.json", "w"))
words = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "home"]
for name, n in (("train", 24), ("dev", 6)):
    with open(f"{work}/{name}.csv", "w") as f:
        f.write("sentence1,sentence2,label\n")
        for i in range(n):
            s1 = " ".join(words[(i + k) % 10] for k in range(5))
            s2 = s1 if i % 2 else " ".join(words[(i * 3 + k) % 10] for k in range(4))
            f.write(f"{s1},{s2},{i % 2}\n")

ARGS = dict(task_name="mrpc", tokenizer_name=f"{source}/examples/spam/bert-small", train_file=f"{work}/train.csv",
            validation_file=f"{work}/dev.csv", do_train=True, do_eval=True, max_seq_length=32,
            per_device_train_batch_size=4, per_device_eval_batch_size=3, gradient_accumulation_steps=2,
            learning_rate=0.001, warmup_ratio=0.25, max_steps=4, evaluation_strategy="steps", eval_steps=2,
            save_steps=2, logging_steps=1, load_best_model_at_end=True, metric_for_best_model="accuracy",
            num_threads=1, report_to="none", push_to_hub=False, fp16=False)


def train(model, out, **extra):
    cfg = dict(ARGS, model_name_or_path=model, output_dir=out, **extra)
    path = f"{out}.json"
    json.dump(cfg, open(path, "w"), indent=1)
    r = subprocess.run([strata, "train", path], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"strata train {path} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


def check_trainer_states(out):
    fields = {f.name for f in dataclasses.fields(TrainerState)}
    for d in ("checkpoint-2", "checkpoint-4", ""):
        path = os.path.join(out, d, "trainer_state.json")
        text = open(path).read()
        raw = json.loads(text)
        state = TrainerState.load_from_json(path)
        check(set(raw) == fields, f"{path}: HF's TrainerState fields exactly (extra {sorted(set(raw) - fields)}, "
                                  f"missing {sorted(fields - set(raw))})")
        state.save_to_json(f"{work}/resaved.json")
        check(open(f"{work}/resaved.json").read() == text, f"{path}: TrainerState.save_to_json writes the same text")
        check(state.logging_steps == 1 and state.eval_steps == 2 and state.save_steps == 2 and
              state.train_batch_size == 4 and state.max_steps == 4 and state.is_world_process_zero,
              f"{path}: steps, batch size and process flags as the arguments set them")
        check(state.best_model_checkpoint.startswith(os.path.join(out, "checkpoint-")) and state.best_metric is not None,
              f"{path}: best_model_checkpoint {state.best_model_checkpoint}, best_metric {state.best_metric}")
    state = TrainerState.load_from_json(os.path.join(out, "trainer_state.json"))
    model = BertForSequenceClassification.from_pretrained(out)
    flos = 6 * state.num_input_tokens_seen * model.num_parameters(exclude_embeddings=True)
    check(state.num_input_tokens_seen > 0 and abs(state.total_flos - flos) <= 1e-9 * flos,
          f"{out}: total_flos {state.total_flos} = 6 x {state.num_input_tokens_seen} tokens x non-embedding "
          f"parameters ({flos})")


def split_card(text):
    m = re.match(r"---\n(.*?)---\n(.*)", text, re.S)
    return yaml.safe_load(m.group(1)), m.group(2)


def drop_strata_sections(body):
    body = re.sub(r"## Training and evaluation data\n\n.*?\n(?=## )", "", body, flags=re.S)
    return body[:body.index("### Framework versions")]


def check_card(out, base):
    text = open(os.path.join(out, "README.md")).read()
    meta, body = split_card(text)
    card = ModelCard.load(os.path.join(out, "README.md"))
    check(card.data.to_dict() == meta, f"{out}/README.md: huggingface_hub's ModelCard reads the metadata")
    eval_results = json.load(open(os.path.join(out, "eval_results.json")))
    got = {r.metric_type: r.metric_value for r in card.data.eval_results or []}
    check(got.get("accuracy") == eval_results["eval_accuracy"] and card.data.eval_results[0].dataset_name == "GLUE MRPC",
          f"{out}/README.md: model-index results {got} from the final evaluation")

    log_history = [json.loads(line) for line in open(os.path.join(out, "trainer_log.jsonl"))]
    _, eval_lines, hf_eval_results = parse_log_history(log_history)
    args = types.SimpleNamespace(
        learning_rate=ARGS["learning_rate"], train_batch_size=4, eval_batch_size=3, seed=42,
        parallel_mode=ParallelMode.NOT_DISTRIBUTED, world_size=1, gradient_accumulation_steps=2, adafactor=False,
        adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8, lr_scheduler_type=SchedulerType("linear"),
        optim="adamw_torch", optim_args=None, warmup_steps=ARGS["warmup_ratio"], max_steps=4, num_train_epochs=3.0,
        fp16=False, label_smoothing_factor=0.0)
    summary = TrainingSummary(model_name=os.path.basename(out), finetuned_from=base, tasks="text-classification",
                              dataset="GLUE MRPC", dataset_tags="glue", dataset_args="mrpc",
                              tags=["generated_from_trainer"], eval_results=hf_eval_results, eval_lines=eval_lines,
                              hyperparameters=extract_hyperparameters_from_trainer(types.SimpleNamespace(args=args)))
    hf_meta, hf_body = split_card(summary.to_model_card())
    check(meta == hf_meta, f"{out}/README.md: metadata equals HF's TrainingSummary's")
    if meta != hf_meta:
        print(f"---- strata metadata\n{meta}\n---- HF metadata\n{hf_meta}")
    same = drop_strata_sections(body) == drop_strata_sections(hf_body)
    check(same, f"{out}/README.md: text equals HF's TrainingSummary.to_model_card() (but for strata's two sections)")
    if not same:
        print("---- strata\n" + body + "---- HF\n" + hf_body)


train(f"{work}/scratch", f"{work}/from_scratch")
train(f"{work}/from_scratch", f"{work}/fine_tuned")
for out, base in ((f"{work}/from_scratch", None), (f"{work}/fine_tuned", f"{work}/from_scratch")):
    check_trainer_states(out)
    check_card(out, base)

train(f"{work}/from_scratch", f"{work}/sharded", max_shard_size="300KB")
shards = sorted(f for f in os.listdir(f"{work}/sharded") if re.fullmatch(r"model-\d{5}-of-\d{5}\.safetensors", f))
index = json.load(open(f"{work}/sharded/model.safetensors.index.json"))
check(len(shards) > 1 and not os.path.exists(f"{work}/sharded/model.safetensors") and
      sorted(set(index["weight_map"].values())) == shards,
      f"sharded save: {len(shards)} shards named as HF names them, every one in the index")
whole = BertForSequenceClassification.from_pretrained(f"{work}/fine_tuned").state_dict()
sharded = BertForSequenceClassification.from_pretrained(f"{work}/sharded").state_dict()
check(whole.keys() == sharded.keys() and all(bool((whole[k] == sharded[k]).all()) for k in whole),
      "HF loads the sharded save with the same weights as the unsharded one")
sys.exit(exit_status())
