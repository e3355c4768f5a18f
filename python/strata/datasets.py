"""Datasets held in memory, handed to strata's data pipeline as a JSON Lines file.

strata reads its data through one pipeline (the readers, checks and batches of ``strata
train``), so a dataset in memory is written once, column by column in C++, to a JSON Lines
file in a temporary directory the Trainer owns; a file path is used as it is. Both give the
same run.
"""
import os

from . import _strata


def stage_dataset(dataset, path, name):
    """Writes ``dataset`` to ``path`` (JSON Lines) and returns the path. ``dataset``: a list
    of dicts, a dict of column -> list / numpy array, or a ``datasets.Dataset``."""
    columns = _columns(dataset, name)
    _strata.write_jsonl(path, columns, name)
    return path


def _columns(dataset, name):
    if _is_hf_dataset(dataset):
        return _hf_columns(dataset)
    if isinstance(dataset, dict):
        if not dataset:
            raise ValueError(f"{name} is an empty dict; expected column name -> values")
        return [(str(k), _values(v)) for k, v in dataset.items()]
    if isinstance(dataset, (list, tuple)):
        if not dataset:
            raise ValueError(f"{name} is an empty list; expected rows (dicts of column -> value)")
        if not all(isinstance(row, dict) for row in dataset):
            raise TypeError(f"{name} is a list; expected a list of dicts (one per row)")
        names = list(dataset[0])
        for i, row in enumerate(dataset):
            if list(row) != names and set(row) != set(names):
                raise ValueError(f"{name}[{i}] has columns {sorted(row)}; row 0 has {sorted(names)}")
        return [(n, [row[n] for row in dataset]) for n in names]
    raise TypeError(f"{name} is a {type(dataset).__name__}; expected a file path, a list of dicts, a dict of "
                    "columns or a datasets.Dataset")


def _is_hf_dataset(obj):
    return type(obj).__module__.startswith("datasets.") and hasattr(obj, "column_names")


def _hf_columns(dataset):
    """A datasets.Dataset's columns through numpy: numeric columns arrive as arrays (no
    Python object per value), text columns as lists."""
    table = dataset.with_format("numpy")
    return [(n, _values(table[n])) for n in dataset.column_names]


def _values(v):
    """Numeric numpy arrays go to C++ as buffers; others (strings, objects) as lists."""
    dtype = getattr(v, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", "O") in "biuf":
        return v
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return v
    if hasattr(v, "__iter__") and not isinstance(v, (str, bytes, os.PathLike)):
        return list(v)
    raise TypeError(f"a column of type {type(v).__name__}; expected a list or an array")
