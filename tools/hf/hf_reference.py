"""Numerics oracle: run an HF model (saved by hf_make_model.py) on given inputs and record
loss, logits, hidden states, every parameter gradient and the parameters after one AdamW step,
in float64 and float32, into one .safetensors file.

    hf_reference.py --model DIR --inputs inputs.json --out ref.safetensors
        [--lr 1e-3] [--betas 0.9,0.999] [--eps 1e-8] [--weight-decay 0.01]
        [--dtypes float64,float32] [--threads 1] [--decay-exclude-bias-ln]

inputs.json: {"input_ids": [[...]], "attention_mask": [[...]], "token_type_ids": [[...]] (optional),
              "position_ids" (optional), "labels": [...] or [[...]], "start_positions": [...],
              "end_positions": [...]}  -- every key is passed to model.forward; unknown keys are an error.

Mode: model.train() with every dropout probability set to 0 (config and nn.Dropout modules),
so the training code path runs deterministically (checked by running the forward twice).

Output tensor names (P = f64 or f32; NAME = HF parameter name from model.named_parameters(),
which lists a tied weight once, under the name that model.safetensors also uses):
    P/loss                    scalar, in P's dtype
    P/logits                  (QA heads: P/start_logits + P/end_logits; AlbertForPreTraining:
                              P/prediction_logits + P/sop_logits)
    P/hidden_states.K         K = 0 (embedding output) .. num_layers
    P/hidden_states.encoder.K, P/hidden_states.decoder.K   the same per stack of an encoder-decoder
    P/grad/NAME               d loss / d param (zeros + listed in metadata 'no_grad' if unused)
    P/param_after_adamw/NAME  param after ONE torch.optim.AdamW step (torch's own AdamW:
                              decoupled weight decay applied to every parameter unless
                              --decay-exclude-bias-ln; params with no grad are skipped by torch)
    inputs/KEY                the inputs as I64
__metadata__ holds the settings, versions and the f32-vs-f64 max abs differences as JSON strings.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_common  # noqa: E402

# the model outputs recorded: logits of every head (QA: start and end; AlbertForPreTraining: its
# masked-LM and sentence-order logits)
OUTPUT_KEYS = ("loss", "logits", "start_logits", "end_logits", "prediction_logits", "sop_logits")


def keep_float64_in_losses():
    """transformers 5's shared loss functions (ForCausalLMLoss, ForTokenClassification, ...) upcast
    the logits with `.float()` so that bf16 and fp16 training computes the loss in fp32. On the f64
    run that call would round the logits to fp32 and give an fp32 loss and gradients (6.6e-8 of
    the loss on the GPT-2 fixture; transformers 4.36 computed them in the logits' dtype). The
    oracle makes `.float()` leave float64 tensors as they are, so the f64 reference stays f64
    throughout; every other tensor converts as before."""
    import torch

    to_float = torch.Tensor.float
    if getattr(to_float, "keeps_float64", False):
        return

    def float_keeping_float64(self, *args, **kwargs):
        return self if self.dtype == torch.float64 else to_float(self, *args, **kwargs)

    float_keeping_float64.keeps_float64 = True
    torch.Tensor.float = float_keeping_float64


def keep_float64_in_t5_layer_norm():
    """T5LayerNorm computes the mean square as `hidden_states.to(torch.float32).pow(2).mean(-1)`, so
    that half-precision inputs accumulate in fp32; on the f64 run that rounds every RMS to fp32
    (3.6e-7 of the largest gradient on t5-cond-gen, 1.1e-6 on t5-v1_1-cond-gen). As for the losses
    (keep_float64_in_losses), the oracle computes it in float64 there, so the f64 reference stays
    f64 throughout; fp32 and half-precision inputs take HF's own path."""
    import torch
    from transformers.models.t5 import modeling_t5

    forward = modeling_t5.T5LayerNorm.forward
    if getattr(forward, "keeps_float64", False):
        return

    def forward_keeping_float64(self, hidden_states):
        if hidden_states.dtype != torch.float64:
            return forward(self, hidden_states)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        return self.weight * (hidden_states * torch.rsqrt(variance + self.variance_epsilon))

    forward_keeping_float64.keeps_float64 = True
    modeling_t5.T5LayerNorm.forward = forward_keeping_float64


def load_model(model_dir, dtype):
    import torch
    import transformers

    with open(os.path.join(model_dir, "config.json")) as f:
        arch_name = json.load(f)["architectures"][0]
    cls = getattr(transformers, arch_name)
    model, info = cls.from_pretrained(model_dir, output_loading_info=True)
    bad = {k: v for k, v in info.items() if v and k != "error_msgs"} if isinstance(info, dict) else {}
    if bad or info.get("error_msgs"):
        raise SystemExit(f"loading {model_dir} was not exact: {info}")
    model = model.to(dtype)
    hf_common.disable_dropout(model)
    return model


def to_tensors(inputs, model):
    import inspect

    import torch

    sig = inspect.signature(model.forward).parameters
    out = {}
    for k, v in inputs.items():
        if k not in sig:
            raise SystemExit(f"input key {k!r} is not an argument of {type(model).__name__}.forward")
        float_label = k == "labels" and getattr(model.config, "problem_type", None) in (
            "multi_label_classification", "regression")
        out[k] = torch.tensor(v, dtype=model.dtype if float_label else torch.long)
    return out


def run_one(model_dir, inputs, dtype, args):
    import torch

    model = load_model(model_dir, dtype)
    feed = to_tensors(inputs, model)
    out = model(**feed, output_hidden_states=True, return_dict=True)
    if out.loss is None:
        raise SystemExit("the inputs carry no labels / positions, so the model returned no loss")
    # determinism check (dropout really off): a second forward must give the identical loss. It
    # records gradients as the first does: without them torch's CPU attention may take another
    # kernel (T5's fp32 sdpa with its position bias as the mask differs by 1e-7 under no_grad).
    again = model(**feed, return_dict=True).loss.detach()
    if not torch.equal(again, out.loss.detach()):
        raise SystemExit(f"non-deterministic forward: {out.loss.item()} vs {again.item()}")
    out.loss.backward()

    res = {}
    for k in OUTPUT_KEYS:
        v = getattr(out, k, None)
        if v is not None:
            res[k] = v.detach().clone()
    # encoder-decoder outputs (BART) have no hidden_states but one tuple per stack
    for i, h in enumerate(getattr(out, "hidden_states", None) or ()):
        res[f"hidden_states.{i}"] = h.detach().clone()
    for stack in ("encoder", "decoder"):
        for i, h in enumerate(getattr(out, f"{stack}_hidden_states", None) or ()):
            res[f"hidden_states.{stack}.{i}"] = h.detach().clone()

    named = list(model.named_parameters())
    no_grad = []
    for n, p in named:
        if p.grad is None:
            no_grad.append(n)
            res[f"grad/{n}"] = torch.zeros_like(p.detach())
        else:
            res[f"grad/{n}"] = p.grad.detach().clone()

    if args.decay_exclude_bias_ln:
        decay, no_decay = [], []
        for n, p in named:
            (no_decay if (n.endswith("bias") or "LayerNorm" in n or "layer_norm" in n or ".ln_" in n
                          or n.startswith("ln_") or "_layer_norm" in n) else decay).append(p)
        groups = [{"params": decay, "weight_decay": args.weight_decay},
                  {"params": no_decay, "weight_decay": 0.0}]
    else:
        groups = [{"params": [p for _, p in named], "weight_decay": args.weight_decay}]
    opt = torch.optim.AdamW(groups, lr=args.lr, betas=args.betas, eps=args.eps)
    opt.step()
    for n, p in named:
        res[f"param_after_adamw/{n}"] = p.detach().clone()
    return res, no_grad, type(model).__name__


def sort_metadata(path):
    """safetensors 0.8 writes __metadata__ from a hash map, so its key order changes from run to
    run; rewrites the header with the keys sorted (same bytes, same length), so reruns give
    byte-identical files."""
    with open(path, "r+b") as f:
        n = int.from_bytes(f.read(8), "little")
        raw = f.read(n)
        header = json.loads(raw)
        header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
        text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
        assert len(text) <= n, "the sorted header is longer than the original"
        f.seek(8)
        f.write(text + b" " * (n - len(text)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--betas", default="0.9,0.999")
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--dtypes", default="float64,float32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--decay-exclude-bias-ln", action="store_true")
    args = ap.parse_args()
    args.betas = tuple(float(x) for x in args.betas.split(","))

    import torch
    import transformers
    from safetensors.torch import save_file

    torch.set_num_threads(args.threads)
    keep_float64_in_losses()
    keep_float64_in_t5_layer_norm()
    with open(args.inputs) as f:
        inputs = json.load(f)

    tensors = {}
    results = {}
    meta = {"transformers": transformers.__version__, "torch": torch.__version__,
            "lr": repr(args.lr), "betas": json.dumps(list(args.betas)), "eps": repr(args.eps),
            "weight_decay": repr(args.weight_decay),
            "decay_exclude_bias_ln": str(bool(args.decay_exclude_bias_ln)),
            "mode": "train() with all dropout p=0", "model_dir": os.path.basename(os.path.abspath(args.model))}
    for dname in args.dtypes.split(","):
        dtype = {"float64": torch.float64, "float32": torch.float32}[dname]
        prefix = {"float64": "f64", "float32": "f32"}[dname]
        res, no_grad, cls_name = run_one(args.model, inputs, dtype, args)
        results[prefix] = res
        meta["class"] = cls_name
        meta[f"{prefix}/no_grad"] = json.dumps(no_grad)
        for k, v in res.items():
            tensors[f"{prefix}/{k}"] = v.contiguous()
    for k, v in inputs.items():
        as_float = any(isinstance(x, float) for x in (v if not v or not isinstance(v[0], list) else v[0]))
        tensors[f"inputs/{k}"] = torch.tensor(v, dtype=torch.float64 if as_float else torch.long)

    summary = {}
    if "f64" in results and "f32" in results:
        diffs = {}
        for k, v64 in results["f64"].items():
            d = (results["f32"][k].double() - v64).abs().max().item() if v64.numel() else 0.0
            scale = v64.abs().max().item() if v64.numel() else 0.0
            group = k.split("/")[0] if "/" in k else k.split(".")[0]
            g = diffs.setdefault(group, {"max_abs_diff": 0.0, "group_absmax": 0.0})
            g["max_abs_diff"] = max(g["max_abs_diff"], d)
            g["group_absmax"] = max(g["group_absmax"], scale)
        for g in diffs.values():
            g["diff_over_absmax"] = g["max_abs_diff"] / g["group_absmax"] if g["group_absmax"] else 0.0
        meta["f32_vs_f64"] = json.dumps(diffs)
        summary = diffs
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    save_file(tensors, args.out, metadata=meta)
    sort_metadata(args.out)
    loss = {p: results[p]["loss"].item() for p in results}
    print(json.dumps({"out": args.out, "class": meta["class"], "loss": loss,
                      "n_params": sum(1 for k in next(iter(results.values())) if k.startswith("grad/")),
                      "f32_vs_f64": summary}))


if __name__ == "__main__":
    main()
