"""The job of a strata YAML config, run through the Python API as an HF script runs it
(train, save_model, evaluate, predict, save_metrics): bench/python_overhead.sh times it
against `strata train` on the same config.

    python bench/python_overhead.py CONFIG.yaml OUTPUT_DIR [--compute-metrics]
"""
import sys

import yaml

import strata


def compute_metrics(eval_pred):  # the cost of a Python metric: numpy over the logits
    logits, labels = eval_pred
    return {"py_accuracy": float((logits.argmax(-1) == labels).mean())}


def main():
    config, output_dir = sys.argv[1], sys.argv[2]
    options = yaml.safe_load(open(config))
    model, tokenizer = options.pop("model_name_or_path"), options.pop("tokenizer_name", None)
    train, validation, test = (options.pop(k, None) for k in ("train_file", "validation_file", "test_file"))
    for key in ("do_train", "do_eval", "do_predict"):
        options.pop(key, None)
    options["output_dir"] = output_dir
    trainer = strata.Trainer(model=model, tokenizer=tokenizer, args=strata.TrainingArguments(**options),
                             train_dataset=train, eval_dataset=validation,
                             compute_metrics=compute_metrics if "--compute-metrics" in sys.argv else None)
    result = trainer.train()
    trainer.save_model()
    trainer.save_metrics("train", result.metrics)
    trainer.save_metrics("eval", trainer.evaluate())
    if test:
        trainer.save_metrics("predict", trainer.predict(test, metric_key_prefix="predict").metrics)


if __name__ == "__main__":
    main()
