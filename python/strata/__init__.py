"""strata: train Hugging Face transformer models with a native C++ core.

The shapes HF and SageMaker users write, backed by the same C++ libraries as the ``strata``
command line::

    import strata
    args = strata.TrainingArguments(output_dir="out/spam", num_train_epochs=5, eval_strategy="epoch")
    trainer = strata.Trainer(model="examples/spam/bert-tiny", args=args,
                             train_dataset="examples/spam/data/train.csv",
                             eval_dataset="examples/spam/data/validation.csv",
                             compute_metrics=my_metrics)
    trainer.train()

See docs/python.md.
"""
from ._strata import StrataError, __version__, version_string
from .callbacks import (EarlyStoppingCallback, TrainerCallback, TrainerControl, TrainerState)
from .estimator import Estimator, UnexpectedStatusException
from .trainer import (EvalPrediction, PredictionOutput, Trainer, TrainingInterrupted, TrainOutput)
from .training_args import TrainingArguments

__all__ = [
    "EarlyStoppingCallback", "Estimator", "EvalPrediction", "PredictionOutput", "StrataError", "Trainer",
    "TrainerCallback", "TrainerControl", "TrainerState", "TrainingArguments", "TrainingInterrupted", "TrainOutput",
    "UnexpectedStatusException", "__version__", "version_string",
]

