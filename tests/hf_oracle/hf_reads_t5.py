"""HF reads the T5 that strata writes: each T5 fixture (made by HF: tests/fixtures/make_fixtures_t5.sh)
takes one AdamW step in `strata step` (lr 1e-2, so every weight moves) and is saved by it (--save).
Three models: t5-cond-gen (relu, the LM head tied to shared.weight, the decoder's output scaled),
t5-v1_1-cond-gen as transformers 5 writes its config (tie_word_embeddings true, scale_decoder_outputs
false, lm_head.weight of its own), and the same with the config the hub's v1.1 / flan-t5 checkpoints
have (tie_word_embeddings false, no scale_decoder_outputs). Checked:
  - T5ForConditionalGeneration.from_pretrained loads the output with no missing, unexpected or
    mismatched tensor, with the head tied or not as strata had it, and the same parameters;
  - HF's logits (float64 model) on the fixture's batch equal the logits of
    `strata step --precision fp64` on the saved model, to 1e-12 of their largest value. HF's
    T5LayerNorm rounds the mean square to float32 even in a float64 model; the check computes it in
    float64 there, as the fixtures' oracle does (tools/hf/hf_reference.py).

    hf_reads_t5.py STRATA_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

import torch
from safetensors import safe_open
from transformers import T5ForConditionalGeneration

from oracle_checks import check, exit_status

strata, source, work = sys.argv[1:4]
sys.path.insert(0, os.path.join(source, "tools", "hf"))
from hf_reference import keep_float64_in_t5_layer_norm  # noqa: E402

keep_float64_in_t5_layer_norm()
fixtures = os.path.join(source, "tests", "fixtures")


def run(*args):
    r = subprocess.run([strata, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"strata {args[0]} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


def hub_style(model_dir):
    """The v1.1 fixture with the config.json of the hub's v1.1 / flan-t5 checkpoints."""
    out = os.path.join(work, "t5-v1_1-hub-config")
    shutil.copytree(model_dir, out)
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    for key in ("scale_decoder_outputs", "dense_act_fn", "is_gated_act"):
        cfg.pop(key, None)
    cfg["tie_word_embeddings"] = False
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    return out


cases = [("t5-cond-gen", os.path.join(fixtures, "t5-cond-gen"), True),
         ("t5-v1_1-cond-gen", os.path.join(fixtures, "t5-v1_1-cond-gen"), False),
         ("t5-v1_1-cond-gen, hub config", hub_style(os.path.join(fixtures, "t5-v1_1-cond-gen")), False)]
for name, model_dir, tied in cases:
    batch = os.path.join(fixtures, name.split(",")[0] + ".inputs.json")
    tag = name.replace(",", "").replace(" ", "-")
    saved = os.path.join(work, tag + "-saved")
    run("step", "--model", model_dir, "--batch", batch, "--out", os.path.join(work, tag + ".step.safetensors"),
        "--optimizer", "adamw", "--lr", "1e-2", "--threads", "1", "--save", saved)

    model, info = T5ForConditionalGeneration.from_pretrained(saved, output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    check(not bad, f"{name}: HF loads every tensor, none missing or unexpected ({bad})")
    is_tied = model.lm_head.weight.data_ptr() == model.shared.weight.data_ptr()
    check(is_tied == tied and model.config.scale_decoder_outputs == tied,
          f"{name}: HF's LM head is {'tied and scaled' if tied else 'its own, unscaled'} as strata's was "
          f"(tied {is_tied}, scale_decoder_outputs {model.config.scale_decoder_outputs})")
    with safe_open(os.path.join(saved, "model.safetensors"), "pt") as f:
        differ = [k for k in f.keys() if not torch.equal(f.get_tensor(k), model.state_dict()[k])]
    check(not differ, f"{name}: HF holds the parameters strata saved ({differ[:3]})")

    with open(batch) as f:
        inputs = json.load(f)
    out = os.path.join(work, tag + ".fp64.safetensors")
    run("step", "--model", saved, "--batch", batch, "--out", out, "--precision", "fp64", "--threads", "1")
    with safe_open(out, "pt") as f:
        ours = f.get_tensor("logits").double()
    model = model.double().eval()
    with torch.no_grad():
        theirs = model(input_ids=torch.tensor(inputs["input_ids"]), attention_mask=torch.tensor(inputs["attention_mask"]),
                       labels=torch.tensor(inputs["labels"])).logits
    err = ((ours - theirs).abs().max() / theirs.abs().max()).item()
    check(err < 1e-12, f"{name}: HF's logits equal strata step's on the saved model (relative error {err:.1e})")
sys.exit(exit_status())
