"""hf_trainer_finetune.py -- the real Hugging Face Trainer fine-tuning a pretrained checkpoint on
one of strata's example tasks, as strata's examples/pretrained/TASK.yaml does (issue 30).

    $(scripts/bench_python.sh) bench/hf_trainer_finetune.py --task spam|supersense|qa|pos \
        --model models/all-MiniLM-L6-v2 --job examples/pretrained/TASK.yaml --seed 1 --out OUTDIR

Run it through bench/finetune_vs_hf_trainer.sh, which runs strata on the same job and seeds
and writes the table. The settings (data files, max_seq_length, doc_stride, batch sizes,
epochs, learning rate, warmup, weight decay, schedule, clipping, max_train_samples) are read
from strata's job file, so both sides train the same job; only the seed comes from --seed.

What each side does, as HF's example scripts do it:
- spam, supersense (run_glue.py): AutoModelForSequenceClassification on the `text` column;
  labels as strata infers them (integers as they are; names in sorted order). Metrics:
  accuracy, and F1 as strata's `f1`: binary F1 of label 1 for two labels, macro F1 otherwise.
- qa (run_qa.py, SQuAD v1): (question.lstrip(), context) cut into windows of max_seq_length
  tokens doc_stride apart (truncation only_second, overflowing tokens); a window's answer is the
  first answer's character span mapped to tokens, or both positions at [CLS] when it is not
  wholly inside the window. Post-processing: per example, over its windows, the n_best_size
  best starts and ends whose tokens are in the context, end >= start, at most
  max_answer_length tokens; the best start + end logit wins. SQuAD exact_match and f1.
- pos (run_ner.py): words split into sub-tokens, the first carrying the word's tag, the others
  -100 (label_all_tokens false); tags in sorted order. Metric: accuracy over tagged tokens.
Padding is per batch to the batch's longest row on both sides (strata's pad_to_max_length
false). The checkpoint's head is new on both sides (all-MiniLM-L6-v2 is a BertModel).
Writes OUTDIR/result.json: versions, the settings, train_runtime, train_samples_per_second,
train_loss, the validation and test metrics, peak RSS.
"""
import argparse
import collections
import csv
import gzip
import json
import os
import platform
import re
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "hf"))
import hf_common  # noqa: E402
from squad_metric import squad_v1  # noqa: E402


def read_job(path):
    """strata's job YAML: flat `key: value` lines (the subset the example jobs use)."""
    with open(path) as f:
        return parse_job_lines(f, path)


def parse_job_lines(lines, source):
    job = {}
    for n, line in enumerate(lines, 1):
        line = "" if line.lstrip().startswith("#") else line.split(" #")[0].rstrip()
        if not line.strip():
            continue
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*):\s*(.*)$", line)
        if not m:
            sys.exit(f"{source}:{n}: expected 'key: value', got {line!r}")
        k, v = m.group(1), m.group(2).strip().strip('"')
        if v in ("true", "false"):
            job[k] = v == "true"
            continue
        for convert in (int, float, str):
            try:
                job[k] = convert(v)
                break
            except ValueError:
                pass
    return job


def read_rows(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        if ".csv" in path:
            return list(csv.DictReader(f))
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", required=True, choices=("spam", "supersense", "qa", "pos"))
    ap.add_argument("--job", required=True, help="strata's job YAML: the settings both sides use")
    ap.add_argument("--model", help="the checkpoint (default: the job's model_name_or_path)")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a setting of the job, as strata train's --set does")
    a = ap.parse_args()
    job = read_job(a.job)
    for kv in a.set:
        k, eq, v = kv.partition("=")
        if not eq:
            sys.exit(f"--set {kv!r}: expected KEY=VALUE")
        job.update(parse_job_lines([f"{k}: {v}"], "--set"))
    model_dir = a.model or job["model_name_or_path"]
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)

    import numpy as np
    import torch

    torch.set_num_threads(a.threads)
    import accelerate
    import transformers
    from transformers import (AutoModelForQuestionAnswering, AutoModelForSequenceClassification,
                              AutoModelForTokenClassification, AutoTokenizer, DataCollatorForTokenClassification,
                              DataCollatorWithPadding, Trainer, TrainingArguments)
    transformers.logging.set_verbosity_warning()

    # before the model is made, as run_glue / run_qa / run_ner do: the seed draws the new head's
    # initialisation too (the Trainer seeds again for shuffling and dropout)
    transformers.set_seed(a.seed)
    tok = AutoTokenizer.from_pretrained(model_dir)
    max_len = int(job.get("max_seq_length", 128))
    splits = {"train": job["train_file"], "validation": job["validation_file"], "test": job["test_file"]}
    raw = {k: read_rows(v) for k, v in splits.items()}
    full_train = raw["train"]  # the label set comes from the whole file, as in strata and HF's scripts
    n_train = int(job.get("max_train_samples", -1))
    for split, key in (("train", "max_train_samples"), ("validation", "max_eval_samples"),
                       ("test", "max_predict_samples")):  # the first N examples, as strata and HF's scripts
        if int(job.get(key, -1)) > 0:
            raw[split] = raw[split][:int(job[key])]

    Rows = hf_common.rows_dataset

    def labelled(auto_class, id2label, collator_class, encode):
        """The checkpoint with a new head for id2label's classes, the encoded splits, the collator."""
        model = auto_class.from_pretrained(model_dir, num_labels=len(id2label), id2label=id2label,
                                           label2id={v: k for k, v in id2label.items()})
        return model, {k: Rows(encode(v)) for k, v in raw.items()}, collator_class(tok)

    def inputs(enc, i, **more):  # row i of a batch encoding as one feature
        return {"input_ids": enc["input_ids"][i], "token_type_ids": enc["token_type_ids"][i],
                "attention_mask": enc["attention_mask"][i], **more}

    t_tok = time.time()
    if a.task in ("spam", "supersense"):
        text_col, label_col = job.get("text_column", "text"), job.get("label_column", "label")
        labels_raw = [r[label_col] for r in full_train]
        if all(re.fullmatch(r"-?\d+", x) for x in labels_raw):  # integers are the class ids themselves
            id2label = {i: str(i) for i in range(max(int(x) for x in labels_raw) + 1)}
        else:
            id2label = dict(enumerate(sorted(set(labels_raw))))
        label2id = {v: k for k, v in id2label.items()}

        def encode(rows):
            enc = tok([r[text_col] for r in rows], truncation=True, max_length=max_len)
            return [inputs(enc, i, labels=label2id[r[label_col]]) for i, r in enumerate(rows)]

        model, data, collator = labelled(AutoModelForSequenceClassification, id2label, DataCollatorWithPadding, encode)

        def compute_metrics(p):
            pred = np.argmax(p.predictions, axis=-1)
            y = p.label_ids
            classes = [1] if len(id2label) == 2 else list(range(len(id2label)))
            f1s = []
            for c in classes:
                tp = np.sum((pred == c) & (y == c))
                fp = np.sum((pred == c) & (y != c))
                fn = np.sum((pred != c) & (y == c))
                f1s.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
            return {"accuracy": float(np.mean(pred == y)), "f1": float(np.mean(f1s))}

        evaluate = None
    elif a.task == "pos":
        tags = sorted({t for r in full_train for t in r["tags"]})
        id2label = dict(enumerate(tags))
        label2id = {v: k for k, v in id2label.items()}

        def encode(rows):
            enc = tok([r["tokens"] for r in rows], is_split_into_words=True, truncation=True, max_length=max_len)
            feats = []
            for i, r in enumerate(rows):
                labels, prev = [], None
                for w in enc.word_ids(i):
                    labels.append(-100 if w is None or w == prev else label2id[r["tags"][w]])
                    prev = w
                feats.append(inputs(enc, i, labels=labels))
            return feats

        model, data, collator = labelled(AutoModelForTokenClassification, id2label,
                                         DataCollatorForTokenClassification, encode)

        def compute_metrics(p):
            pred = np.argmax(p.predictions, axis=-1)
            keep = p.label_ids != -100
            return {"accuracy": float(np.mean(pred[keep] == p.label_ids[keep]))}

        evaluate = None
    else:  # qa
        stride = int(job.get("doc_stride", 128))
        n_best = int(job.get("n_best_size", 20))
        max_answer = int(job.get("max_answer_length", 30))
        cls_id = tok.cls_token_id

        def windows(rows):
            return tok([r["question"].lstrip() for r in rows], [r["context"] for r in rows],
                       truncation="only_second", max_length=max_len, stride=stride,
                       return_overflowing_tokens=True, return_offsets_mapping=True,
                       padding="max_length")  # strata pads QA windows to max_seq_length, as run_qa does

        def train_features(rows):
            enc = windows(rows)
            feats = []
            for i, ids in enumerate(enc["input_ids"]):
                r = rows[enc["overflow_to_sample_mapping"][i]]
                cls = ids.index(cls_id) if cls_id in ids else 0
                seq = enc.sequence_ids(i)
                offsets = enc["offset_mapping"][i]
                start = end = cls
                if r["answers"]["answer_start"]:
                    a0 = r["answers"]["answer_start"][0]
                    a1 = a0 + len(r["answers"]["text"][0])
                    ctx = [t for t, s in enumerate(seq) if s == 1]
                    if offsets[ctx[0]][0] <= a0 and offsets[ctx[-1]][1] >= a1:
                        # the last token starting at or before the answer, the first ending at or after it
                        start = [t for t in ctx if offsets[t][0] <= a0][-1]
                        end = next(t for t in ctx if offsets[t][1] >= a1)
                feats.append(inputs(enc, i, start_positions=start, end_positions=end))
            # run_qa keeps the first max_train_samples windows of the first max_train_samples examples
            return feats[:n_train] if n_train > 0 else feats

        def eval_features(rows):
            enc = windows(rows)
            feats, meta = [], []
            for i in range(len(enc["input_ids"])):
                seq = enc.sequence_ids(i)
                feats.append(inputs(enc, i))
                meta.append((enc["overflow_to_sample_mapping"][i],
                             [o if s == 1 else None for o, s in zip(enc["offset_mapping"][i], seq)]))
            return feats, meta

        train_rows = train_features(raw["train"])
        evals = {k: eval_features(raw[k]) for k in ("validation", "test")}
        data = {"train": Rows(train_rows), "validation": Rows(evals["validation"][0]), "test": Rows(evals["test"][0])}
        model = AutoModelForQuestionAnswering.from_pretrained(model_dir)
        collator = DataCollatorWithPadding(tok)
        compute_metrics = None

        def evaluate(trainer, split):
            t0 = time.time()
            pred = trainer.predict(data[split], metric_key_prefix=split)
            starts, ends = pred.predictions
            by_example = collections.defaultdict(list)
            for f, (ex, _) in enumerate(evals[split][1]):
                by_example[ex].append(f)
            preds = {}
            for ex, r in enumerate(raw[split]):
                best, best_text = None, ""
                for f in by_example[ex]:
                    offsets = evals[split][1][f][1]
                    n = len(offsets)
                    s_log, e_log = starts[f][:n], ends[f][:n]
                    best_ends = np.argsort(e_log)[::-1][:n_best]
                    for s in np.argsort(s_log)[::-1][:n_best]:
                        for e in best_ends:
                            if offsets[s] is None or offsets[e] is None or e < s or e - s + 1 > max_answer:
                                continue
                            score = s_log[s] + e_log[e]
                            if best is None or score > best:
                                best, best_text = score, r["context"][offsets[s][0]:offsets[e][1]]
                preds[r["id"]] = best_text
            scores = squad_v1(preds, [{"id": r["id"], "answers": r["answers"]["text"]} for r in raw[split]])
            return {**scores, "examples": len(raw[split]), "features": len(data[split]), "runtime": time.time() - t0}
    tokenize_s = time.time() - t_tok

    args = TrainingArguments(
        output_dir=os.path.join(out, "run"),
        num_train_epochs=float(job.get("num_train_epochs", 3)), max_steps=int(job.get("max_steps", -1)),
        per_device_train_batch_size=int(job["per_device_train_batch_size"]),
        per_device_eval_batch_size=int(job["per_device_eval_batch_size"]),
        learning_rate=float(job["learning_rate"]), weight_decay=float(job.get("weight_decay", 0)),
        warmup_steps=float(job.get("warmup_ratio", job.get("warmup_steps", 0))),
        lr_scheduler_type=job.get("lr_scheduler_type", "linear"), max_grad_norm=float(job.get("max_grad_norm", 1)),
        eval_strategy="no", save_strategy="no", logging_strategy="steps",
        logging_steps=int(job.get("logging_steps", 50)), seed=a.seed,
        dataloader_num_workers=int(job.get("dataloader_num_workers", 0)),
        report_to=[], use_cpu=True, disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=data["train"], processing_class=tok,
                      data_collator=collator, compute_metrics=compute_metrics)
    print(f"{a.task}: torch {torch.__version__} ({torch.get_num_threads()} threads), transformers "
          f"{transformers.__version__}; {sum(p.numel() for p in model.parameters())} parameters; "
          f"{len(data['train'])} training rows, seed {a.seed}", flush=True)
    train_out = trainer.train()
    if evaluate:
        results = {k: evaluate(trainer, k) for k in ("validation", "test")}
    else:
        results = {}
        for k in ("validation", "test"):
            m = trainer.evaluate(data[k], metric_key_prefix=k)
            results[k] = {key[len(k) + 1:]: v for key, v in m.items() if key.startswith(k + "_")}
    tm = train_out.metrics
    result = {
        "peer": "huggingface-trainer", "task": a.task, "job": a.job, "model": model_dir, "seed": a.seed,
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "accelerate": accelerate.__version__},
        "threads": torch.get_num_threads(), "train_rows": len(data["train"]), "tokenize_s": tokenize_s,
        "train_runtime": tm["train_runtime"], "train_samples_per_second": tm["train_samples_per_second"],
        "train_loss": tm["train_loss"], "global_step": train_out.global_step,
        "validation": results["validation"], "test": results["test"],
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: result[k] for k in ("task", "seed", "train_runtime", "train_samples_per_second",
                                             "validation", "test")}), flush=True)


if __name__ == "__main__":
    main()
