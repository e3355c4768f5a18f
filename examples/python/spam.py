"""The README's spam job as an HF-style training script (docs/python.md).

    .venv/bin/python examples/python/spam.py            # about two minutes on 2 cores

A 2-layer BERT initialised from examples/spam/bert-tiny/config.json learns to tell spam
from ham; compute_metrics is plain numpy, as in HF's examples; the best checkpoint by F1 is
kept, evaluated and used to predict the test set. Under `strata launch -n 2 -- python
examples/python/spam.py` each process trains its data-parallel rank.
"""
import argparse

import numpy as np

import strata


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    predictions = logits.argmax(-1)
    tp = int(((predictions == 1) & (labels == 1)).sum())
    precision = tp / max(int((predictions == 1).sum()), 1)
    recall = tp / max(int((labels == 1).sum()), 1)
    return {"accuracy": float((predictions == labels).mean()),
            "spam_f1": 2 * precision * recall / max(precision + recall, 1e-12)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output_dir", default="out/python-spam")
    parser.add_argument("--epochs", type=float, default=5)
    cli = parser.parse_args()
    args = strata.TrainingArguments(
        output_dir=cli.output_dir, overwrite_output_dir=True,
        num_train_epochs=cli.epochs, per_device_train_batch_size=32, per_device_eval_batch_size=64,
        learning_rate=7e-4, weight_decay=0.01, warmup_ratio=0.1, max_grad_norm=1.0,
        eval_strategy="epoch", save_strategy="epoch", save_total_limit=2,
        load_best_model_at_end=True, metric_for_best_model="spam_f1",
        logging_steps=20, seed=42, max_seq_length=128, num_threads=2, dataloader_num_workers=1)
    trainer = strata.Trainer(
        model="examples/spam/bert-tiny", tokenizer="examples/spam/bert-small", args=args,
        train_dataset="examples/spam/data/train.csv.gz", eval_dataset="examples/spam/data/validation.csv.gz",
        compute_metrics=compute_metrics)
    result = trainer.train()
    trainer.save_model()
    trainer.log_metrics("train", result.metrics)
    trainer.save_metrics("train", result.metrics)
    metrics = trainer.evaluate()
    trainer.log_metrics("eval", metrics)
    trainer.save_metrics("eval", metrics)
    test = trainer.predict("examples/spam/data/test.csv.gz")
    trainer.log_metrics("test", test.metrics)
    trainer.save_metrics("test", test.metrics)
    if trainer.is_world_process_zero():
        spam = np.exp(test.predictions[:, 1]) / np.exp(test.predictions).sum(-1)
        print(f"test: {len(spam)} e-mails, {int((spam > 0.5).sum())} predicted spam")


if __name__ == "__main__":
    main()
