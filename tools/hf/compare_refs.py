"""Compares two hf_reference.py outputs tensor by tensor: for each group (loss, logits,
hidden_states, grad, param_after_adamw) the largest |a - b| over the group's largest |a|.

    compare_refs.py A.ref.safetensors B.ref.safetensors [--json]

Used to check that fixtures made by one HF stack agree with what another one computes
(tests/fixtures/README.md, "Versions"). Exits 1 if the two files hold different tensor names.
"""

import argparse
import json
import sys

from safetensors.numpy import load_file


def group_of(name):
    key = name.split("/", 1)[1] if "/" in name else name
    return key.split("/")[0].split(".")[0]


def compare(a_path, b_path):
    a, b = load_file(a_path), load_file(b_path)
    if set(a) != set(b):
        only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        raise SystemExit(f"{a_path} and {b_path} hold different tensors: only in the first {only_a[:5]}, "
                         f"only in the second {only_b[:5]}")
    groups = {}
    for name, x in a.items():
        if name.startswith("inputs/"):
            if not (x == b[name]).all():
                raise SystemExit(f"{name} differs between {a_path} and {b_path}")
            continue
        g = groups.setdefault(group_of(name), {"max_abs_diff": 0.0, "absmax": 0.0})
        if x.size:
            g["max_abs_diff"] = max(g["max_abs_diff"], float(abs(x.astype("f8") - b[name].astype("f8")).max()))
            g["absmax"] = max(g["absmax"], float(abs(x.astype("f8")).max()))
    return {k: v["max_abs_diff"] / v["absmax"] if v["absmax"] else v["max_abs_diff"] for k, v in groups.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()
    print(json.dumps(compare(args.a, args.b), sort_keys=True))


if __name__ == "__main__":
    sys.exit(main())
