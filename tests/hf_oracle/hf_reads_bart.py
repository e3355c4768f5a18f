"""HF reads the BART that `strata train` writes: a tiny BartForSequenceClassification made from
its config.json and trained for 4 steps on GLUE-MRPC-style sentence pairs (the bundled WordPiece
tokenizer: [CLS] = 1 as bos, [SEP] = 2 as eos and decoder start, [PAD] = 3; every pair holds two
[SEP], so every row has the same eos count, as HF requires). Checked:
  - BartForSequenceClassification.from_pretrained loads the output with no missing, unexpected or
    mismatched tensor (the shared table under model.shared.weight, the tied names left out);
  - HF's logits (float64 model) on a padded batch of the training data equal the logits of
    `strata step --precision fp64` on the same model and batch, to 1e-12 of their largest value.

    hf_reads_bart.py STRATA_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys

import torch
from safetensors import safe_open
from tokenizers import Tokenizer
from transformers import BartForSequenceClassification

from oracle_checks import check, exit_status

strata, source, work = sys.argv[1:4]

os.makedirs(f"{work}/scratch", exist_ok=True)
json.dump({"model_type": "bart", "architectures": ["BartForSequenceClassification"], "vocab_size": 8000,
           "d_model": 16, "encoder_layers": 2, "decoder_layers": 1, "encoder_attention_heads": 4,
           "decoder_attention_heads": 2, "encoder_ffn_dim": 32, "decoder_ffn_dim": 24,
           "max_position_embeddings": 64, "activation_function": "gelu", "dropout": 0.1, "attention_dropout": 0.1,
           "activation_dropout": 0.1, "classifier_dropout": 0.1, "scale_embedding": True, "init_std": 0.02,
           "pad_token_id": 3, "bos_token_id": 1, "eos_token_id": 2, "decoder_start_token_id": 2},
          open(f"{work}/scratch/config.json", "w"))
words = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "home"]
pairs = []
with open(f"{work}/train.csv", "w") as f:
    f.write("sentence1,sentence2,label\n")
    for i in range(24):
        s1 = " ".join(words[(i + k) % 10] for k in range(5))
        s2 = s1 if i % 2 else " ".join(words[(i * 3 + k) % 10] for k in range(1 + i % 4))
        pairs.append((s1, s2))
        f.write(f"{s1},{s2},{i % 2}\n")

out = f"{work}/trained"
args = dict(task_name="mrpc", model_name_or_path=f"{work}/scratch", tokenizer_name=f"{source}/examples/spam/bert-small",
            train_file=f"{work}/train.csv", do_train=True, max_seq_length=32, per_device_train_batch_size=4,
            learning_rate=0.01, max_steps=4, logging_steps=1, save_strategy="no", num_threads=1, report_to="none",
            output_dir=out)
json.dump(args, open(f"{work}/train.json", "w"), indent=1)
r = subprocess.run([strata, "train", f"{work}/train.json"], capture_output=True, text=True)
if r.returncode != 0:
    sys.exit(f"strata train failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")

model, info = BartForSequenceClassification.from_pretrained(out, output_loading_info=True)
bad = {k: v for k, v in info.items() if v}
check(not bad, f"{out}: HF loads every tensor, none missing or unexpected ({bad})")

# a batch of the training pairs, tokenized as strata's run_glue does ([CLS] a [SEP] b [SEP]), right-padded
tok = Tokenizer.from_file(f"{source}/examples/spam/bert-small/tokenizer.json")
rows = [tok.encode(a, b).ids for a, b in pairs[:3]]
check(all(x[0] == 1 and x.count(2) == 2 and x[-1] == 2 for x in rows), f"pairs encode as [CLS] a [SEP] b [SEP]: {rows}")
T = max(len(x) for x in rows)
batch = {"input_ids": [x + [3] * (T - len(x)) for x in rows],
         "attention_mask": [[1] * len(x) + [0] * (T - len(x)) for x in rows], "labels": [0, 1, 0]}
json.dump(batch, open(f"{work}/batch.json", "w"))
r = subprocess.run([strata, "step", "--model", out, "--batch", f"{work}/batch.json", "--out", f"{work}/step.safetensors",
                    "--precision", "fp64", "--threads", "1"], capture_output=True, text=True)
if r.returncode != 0:
    sys.exit(f"strata step failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
with safe_open(f"{work}/step.safetensors", "pt") as f:
    ours = f.get_tensor("logits").double()
model = model.double().eval()
with torch.no_grad():
    theirs = model(input_ids=torch.tensor(batch["input_ids"]), attention_mask=torch.tensor(batch["attention_mask"])).logits
err = ((ours - theirs).abs().max() / theirs.abs().max()).item()
check(err < 1e-12, f"HF's logits equal strata step's on the trained model (relative error {err:.1e})")
sys.exit(exit_status())
