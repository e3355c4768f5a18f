"""HF loads what a tensor-parallel `strata train` saves: a 2-layer GPT-2 causal LM trained 4 steps
by one process and by tp 2 x pp 2 (4 ranks under mpirun; each rank holds its slices, the model is
put back together at rank 0). transformers' GPT2LMHeadModel.from_pretrained loads both outputs
with nothing missing, unexpected or mismatched, and its logits on a batch agree between the two
(to fp32 rounding of the different sums), so the slices went back to HF's Conv1D rows and columns.

    hf_reads_tensor_parallel.py STRATA_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys

import torch
from transformers import GPT2LMHeadModel

from oracle_checks import check, exit_status

strata, source, work = sys.argv[1:4]

os.makedirs(f"{work}/model", exist_ok=True)
json.dump({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 8000, "n_embd": 32,
           "n_layer": 2, "n_head": 4, "n_positions": 64, "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0},
          open(f"{work}/model/config.json", "w"))
words = "the cat sat on the mat a dog ran far home".split()
with open(f"{work}/train.txt", "w") as f:
    for i in range(60):
        f.write(" ".join(words[(i * 7 + k) % len(words)] for k in range(3 + i % 9)) + "\n")


def train(name, ranks, extra):
    with open(f"{work}/{name}.yaml", "w") as f:
        f.write(f"""model_name_or_path: {work}/model
tokenizer_name: {source}/examples/tokenizers/bpe-8k
train_file: {work}/train.txt
block_size: 16
output_dir: {work}/{name}
per_device_train_batch_size: 8
max_steps: 4
learning_rate: 3.0e-3
save_strategy: "no"
num_threads: 1
seed: 3
{extra}
""")
    cmd = [strata, "train", f"{work}/{name}.yaml"]
    if ranks > 1:
        cmd = ["mpirun", "--oversubscribe", "-np", str(ranks)] + cmd
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    check(r.returncode == 0, f"strata train {name} ({ranks} ranks)" + ("" if r.returncode == 0 else ": " + r.stdout[-2000:] + r.stderr[-2000:]))


train("single", 1, "")
train("tp2_pp2", 4, "tensor_parallel_degree: 2\npipeline_parallel_degree: 2\nmicrobatches: 2")
ids = torch.tensor([[5, 17, 300, 42, 7999, 1, 64, 8], [9, 9, 1000, 2, 3, 4000, 6, 7]])
logits = {}
for name in ("single", "tp2_pp2"):
    model, info = GPT2LMHeadModel.from_pretrained(f"{work}/{name}", output_loading_info=True)
    check(not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"],
          f"{name}: from_pretrained loads every tensor ({info})")
    model.eval()
    with torch.no_grad():
        logits[name] = model(ids).logits
diff = (logits["single"] - logits["tp2_pp2"]).abs().max().item()
scale = logits["single"].abs().max().item()
check(diff <= 1e-4 * max(scale, 1.0), f"HF logits of the tp2 x pp2 model equal the single process's: max diff {diff:.2e} (max |logit| {scale:.2f})")
sys.exit(exit_status())
