"""strata.TrainingArguments: HF's TrainingArguments names, checked by strata's own parser."""
import json

from . import _strata


class TrainingArguments:
    """The options of a ``strata train`` config, as keyword arguments.

    Every name of a strata YAML config is accepted (HF's ``TrainingArguments`` names, the
    data options of HF's example scripts, ``distribution`` and ``deepspeed`` blocks); each
    value is checked as the config file's would be, so a wrong name, type or combination
    raises :class:`strata.StrataError` (a ``ValueError``) naming the keyword, with a
    did-you-mean for misspelt names. ``output_dir`` is required, as in HF.

    Attributes read the checked value of every option, defaults included
    (``args.learning_rate``); assigning one re-checks the whole set.
    """

    def __init__(self, output_dir=None, **kwargs):
        options = dict(kwargs)
        if output_dir is not None:
            options["output_dir"] = output_dir
        object.__setattr__(self, "_options", options)
        object.__setattr__(self, "_values", self._check(options))

    @staticmethod
    def _check(options):
        values = json.loads(_strata.check_training_arguments(option_pairs(options)))
        return {k: v for k, v in values.items() if v != _strata.GIVEN_TO_TRAINER or k in options}

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"TrainingArguments has no option '{name}'")

    def __setattr__(self, name, value):
        options = dict(self._options)
        options[name] = value
        values = self._check(options)
        object.__setattr__(self, "_options", options)
        object.__setattr__(self, "_values", values)

    def to_dict(self):
        """Every option with its value (defaults filled), as strata resolved them."""
        return dict(self._values)

    def to_json_string(self):
        return json.dumps(self._values, indent=2, sort_keys=True)

    def given(self):
        """The options as they were given (no defaults)."""
        return dict(self._options)

    def __repr__(self):
        return "TrainingArguments(\n" + _strata.format_training_arguments(option_pairs(self._options)) + ")"

    def __eq__(self, other):
        return isinstance(other, TrainingArguments) and self._values == other._values


def option_pairs(options):
    """Options as the C++ core takes them: (name, value as JSON) pairs."""
    return [(k, json.dumps(_plain(v))) for k, v in options.items()]


def _plain(v):
    """A value as JSON takes it: numpy scalars and tuples become Python numbers and lists."""
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if hasattr(v, "item") and hasattr(v, "dtype"):
        return v.item()
    if hasattr(v, "__fspath__"):
        return str(v)
    return v
