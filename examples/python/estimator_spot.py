"""The README's spam job as a SageMaker-style training job on spot capacity, from Python.

    .venv/bin/python examples/python/estimator_spot.py      # from the repository root; about 2 minutes on 2 cores

This file plays both parts of a SageMaker job. Run by you, it describes the job with
strata.Estimator (SageMaker's argument names) and calls fit(), which hands it to strata's job
runner and prints the runner's output. The runner then runs this same file as the job's
entry point, as SageMaker's training toolkit runs a script: the hyperparameters are its
arguments, the data channels are SM_CHANNEL_TRAIN / _VALIDATION / _TEST, checkpoints go to
SM_CHECKPOINT_DIR and the model to SM_MODEL_DIR. Spot capacity is reclaimed twice (simulated,
after steps 150 and 400 of 740); each time the Trainer finishes its step, writes a checkpoint
and ends the script with strata.TrainingInterrupted (exit status 75), and the next attempt
resumes from the checkpoint named by STRATA_RESUME_FROM_CHECKPOINT. docs/jobs.md, "From
Python: strata.Estimator".
"""
import argparse
import json
import os

import strata

DATA = "examples/spam/data"


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    predictions = logits.argmax(-1)
    tp = int(((predictions == 1) & (labels == 1)).sum())
    precision = tp / max(int((predictions == 1).sum()), 1)
    recall = tp / max(int((labels == 1).sum()), 1)
    return {"accuracy": float((predictions == labels).mean()),
            "spam_f1": 2 * precision * recall / max(precision + recall, 1e-12)}


def train():
    """The job's side: one rank's training, from what the runner gives the script."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=float, default=5)
    parser.add_argument("--learning_rate", type=float, default=7e-4)
    parser.add_argument("--model", default="examples/spam/bert-tiny")
    parser.add_argument("--tokenizer", default="examples/spam/bert-small")
    hp = parser.parse_args()
    args = strata.TrainingArguments(
        output_dir=os.environ["SM_CHECKPOINT_DIR"], num_train_epochs=hp.epochs, learning_rate=hp.learning_rate,
        per_device_train_batch_size=32, per_device_eval_batch_size=64, weight_decay=0.01, warmup_ratio=0.1,
        max_grad_norm=1.0, eval_strategy="epoch", save_strategy="epoch", save_total_limit=2,
        load_best_model_at_end=True, metric_for_best_model="spam_f1", logging_steps=50, seed=42,
        max_seq_length=128, num_threads=int(os.environ["OMP_NUM_THREADS"]), disable_tqdm=True)
    trainer = strata.Trainer(model=hp.model, tokenizer=hp.tokenizer, args=args,
                             train_dataset=os.environ["SM_CHANNEL_TRAIN"],
                             eval_dataset=os.environ["SM_CHANNEL_VALIDATION"], compute_metrics=compute_metrics)
    # None on the first attempt; after a spot interruption, the checkpoint to go on from.
    trainer.train(resume_from_checkpoint=os.environ.get("STRATA_RESUME_FROM_CHECKPOINT"))
    metrics = {**trainer.evaluate(), **trainer.predict(os.environ["SM_CHANNEL_TEST"]).metrics}
    if trainer.is_world_process_zero():
        trainer.save_model(os.environ["SM_MODEL_DIR"])
        with open(os.path.join(os.environ["SM_MODEL_DIR"], "results.json"), "w") as f:
            json.dump(metrics, f, indent=2)


def launch():
    """Your side: the job, described with SageMaker's names, run to its end."""
    estimator = strata.Estimator(
        entry_point=__file__,
        instance_type="local.c2",                 # catalog/instances.yaml: this 2-core machine, at spot prices
        hyperparameters={"epochs": 5, "learning_rate": 7e-4},
        use_spot_instances=True, max_run=3600, max_wait=7200,
        base_job_name="python-spam-spot",
        simulate_interruptions=[{"at_step": 150}, {"at_step": 400}],  # strata's: reclaims, for the demo
        simulate_capacity_wait=10)                # seconds until spot capacity returns
    estimator.fit(inputs={"train": f"{DATA}/train.csv.gz", "validation": f"{DATA}/validation.csv.gz",
                          "test": f"{DATA}/test.csv.gz"})
    job = estimator.latest_training_job
    d = job.describe()
    with open(os.path.join(estimator.model_data, "results.json")) as f:
        results = json.load(f)
    print(f"\n{job.name}: {d['TrainingJobStatus']} after {len(d['attempts'])} attempts; "
          f"billable {d['BillableTimeInSeconds']:.0f} s of {d['TrainingTimeInSeconds']:.0f} s, "
          f"{d['billing']['cost_usd']:.6f} USD ({d['billing']['spot_savings_percent']:.0f}% below on demand)")
    print(f"model: {estimator.model_data}; validation F1 {results['eval_spam_f1']:.4f}, "
          f"test F1 {results['test_spam_f1']:.4f}")


if __name__ == "__main__":
    if "SM_MODEL_DIR" in os.environ:  # set by the job runner for its ranks
        train()
    else:
        launch()
