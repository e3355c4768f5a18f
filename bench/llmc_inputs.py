#!/usr/bin/python3
"""Inputs for llm.c's CPU trainer (train_gpt2.c), so llmc_peer.sh needs no download.

    llmc_inputs.py DIR [--tokens-per-file N] [--seed 0]

Writes, in the layout train_gpt2.c's main() opens relative to its working directory:
  DIR/gpt2_124M.bin  a random-init GPT-2 124M checkpoint in llm.c's model format, version 3:
                     256 int32 header (magic 20240326, version, maxT, V, L, NH, C, padded V,
                     zeros), then every float32 parameter in llm.c's tensor order
  DIR/dev/data/tinyshakespeare/tiny_shakespeare_{train,val}.bin
                     random token ids in llm.c's data format: 256 int32 header (magic
                     20240520, version 1, token count, zeros), then uint16 tokens
The formats are read off train_gpt2.c (gpt2_build_from_checkpoint) and llmc/dataloader.h.
The values only have to be plausible: the step time does not depend on them. Init follows
HF's GPT-2 (normal 0.02, residual projections 0.02/sqrt(2L), LayerNorm 1/0, biases 0);
the padded vocabulary rows are zero, as llm.c's own writer leaves them.
"""

import argparse
import os

import numpy as np

MAX_T, V, L, NH, C = 1024, 50257, 12, 12, 768
PADDED_V = 50304  # V rounded up to a multiple of 128, what llm.c expects for GPT-2


def header(*values):
    h = np.zeros(256, dtype=np.int32)
    h[: len(values)] = values
    return h


def write_checkpoint(path, rng):
    std, proj_std = 0.02, 0.02 / np.sqrt(2 * L)

    def normal(shape, s):
        return (rng.standard_normal(shape, dtype=np.float32) * s).astype(np.float32)

    wte = np.zeros((PADDED_V, C), np.float32)
    wte[:V] = normal((V, C), std)
    # (tensor, ...) in train_gpt2.c's ParameterTensors order; Linear weights are [out, in]
    tensors = [
        wte, normal((MAX_T, C), std),
        np.ones((L, C), np.float32), np.zeros((L, C), np.float32),     # ln1 weight, bias
        normal((L, 3 * C, C), std), np.zeros((L, 3 * C), np.float32),  # qkv
        normal((L, C, C), proj_std), np.zeros((L, C), np.float32),     # attention projection
        np.ones((L, C), np.float32), np.zeros((L, C), np.float32),     # ln2
        normal((L, 4 * C, C), std), np.zeros((L, 4 * C), np.float32),  # fc
        normal((L, C, 4 * C), proj_std), np.zeros((L, C), np.float32),  # fc projection
        np.ones(C, np.float32), np.zeros(C, np.float32),               # ln_f
    ]
    with open(path, "wb") as f:
        header(20240326, 3, MAX_T, V, L, NH, C, PADDED_V).tofile(f)
        for t in tensors:
            t.tofile(f)
    return sum(t.size for t in tensors)


def write_tokens(path, n, rng):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        header(20240520, 1, n).tofile(f)
        rng.integers(0, V, size=n, dtype=np.uint16).tofile(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--tokens-per-file", type=int, default=64 * 4 * 1024 + 1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    os.makedirs(args.dir, exist_ok=True)
    n = write_checkpoint(os.path.join(args.dir, "gpt2_124M.bin"), rng)
    data = os.path.join(args.dir, "dev", "data", "tinyshakespeare")
    for split in ("train", "val"):
        write_tokens(os.path.join(data, f"tiny_shakespeare_{split}.bin"), args.tokens_per_file, rng)
    print(f"llm.c inputs in {args.dir}: {n} parameters (padded vocab {PADDED_V}), "
          f"{args.tokens_per_file} tokens per data file")


if __name__ == "__main__":
    main()
