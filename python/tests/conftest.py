"""Fixtures of the Python package's tests: a small slice of the spam task (64 training and 32
validation e-mails, texts cut to 400 characters, 32 tokens), a 2-layer BERT with hidden 128
made from examples/spam/bert-tiny's config, so a run takes a second or two on 2 cores.

The tests run the module of the build tree (PYTHONPATH=build/python) and its `strata`
binary (STRATA_CLI), as CTest sets them (CMakeLists.txt)."""
import csv
import gzip
import os
import subprocess

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPAM = os.path.join(REPO, "examples", "spam")


def cli_binary():
    return os.environ.get("STRATA_CLI", os.path.join(REPO, "build", "strata"))


def read_rows(split, n):
    with gzip.open(os.path.join(SPAM, "data", f"{split}.csv.gz"), "rt", newline="") as f:
        rows = []
        for row in csv.DictReader(f):
            rows.append({"text": row["text"][:400], "label": int(row["label"])})
            if len(rows) == n:
                return rows
    return rows


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["text", "label"])
        w.writeheader()
        w.writerows(rows)
    return str(path)


@pytest.fixture(scope="session")
def spam(tmp_path_factory):
    """Rows and CSV files of the small spam task."""
    d = tmp_path_factory.mktemp("spam")
    train, validation = read_rows("train", 64), read_rows("validation", 32)
    return {"train_rows": train, "validation_rows": validation,
            "train_file": write_csv(d / "train.csv", train), "validation_file": write_csv(d / "validation.csv", validation)}


# The options of every small run: the model, the tokenizer and a short schedule.
BASE = {
    "model_name_or_path": os.path.join(SPAM, "bert-tiny"),
    "tokenizer_name": os.path.join(SPAM, "bert-small"),
    "max_seq_length": 32,
    "per_device_train_batch_size": 8,
    "per_device_eval_batch_size": 16,
    "num_train_epochs": 2,
    "learning_rate": 5e-4,
    "seed": 42,
    "num_threads": 2,
    "disable_tqdm": True,
    "report_to": "none",
}


def trainer_kwargs(output_dir, **overrides):
    """TrainingArguments keywords for a small run (model and tokenizer go to the Trainer)."""
    options = {k: v for k, v in BASE.items() if k not in ("model_name_or_path", "tokenizer_name")}
    options.update(overrides)
    return dict(output_dir=str(output_dir), **options)


def run_cli(config_path, *extra, env=None):
    out = subprocess.run([cli_binary(), "train", str(config_path), *extra], capture_output=True, text=True,
                         env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


def write_yaml(path, options):
    """A strata config (JSON is YAML)."""
    import json
    with open(path, "w") as f:
        json.dump(options, f, indent=1)
    return str(path)
