"""strata.Trainer: HF's Trainer over strata's C++ trainer."""
import json
import os
import shutil
import signal
import tempfile
from collections import namedtuple

from . import _strata
from .callbacks import EVENTS, PAYLOAD_NAME, EarlyStoppingCallback, TrainerCallback, TrainerControl, TrainerState
from .datasets import stage_dataset
from .training_args import TrainingArguments, _plain, option_pairs

TrainOutput = namedtuple("TrainOutput", ["global_step", "training_loss", "metrics"])
PredictionOutput = namedtuple("PredictionOutput", ["predictions", "label_ids", "metrics"])


class EvalPrediction:
    """What ``compute_metrics`` gets, as in HF, in dataset order: ``predictions`` (the logits,
    numpy float32: [examples, labels]; token classification [examples, tokens, tags]) and
    ``label_ids`` (numpy int64 [examples], -100 where an example has no label; float32
    [examples, labels] for regression and multi-label; token classification int64 [examples,
    tokens], -100 on untagged tokens and padding; None without labels). Unpacks as
    ``logits, labels = eval_pred``."""

    def __init__(self, predictions, label_ids):
        self.predictions = predictions
        self.label_ids = label_ids

    def __iter__(self):
        return iter((self.predictions, self.label_ids))

    def __getitem__(self, i):
        return (self.predictions, self.label_ids)[i]

    def __len__(self):
        return 2


class TrainingInterrupted(SystemExit):
    """Training stopped after a step on SIGTERM or SIGUSR1 (a spot reclaim, Slurm, ``strata
    job stop``): every rank finished the same step and ``checkpoint`` holds it, ready for
    ``train(resume_from_checkpoint=...)``. A SystemExit whose ``code`` is the exit status the
    job runner reads as "stopped with a checkpoint", so a script that does not catch it ends
    the way ``strata train`` does."""

    def __init__(self, checkpoint, step, signal_number):
        super().__init__(_strata.EXIT_INTERRUPTED)
        self.checkpoint = checkpoint
        self.step = step
        self.signal = signal_number

    def __str__(self):
        return f"training stopped after step {self.step} (signal {self.signal}); checkpoint: {self.checkpoint}"


class Trainer:
    """HF's Trainer, training in strata's C++ core.

    ``model``: a model directory (config.json, with model.safetensors to fine-tune it or
    without to train a new model from the config). ``args``: :class:`TrainingArguments`.
    ``train_dataset`` / ``eval_dataset``: a file path (CSV, TSV, JSON Lines, text, .gz), a
    list of dicts, a dict of column -> list or numpy array, or a ``datasets.Dataset``; columns
    are named by the options (``text_column``, ``label_column``, ...). ``tokenizer`` (or
    ``processing_class``): a tokenizer directory, default the model's. ``compute_metrics``:
    ``EvalPrediction -> dict``, called at every evaluation; its metrics are logged, saved
    and may be ``metric_for_best_model``. ``callbacks``: :class:`TrainerCallback` objects.

    The model and the data are loaded here; errors in them raise now. Under ``mpirun`` or
    ``strata launch`` each process trains its rank, with the parallel layout of ``args``.
    """

    def __init__(self, model=None, args=None, train_dataset=None, eval_dataset=None, tokenizer=None,
                 compute_metrics=None, callbacks=None, processing_class=None):
        if model is None:
            raise TypeError("Trainer needs model: a model directory (config.json, and model.safetensors to fine-tune)")
        if args is None:
            args = TrainingArguments(output_dir="tmp_trainer")
        elif isinstance(args, dict):
            args = TrainingArguments(**args)
        elif not isinstance(args, TrainingArguments):
            raise TypeError(f"args must be strata.TrainingArguments or a dict, not {type(args).__name__}")
        if compute_metrics is not None and not callable(compute_metrics):
            raise TypeError("compute_metrics must be a function of an EvalPrediction")
        self.args = args
        self.compute_metrics = compute_metrics
        self.callbacks = []
        self._tmpdir = None
        self._session = None
        self._interrupted = False
        self._model = os.fspath(model)
        tokenizer = processing_class if tokenizer is None else tokenizer
        self._tokenizer = os.fspath(tokenizer) if tokenizer is not None else None
        self._early_stopping = {}
        for cb in callbacks or []:
            self.add_callback(cb)
        self._files = {}
        if train_dataset is not None:
            self._files["train_file"] = self._stage(train_dataset, "train_dataset")
        if eval_dataset is not None:
            self._files["validation_file"] = self._stage(eval_dataset, "eval_dataset")
        if train_dataset is not None:
            self._start("train")
        elif eval_dataset is not None:
            self._start("evaluate")

    # -- the HF API -------------------------------------------------------------------------

    def train(self, resume_from_checkpoint=None):
        """Trains as ``strata train`` does; returns ``TrainOutput(global_step, training_loss,
        metrics)``. ``resume_from_checkpoint``: a checkpoint directory, or True / "latest" for
        the newest in output_dir. Ctrl-C stops after the current step with a checkpoint and
        raises KeyboardInterrupt; SIGTERM / SIGUSR1 raise :class:`TrainingInterrupted`."""
        if "train_file" not in self._files:
            raise ValueError("this Trainer has no train_dataset to train on")
        spec = ""
        if resume_from_checkpoint not in (None, False):
            # The model and data loaded already serve: the checkpoint's weights and state replace them.
            spec = "latest" if resume_from_checkpoint is True else os.fspath(resume_from_checkpoint)
            if self._session is None:
                self._start("train")
        elif self._session is None or self._trained:
            self._start("train")
        self._trained = True
        out = json.loads(self._session.train(spec))
        if "interrupted" in out:
            i = out["interrupted"]
            if i["signal"] == signal.SIGINT:
                raise KeyboardInterrupt(f"training stopped after step {i['step']}; checkpoint: {i['checkpoint']} "
                                        "(train(resume_from_checkpoint=...) continues it)")
            raise TrainingInterrupted(i["checkpoint"], i["step"], i["signal"])
        metrics = out["metrics"]
        return TrainOutput(metrics["global_step"], metrics["train_loss"], metrics)

    def evaluate(self, eval_dataset=None, metric_key_prefix="eval"):
        """Loss and metrics on eval_dataset (default: the Trainer's), compute_metrics' included;
        logged as HF logs them."""
        file = self._stage(eval_dataset, "eval_dataset") if eval_dataset is not None else ""
        self._need_session("evaluate", file)
        metrics_json, _, _ = self._session.pass_(file, "eval", False)
        metrics = _renamed(json.loads(metrics_json), "eval", metric_key_prefix)
        self._session.log(json.dumps(metrics))
        self._dispatch("on_evaluate", self._session.state(), json.dumps(metrics))
        return metrics

    def predict(self, test_dataset, metric_key_prefix="test"):
        """``PredictionOutput(predictions, label_ids, metrics)``: the logits of every example
        (numpy, shared with strata's buffers, not copied), its labels if the data has them,
        and the metrics those allow."""
        file = self._stage(test_dataset, "test_dataset")
        self._need_session("predict", file)
        metrics_json, predictions, labels = self._session.pass_(file, "test", True)
        import numpy as np
        predictions = np.asarray(predictions) if predictions is not None else None
        labels = np.asarray(labels) if labels is not None else None
        return PredictionOutput(predictions, labels, _renamed(json.loads(metrics_json), "test", metric_key_prefix))

    def save_model(self, output_dir=None):
        """Writes the model (config.json, model.safetensors, tokenizer files) as HF does."""
        self._need_session("train", "")
        self._session.save_model(os.fspath(output_dir or self.args.output_dir))

    def add_callback(self, callback):
        if isinstance(callback, type):
            callback = callback()
        if isinstance(callback, EarlyStoppingCallback):
            self._early_stopping = {"early_stopping_patience": callback.early_stopping_patience,
                                    "early_stopping_threshold": callback.early_stopping_threshold}
        elif not isinstance(callback, TrainerCallback) and not any(hasattr(callback, e) for e in EVENTS):
            raise TypeError(f"{type(callback).__name__} is not a TrainerCallback (it has none of {', '.join(EVENTS)})")
        self.callbacks.append(callback)

    def is_world_process_zero(self):
        return self._session is None or self._session.rank == 0

    @property
    def world_size(self):
        return 1 if self._session is None else self._session.world_size

    @property
    def state(self):
        self._need_session("train", "")
        return TrainerState(json.loads(self._session.state()))

    def log_metrics(self, split, metrics):
        """Prints metrics as HF's Trainer.log_metrics does (rank 0 only)."""
        if not self.is_world_process_zero():
            return
        print(f"***** {split} metrics *****")
        for k in sorted(metrics):
            print(f"  {k:<28} = {metrics[k]}")

    def save_metrics(self, split, metrics):
        """<split>_results.json in output_dir, and all_results.json updated, as HF does."""
        if not self.is_world_process_zero():
            return
        os.makedirs(self.args.output_dir, exist_ok=True)
        _write_json(os.path.join(self.args.output_dir, f"{split}_results.json"), metrics)
        path = os.path.join(self.args.output_dir, "all_results.json")
        merged = json.load(open(path)) if os.path.exists(path) else {}
        merged.update(metrics)
        _write_json(path, merged)

    def close(self):
        """Frees the model and removes the staged copies of in-memory datasets."""
        self._session = None
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    # -- internals --------------------------------------------------------------------------

    def _stage(self, dataset, name):
        if isinstance(dataset, (str, os.PathLike)):
            return os.fspath(dataset)
        if self._tmpdir is None:
            self._tmpdir = tempfile.mkdtemp(prefix="strata-data-")
        return stage_dataset(dataset, os.path.join(self._tmpdir, f"{name}.jsonl"), name)

    def _options(self, mode):
        options = self.args.given()
        # As PyTorch does, a script honours OMP_NUM_THREADS (the job runner sets it per rank)
        # unless num_threads is given; strata train's default is the cores over the ranks.
        threads = os.environ.get("OMP_NUM_THREADS", "")
        if "num_threads" not in options and threads.isdigit() and int(threads) > 0:
            options["num_threads"] = int(threads)
        options["model_name_or_path"] = self._model
        if self._tokenizer is not None:
            options["tokenizer_name"] = self._tokenizer
        options.update(self._early_stopping)
        options.update(self._files)
        options["do_train"] = mode == "train"
        if "validation_file" in self._files:
            options["do_eval"] = True
        return option_pairs(options)

    def _start(self, mode):
        self._session = None  # one model in memory at a time
        self._trained = False
        events = {e for cb in self.callbacks for e in EVENTS if _overrides(cb, e)}
        metrics = self._metrics if self.compute_metrics is not None else None
        try:
            self._session = _strata.Session(self._options(mode), mode, self._dispatch, events, metrics)
        except _strata.StrataError as e:
            raise _strata.StrataError(self._readable(str(e))) from None

    def _need_session(self, mode, file):
        if self._session is None:
            if mode == "predict":
                self._files["test_file"] = file
                self._start("predict")
            elif mode == "evaluate" and file:
                self._files["validation_file"] = file
                self._start("evaluate")
            else:
                raise ValueError(f"this Trainer has no dataset to {mode}: give train_dataset or eval_dataset")

    def _readable(self, message):
        """Errors about a staged in-memory dataset name it, not its temporary file."""
        if self._tmpdir:
            message = message.replace(self._tmpdir + os.sep, "")
        return message

    def _dispatch(self, event, state_json, payload_json):
        state = TrainerState(json.loads(state_json))
        state.is_world_process_zero = self.is_world_process_zero()
        control = TrainerControl()
        payload = json.loads(payload_json)
        kwargs = {PAYLOAD_NAME[event]: payload} if event in PAYLOAD_NAME else {}
        for cb in self.callbacks:
            if _overrides(cb, event):
                result = getattr(cb, event)(self.args, state, control, **kwargs)
                if isinstance(result, TrainerControl):
                    control = result
        return bool(control.should_training_stop)

    def _metrics(self, predictions, label_ids):
        import numpy as np
        prediction = EvalPrediction(np.asarray(predictions), None if label_ids is None else np.asarray(label_ids))
        result = self.compute_metrics(prediction)
        if not isinstance(result, dict):
            raise TypeError(f"compute_metrics returned {type(result).__name__}; expected a dict of name -> number")
        return json.dumps({str(k): _plain(v) for k, v in result.items()})


def _overrides(cb, event):
    method = getattr(type(cb), event, None)
    return method is not None and method is not getattr(TrainerCallback, event, None)


def _renamed(metrics, prefix, wanted):
    if prefix == wanted:
        return metrics
    return {(wanted + k[len(prefix):] if k.startswith(prefix + "_") else k): v for k, v in metrics.items()}


def _write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=4, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
