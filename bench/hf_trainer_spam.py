"""hf_trainer_spam.py -- the real Hugging Face Trainer on strata's spam fine-tuning task (issue 7).

Trains BertForSequenceClassification from examples/spam/bert-tiny/config.json (random init,
seed 42) with transformers.Trainer + TrainingArguments on examples/spam/data, as strata's
examples/spam/demo.yaml does (the "B6" configuration by default: 6 epochs at peak LR 5e-4), on
CPU, then evaluates the validation set and predicts the test set. Run it through
bench/hf_trainer_peer.sh, which runs it with the benchmark environment's Python (transformers
5.24.0, accelerate 1.15.0, torch 2.15.0 from PyPI) under /usr/bin/time -v.

    $(scripts/bench_python.sh) bench/hf_trainer_spam.py --out OUTDIR [--epochs 6] [--lr 5e-4] [--max-steps N]
        [--threads 2] [--workers 1] [--save-strategy epoch|no] [--padding longest|max_length]

Writes OUTDIR/hf_trainer_spam.json (see the end of main() for the fields) and the Trainer's
output_dir OUTDIR/run (checkpoints with --save-strategy epoch; the final model and
predict_results.txt, as run_glue.py and strata write them).

What matches strata's run (docs/training.md, examples/spam/demo.yaml):
- tokenizer: transformers' BertTokenizer (in transformers 5 the one backed by the Rust
  `tokenizers` library) on examples/spam/bert-small's vocab.txt, lower-cased per its
  tokenizer_config.json. [CLS] text [SEP], truncated to 128 tokens, token_type_ids 0.
  Tokenization runs once, up front, and is timed on its own (tokenize_s).
- padding: per batch to the batch's longest row (DataCollatorWithPadding, the Trainer's default
  collator when given a tokenizer), as strata does with pad_to_max_length false (its default);
  --padding max_length pads every row to 128 instead.
- labels: the CSV's label column as an int; 1 = spam (examples/spam/data/SOURCE.md). F1 is the
  binary F1 of label 1 (precision/recall of class 1), as strata's `f1` for two labels; accuracy
  likewise. Computed here with numpy (no sklearn / evaluate needed), same formula.
- Trainer arguments: batch 32 train / 64 eval, AdamW (torch), weight decay 0.01, warmup 0.1 of
  the steps (transformers 5's warmup_steps below 1), linear schedule, max_grad_norm 1.0, evaluation every epoch, logging every 20 steps,
  seed 42, dataloader_num_workers 1, save every epoch keeping 2, best model by f1 loaded at the
  end (--save-strategy no: no checkpoints, no best-model reload), report_to none, use_cpu.
- time to validation F1 >= 0.95 is measured from the process's start (psutil's create_time,
  so interpreter start-up, the torch/transformers imports and tokenization count), as the
  comparison script measures strata's from just before it starts strata.

"""
import argparse
import csv
import gzip
import json
import os
import platform
import resource
import sys
import time

import psutil

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "hf"))
import hf_common  # noqa: E402

PROC_START = psutil.Process().create_time()  # wall clock (epoch seconds) of the process's start
T_SCRIPT = time.time()


def since_start():
    return time.time() - PROC_START


def read_csv(path):
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    return [r["text"] for r in rows], [int(r["label"]) for r in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--epochs", type=float, default=6)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--max-steps", type=int, default=-1, help="smoke tests: stop after N steps")
    ap.add_argument("--eval-steps", type=int, default=0,
                    help="evaluate every N steps instead of every epoch (smoke tests)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workers", type=int, default=1, help="dataloader_num_workers (strata's demo.yaml: 1)")
    ap.add_argument("--save-strategy", choices=["epoch", "no"], default="epoch")
    ap.add_argument("--padding", choices=["longest", "max_length"], default="longest")
    ap.add_argument("--max-seq-length", type=int, default=128)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    repo = os.path.abspath(a.repo)
    spam = os.path.join(repo, "examples", "spam")

    t_import = time.time()
    import numpy as np
    import torch

    torch.set_num_threads(a.threads)

    import accelerate
    import transformers
    from transformers import (BertConfig, BertForSequenceClassification, BertTokenizer,
                              DataCollatorWithPadding, Trainer, TrainerCallback, TrainingArguments)
    transformers.logging.set_verbosity_warning()
    import_s = time.time() - t_import

    # ---- data and tokenization (timed on their own)
    t0 = time.time()
    tok = BertTokenizer.from_pretrained(os.path.join(spam, "bert-small"))
    splits = {}
    for name in ("train", "validation", "test"):
        texts, labels = read_csv(os.path.join(spam, "data", name + ".csv.gz"))
        enc = tok(texts, truncation=True, max_length=a.max_seq_length,
                  padding="max_length" if a.padding == "max_length" else False)
        splits[name] = [{"input_ids": enc["input_ids"][i], "token_type_ids": enc["token_type_ids"][i],
                         "attention_mask": enc["attention_mask"][i], "labels": labels[i]}
                        for i in range(len(texts))]
    tokenize_s = time.time() - t0
    n_tokens = {k: sum(len(r["input_ids"]) for r in v) for k, v in splits.items()}
    n_trunc = {k: sum(1 for r in v if len(r["input_ids"]) >= a.max_seq_length) for k, v in splits.items()}
    print(f"tokenized {sum(len(v) for v in splits.values())} texts in {tokenize_s:.1f} s "
          f"({type(tok).__name__}, lower-case {tok.do_lower_case}); rows at {a.max_seq_length} tokens: {n_trunc}",
          flush=True)

    train_ds, val_ds, test_ds = (hf_common.rows_dataset(splits[k]) for k in ("train", "validation", "test"))

    # ---- model: random init from config.json under the seed (as Trainer's model_init would)
    transformers.set_seed(a.seed)
    config = BertConfig.from_pretrained(os.path.join(spam, "bert-tiny"), num_labels=2,
                                        id2label={0: "0", 1: "1"}, label2id={"0": 0, "1": 1})
    model = BertForSequenceClassification(config)
    n_params = sum(p.numel() for p in model.parameters())

    def compute_metrics(p):
        logits = p.predictions[0] if isinstance(p.predictions, tuple) else p.predictions
        pred = np.argmax(logits, axis=-1)
        y = p.label_ids
        tp = int(np.sum((pred == 1) & (y == 1)))
        fp = int(np.sum((pred == 1) & (y == 0)))
        fn = int(np.sum((pred == 0) & (y == 1)))
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        return {"accuracy": float(np.mean(pred == y)), "precision": prec, "recall": rec, "f1": f1}

    evals = []
    phase = {"training": False}

    class EvalClock(TrainerCallback):
        """Wall time since the process started at every evaluation during training."""

        def on_evaluate(self, args, state, control, metrics=None, **kw):
            if not phase["training"] or metrics is None or "eval_f1" not in metrics:
                return
            evals.append({"epoch": metrics.get("epoch", state.epoch), "step": state.global_step,
                          "f1": metrics["eval_f1"], "accuracy": metrics.get("eval_accuracy"),
                          "loss": metrics.get("eval_loss"), "eval_runtime": metrics.get("eval_runtime"),
                          "eval_samples_per_second": metrics.get("eval_samples_per_second"),
                          "elapsed_s_since_start": since_start()})
            print(f"[eval] epoch {evals[-1]['epoch']:.2f} f1 {metrics['eval_f1']:.4f} "
                  f"eval {metrics.get('eval_runtime')} s, {evals[-1]['elapsed_s_since_start']:.1f} s since start",
                  flush=True)

    by_steps = a.eval_steps > 0
    save = a.save_strategy
    if save != "no" and by_steps:
        save = "steps"
    args = TrainingArguments(
        output_dir=os.path.join(out, "run"),
        do_train=True, do_eval=True, do_predict=True,
        num_train_epochs=a.epochs, max_steps=a.max_steps,
        per_device_train_batch_size=32, per_device_eval_batch_size=64,
        learning_rate=a.lr, weight_decay=0.01, warmup_steps=0.1, lr_scheduler_type="linear",
        max_grad_norm=1.0,
        eval_strategy="steps" if by_steps else "epoch", eval_steps=a.eval_steps or None,
        save_strategy=save, save_steps=a.eval_steps or 500, save_total_limit=2,
        load_best_model_at_end=save != "no", metric_for_best_model="f1",
        logging_strategy="steps", logging_steps=20,
        seed=a.seed, dataloader_num_workers=a.workers,
        report_to=[], use_cpu=True, disable_tqdm=True,
    )
    collator = DataCollatorWithPadding(tok)  # padding="longest"; a no-op beyond stacking with max_length rows
    trainer = Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=val_ds, processing_class=tok,
                      data_collator=collator, compute_metrics=compute_metrics, callbacks=[EvalClock()])

    print(f"torch {torch.__version__} ({torch.get_num_threads()} threads), transformers {transformers.__version__}, "
          f"accelerate {accelerate.__version__}; {n_params} parameters; device {args.device}; "
          f"{since_start():.1f} s since start", flush=True)
    t_start_train = since_start()
    phase["training"] = True
    train_out = trainer.train()
    phase["training"] = False
    t_end_train = since_start()
    trainer.save_model()  # the final (best) model to output_dir, as run_glue.py does; strata saves it too
    ev = trainer.evaluate()
    pred = trainer.predict(test_ds, metric_key_prefix="test")
    logits = pred.predictions[0] if isinstance(pred.predictions, tuple) else pred.predictions
    with open(os.path.join(args.output_dir, "predict_results.txt"), "w") as f:  # run_glue's format, as strata's
        f.write("index\tprediction\n")
        for i, k in enumerate(np.argmax(logits, axis=-1)):
            f.write(f"{i}\t{k}\n")

    first = next((e for e in evals if e["f1"] >= 0.95), None)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    ru_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    tm = train_out.metrics
    result = {
        "peer": "huggingface-trainer",
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "accelerate": accelerate.__version__,
                     "numpy": np.__version__},
        "blas_env": os.environ.get("LD_LIBRARY_PATH", ""),
        "threads": torch.get_num_threads(),
        "dataloader_num_workers": a.workers,
        "config": {"model": "examples/spam/bert-tiny/config.json (random init)", "parameters": n_params,
                   "max_seq_length": a.max_seq_length, "padding": a.padding, "train_batch": 32, "eval_batch": 64,
                   "epochs": a.epochs, "max_steps": a.max_steps, "learning_rate": a.lr, "weight_decay": 0.01,
                   "warmup_ratio": 0.1, "max_grad_norm": 1.0, "seed": a.seed, "save_strategy": save,
                   "load_best_model_at_end": save != "no",
                   "evaluation": f"every {a.eval_steps} steps" if by_steps else "every epoch"},
        "examples": {k: len(v) for k, v in splits.items()},
        "tokens": n_tokens,
        "rows_truncated": n_trunc,
        "script_start_s_since_start": T_SCRIPT - PROC_START,
        "import_s": import_s,
        "tokenize_s": tokenize_s,
        "train_runtime": tm["train_runtime"],
        "train_samples_per_second": tm["train_samples_per_second"],
        "train_steps_per_second": tm["train_steps_per_second"],
        "train_loss": tm["train_loss"],
        "global_step": train_out.global_step,
        "train_start_s_since_start": t_start_train,
        "train_end_s_since_start": t_end_train,
        "evals": evals,
        "best_eval_f1": max((e["f1"] for e in evals), default=None),
        "time_to_f1_095": first["elapsed_s_since_start"] if first else None,
        "time_to_f1_095_epoch": first["epoch"] if first else None,
        "final_eval": {"f1": ev["eval_f1"], "accuracy": ev["eval_accuracy"], "loss": ev["eval_loss"],
                       "eval_runtime": ev["eval_runtime"], "eval_samples_per_second": ev["eval_samples_per_second"],
                       "examples": len(val_ds)},
        "test": {"f1": pred.metrics["test_f1"], "accuracy": pred.metrics["test_accuracy"],
                 "runtime": pred.metrics["test_runtime"],
                 "samples_per_second": pred.metrics["test_samples_per_second"]},
        "peak_rss_mib": ru.ru_maxrss / 1024,
        "peak_rss_children_mib": ru_children.ru_maxrss / 1024,
        "wall_s_since_start": since_start(),
    }
    with open(os.path.join(out, "hf_trainer_spam.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(f"train {result['train_runtime']:.1f} s, {result['train_samples_per_second']:.1f} samples/s; "
          f"eval {ev['eval_runtime']:.3f} s ({ev['eval_samples_per_second']:.1f} samples/s), F1 {ev['eval_f1']:.4f}; "
          f"test F1 {result['test']['f1']:.4f}; first F1 >= 0.95 after "
          f"{'%.1f s' % result['time_to_f1_095'] if first else '(never)'}; tokenize {tokenize_s:.1f} s; "
          f"peak RSS {result['peak_rss_mib']:.0f} MiB; wall {result['wall_s_since_start']:.1f} s", flush=True)


if __name__ == "__main__":
    main()
