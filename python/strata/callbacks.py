"""HF's TrainerCallback, TrainerControl and TrainerState, as strata's Trainer reports to them."""


class TrainerState:
    """HF's TrainerState at an event: ``global_step``, ``epoch``, ``max_steps``,
    ``log_history``, ``best_metric``, ``best_model_checkpoint`` and the rest of
    trainer_state.json's fields, as attributes."""

    def __init__(self, fields):
        self.__dict__.update(fields)
        self.is_world_process_zero = fields.get("is_world_process_zero", True)

    def __repr__(self):
        return f"TrainerState(global_step={self.global_step}, epoch={self.epoch}, max_steps={self.max_steps})"


class TrainerControl:
    """What a callback asks of the loop. ``should_training_stop = True`` ends training after
    the current step's logging, evaluation and saving, as HF's loop does."""

    def __init__(self):
        self.should_training_stop = False


class TrainerCallback:
    """Subclass and override the events you need, with HF's names and signatures:
    ``on_train_begin``, ``on_step_end``, ``on_epoch_end``, ``on_log(..., logs)``,
    ``on_evaluate(..., metrics)``, ``on_save``, ``on_train_end``. Each gets
    ``(args, state, control, **kwargs)`` and runs on every rank; an exception raised in one
    stops training and reaches the caller of ``train()``."""

    def on_train_begin(self, args, state, control, **kwargs):
        pass

    def on_step_end(self, args, state, control, **kwargs):
        pass

    def on_epoch_end(self, args, state, control, **kwargs):
        pass

    def on_log(self, args, state, control, logs=None, **kwargs):
        pass

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        pass

    def on_save(self, args, state, control, **kwargs):
        pass

    def on_train_end(self, args, state, control, **kwargs):
        pass


class EarlyStoppingCallback(TrainerCallback):
    """HF's EarlyStoppingCallback: strata runs it in C++ (the options
    ``early_stopping_patience`` and ``early_stopping_threshold``, which a checkpoint saves
    and a resume restores), so the Trainer turns it into those options. Needs
    ``metric_for_best_model`` and evaluations, as in HF."""

    def __init__(self, early_stopping_patience=1, early_stopping_threshold=0.0):
        self.early_stopping_patience = early_stopping_patience
        self.early_stopping_threshold = early_stopping_threshold


EVENTS = ("on_train_begin", "on_step_end", "on_epoch_end", "on_log", "on_evaluate", "on_save", "on_train_end")
PAYLOAD_NAME = {"on_log": "logs", "on_evaluate": "metrics"}
