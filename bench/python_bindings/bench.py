"""Import time and call overhead of one probe module, and the table of all of them (run.sh).

  bench.py measure MODULE BUILD_DIR      one JSON line (a round): medians in ns (import: us), every repeat
  bench.py table WORK_DIR NAME...        the table from WORK_DIR/NAME.{json,build,size}; a call's figure
                                         is the median of its rounds' medians
"""
import json
import statistics
import subprocess
import sys
import timeit

REPEATS = 7  # timeit repeats per call; the table gives their median
IMPORTS = 21  # fresh interpreters per import time
CALLBACKS = 1000  # (e): Python calls per C++ call

# What a TrainingArguments keyword dict looks like to the module: str -> int | float | str | bool.
OPTIONS = {"output_dir": "out", "learning_rate": 5e-5, "num_train_epochs": 3, "per_device_train_batch_size": 16,
           "do_train": True, "do_eval": True, "seed": 42, "lr_scheduler_type": "linear", "warmup_ratio": 0.1,
           "logging_steps": 50}

# (row label, statement, calls per statement); the last two rows time no binding at all.
CASES = [
    ("(a) noop()", "m.noop()", 1),
    ("(b) scalar(str, int) -> float", "m.scalar('learning_rate', 3)", 1),
    ("(c) options(dict of 10) -> dict", "m.options(OPTIONS)", 1),
    ("(d) array1d(): numpy, 1e6 float32, no copy", "m.array1d()", 1),
    ("(d) array2d(): numpy, 1000x1000, no copy", "m.array2d()", 1),
    ("(d') np.asarray(shared2d()): buffer object", "np.asarray(m.shared2d())", 1),
    ("(e) callback from C++, GIL released between (per call)", f"m.callbacks(cb, {CALLBACKS})", CALLBACKS),
    ("ref: Python calls a Python no-op", "f()", 1),
    ("ref: Python loop calls the callback (per call)", f"for i in range({CALLBACKS}): cb(i)", CALLBACKS),
]


def cb(step):
    return False


def f():
    pass


def check(m, np):
    """What the timings assume: the calls work, and the arrays are views of one buffer."""
    assert m.noop() is None and m.scalar("abc", 3) == 9.0
    out = m.options(OPTIONS)
    assert out == OPTIONS and all(type(out[k]) is type(v) for k, v in OPTIONS.items()), out
    a, b, c = m.array1d(), m.array2d(), np.asarray(m.shared2d())
    assert a.shape == (1000000,) and b.shape == (1000, 1000) and c.shape == (1000, 1000) and a.dtype == np.float32
    assert np.shares_memory(a, b) and np.shares_memory(a, c) and not a.flags.owndata  # no copy
    assert m.callbacks(lambda i: i % 2 == 0, CALLBACKS) == CALLBACKS // 2


def measure(module, build_dir):
    sys.path.insert(0, build_dir)
    imports = []
    for _ in range(IMPORTS):  # a fresh interpreter each time: the import that a script pays
        code = (f"import sys, time; sys.path.insert(0, {build_dir!r}); t = time.perf_counter(); import {module}; "
                "print((time.perf_counter() - t) * 1e6)")
        imports.append(float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                            text=True).stdout))
    import importlib
    import numpy as np
    m = importlib.import_module(module)
    check(m, np)
    result = {"module": module, "import_us": statistics.median(imports), "import_all": imports, "calls": {}}
    env = {"m": m, "np": np, "OPTIONS": OPTIONS, "cb": cb, "f": f}
    for label, stmt, per in CASES:
        timer = timeit.Timer(stmt, globals=env)
        number, _ = timer.autorange()  # enough calls for 0.2 s a repeat
        runs = [t / number / per * 1e9 for t in timer.repeat(REPEATS, number)]
        result["calls"][label] = {"ns": statistics.median(runs), "all": runs, "number": number}
    print(json.dumps(result))


def table(work, names):
    def build(name, kind):  # medians of the clean builds' or rebuilds' (wall, user + sys) seconds
        rows = [line.split() for line in open(f"{work}/{name}.build") if line.startswith(kind)]
        return (statistics.median(float(r[1]) for r in rows),
                statistics.median(float(r[2]) + float(r[3]) for r in rows), len(rows))

    rounds = {n: [json.loads(line) for line in open(f"{work}/{n}.json")] for n in names}

    def call(n, label):
        return statistics.median(r["calls"][label]["ns"] for r in rounds[n])

    def import_us(n):  # every fresh interpreter of every round
        return statistics.median(t for r in rounds[n] for t in r["import_all"])

    lines = [
        ("clean build, wall s (-j2)", lambda n: f"{build(n, 'clean')[0]:.1f}"),
        ("clean build, CPU s (user+sys)", lambda n: f"{build(n, 'clean')[1]:.1f}"),
        ("rebuild after an edit, wall s", lambda n: f"{build(n, 'rebuild')[0]:.1f}"),
        ("rebuild after an edit, CPU s", lambda n: f"{build(n, 'rebuild')[1]:.1f}"),
        ("stripped .so, KiB", lambda n: f"{int(open(f'{work}/{n}.size').read()) / 1024:.0f}"),
        ("import, us (fresh interpreter)", lambda n: f"{import_us(n):.0f}"),
    ] + [(f"{label}, ns", lambda n, label=label: f"{call(n, label):.0f}") for label, _, _ in CASES]
    width = max(len(label) for label, _ in lines)
    cols = [max(len(n), 9) for n in names]
    print(f"{'':{width}}  " + "  ".join(f"{n:>{c}}" for n, c in zip(names, cols)))
    for label, cell in lines:
        print(f"{label:{width}}  " + "  ".join(f"{cell(n):>{c}}" for n, c in zip(names, cols)))
    runs, n_rounds = build(names[0], "clean")[2], len(rounds[names[0]])
    print(f"builds: median of {runs} clean builds and {runs} rebuilds each; calls: median over {n_rounds} rounds "
          f"of the median of {REPEATS} timeit repeats; import: median of {n_rounds} x {IMPORTS} interpreters")


if __name__ == "__main__":
    if sys.argv[1] == "measure":
        measure(sys.argv[2], sys.argv[3])
    else:
        table(sys.argv[2], sys.argv[3:])
