"""What the MPI equivalence tests read from a run and how they compare it with the single process.

A run NAME lives in WORK/NAME (trainer_log.jsonl, model.safetensors) with its console log in
WORK/NAME.log. compare() prints one line per run and returns whether all matched.
"""
import json
import re

from safetensors_f32 import read as tensors


def log(work, name):
    """(loss, grad_norm) of every logged step, and the eval losses."""
    rows = [json.loads(line) for line in open(f"{work}/{name}/trainer_log.jsonl")]
    return [(r["loss"], r["grad_norm"]) for r in rows if "loss" in r], [r["eval_loss"] for r in rows if "eval_loss" in r]


def measured_memory(work, name):
    """{rank: (parameters resident MiB, optimizer state MiB)} from the run's `memory measured` lines."""
    pat = re.compile(r"memory measured, rank (\d+): .*parameters resident ([\d.]+) MiB;.*optimizer state ([\d.]+) MiB")
    return {int(m[1]): (float(m[2]), float(m[3])) for m in map(pat.search, open(f"{work}/{name}.log")) if m}


def compare(work, ref, names, evaluated=True, param_tol=1e-5, eval_tol=1e-5):
    """Every run in `names` against `ref`: 5 steps with the same losses and gradient norms (logged
    to 4 decimals: 2e-4), the same eval loss (1e-5) when `evaluated`, and the same parameters
    within 1e-5 of the largest (fp32: the runs sum gradients, norms and row-parallel outputs in
    another order). Mixed precision passes wider bounds for the parameters and eval loss: a sum
    in another order can round a product's input to the neighbouring bf16 value, 2^-8 away."""
    ok = True
    ref_log, ref_eval = log(work, ref)
    ref_w = tensors(f"{work}/{ref}/model.safetensors")
    scale = max(abs(x) for t in ref_w.values() for x in t)
    for name in names:
        got, ev = log(work, name)
        w = tensors(f"{work}/{name}/model.safetensors")
        dl = max(abs(a[0] - b[0]) for a, b in zip(got, ref_log))
        dn = max(abs(a[1] - b[1]) for a, b in zip(got, ref_log))
        dw = max(abs(a - b) for k in ref_w for a, b in zip(w[k], ref_w[k])) / scale
        good = (len(got) == len(ref_log) == 5 and dl <= 2e-4 and dn <= 2e-4 and dw <= param_tol
                and w.keys() == ref_w.keys()
                and all(len(w[k]) == len(ref_w[k]) for k in ref_w))
        line = f"{name}: {len(got)} steps, max |loss - {ref}| {dl:.1e}, max |grad_norm - {ref}| {dn:.1e}, "
        if evaluated:
            de = max(abs(a - b) for a, b in zip(ev, ref_eval)) if ev else float("inf")
            good = good and len(ev) == len(ref_eval) >= 1 and de <= eval_tol
            line += f"|eval_loss - {ref}| {de:.1e}, "
        ok &= good
        print(f"{line}max |param - {ref}| / max |param| {dw:.2e} -> {'ok' if good else 'MISMATCH'}")
    print(f"{ref} (loss, grad_norm):", ref_log, *(["eval_loss", ref_eval] if evaluated else []))
    return ok
