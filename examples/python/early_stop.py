"""A callback that stops training once the model is good enough (docs/python.md).

    .venv/bin/python examples/python/early_stop.py      # under a minute on 2 cores

The spam task of examples/python/spam.py, evaluated every 25 steps; the callback watches the
evaluations (with a metric computed in Python) and stops as soon as validation F1 reaches
0.95, instead of running the 5 epochs asked for. The best checkpoint is loaded at the end.
"""
import strata


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    predictions = logits.argmax(-1)
    tp = int(((predictions == 1) & (labels == 1)).sum())
    fp = int(((predictions == 1) & (labels == 0)).sum())
    fn = int(((predictions == 0) & (labels == 1)).sum())
    return {"spam_f1": 2 * tp / max(2 * tp + fp + fn, 1)}


class StopWhenGoodEnough(strata.TrainerCallback):
    def __init__(self, metric, target):
        self.metric, self.target = metric, target

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        if metrics[self.metric] >= self.target:
            if state.is_world_process_zero:
                print(f"{self.metric} = {metrics[self.metric]:.4f} >= {self.target} at step {state.global_step}: stopping")
            control.should_training_stop = True


def main():
    args = strata.TrainingArguments(
        output_dir="out/python-early-stop", overwrite_output_dir=True, num_train_epochs=5,
        per_device_train_batch_size=32, per_device_eval_batch_size=64, learning_rate=7e-4, warmup_ratio=0.1,
        eval_strategy="steps", eval_steps=25, save_strategy="steps", save_steps=25, save_total_limit=2,
        load_best_model_at_end=True, metric_for_best_model="spam_f1", logging_steps=25,
        max_seq_length=128, seed=42, num_threads=2)
    trainer = strata.Trainer(
        model="examples/spam/bert-tiny", tokenizer="examples/spam/bert-small", args=args,
        train_dataset="examples/spam/data/train.csv.gz", eval_dataset="examples/spam/data/validation.csv.gz",
        compute_metrics=compute_metrics, callbacks=[StopWhenGoodEnough("eval_spam_f1", 0.95)])
    out = trainer.train()
    print(f"stopped at step {out.global_step} of {5 * 148}; best eval_spam_f1 {trainer.state.best_metric:.4f}")


if __name__ == "__main__":
    main()
