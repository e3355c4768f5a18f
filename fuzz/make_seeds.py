#!/usr/bin/env python3
"""Writes fuzz/corpus/<target>/ from real files: the repository's fixtures and examples and
../shared/data, trimmed so the whole corpus stays small. Re-run after a format gains a
feature worth seeding; the output is committed. Standard library only."""
import gzip
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")
FIX = os.path.join(ROOT, "tests", "fixtures")
SHARED = os.path.join(ROOT, "..", "shared", "data")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))


def read(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        return f.read()


def head_lines(path, n):
    return b"".join(read(path).splitlines(keepends=True)[:n])


# ---- safetensors: a real HF-written header, keeping its small tensors and their bytes ----
def safetensors_bytes(tensors, metadata=None):
    header, blob = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + blob


def small_tensors(path, limit_bytes, count):
    raw = read(path)
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    kept = []
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        if e - b <= limit_bytes:
            kept.append((name, t["dtype"], t["shape"], data[b:e]))
        if len(kept) == count:
            break
    return kept, header.get("__metadata__")


def seed_safetensors():
    for model in ("bert-seq-cls", "gpt2-causal-lm", "albert-pretraining"):
        tensors, meta = small_tensors(os.path.join(FIX, model, "model.safetensors"), 512, 6)
        put("safetensors_header", model + ".safetensors", safetensors_bytes(tensors, meta))
    f16 = struct.pack("<4H", 0x3C00, 0x4000, 0xBC00, 0x7C00)  # 1, 2, -1, inf
    bf16 = struct.pack("<2H", 0x3F80, 0xFF80)                  # 1, -inf
    put("safetensors_header", "dtypes.safetensors", safetensors_bytes([
        ("h", "F16", [2, 2], f16), ("b", "BF16", [2], bf16), ("i", "I64", [1], struct.pack("<q", -7)),
        ("d", "F64", [], struct.pack("<d", 0.5)), ("e", "F32", [0, 3], b""), ("m", "BOOL", [2], b"\x01\x00")],
        {"format": "pt"}))
    put("safetensors_header", "empty.safetensors", safetensors_bytes([]))


def seed_index():
    weight_map = {"embeddings.weight": "model-00001-of-00002.safetensors",
                  "encoder.layer.0.bias": "model-00001-of-00002.safetensors",
                  "classifier.weight": "model-00002-of-00002.safetensors"}
    put("safetensors_index", "index.json",
        json.dumps({"metadata": {"total_size": 40}, "weight_map": weight_map}, indent=2))
    put("safetensors_index", "missing_tensor.json",
        json.dumps({"metadata": {"total_size": 8}, "weight_map": {"pooler.dense.weight": "model-00002-of-00002.safetensors"}}))


def seed_configs():
    for model in sorted(os.listdir(FIX)):
        cfg = os.path.join(FIX, model, "config.json")
        if os.path.isfile(cfg):
            put("model_config", model + ".json", read(cfg))


# ---- tokenizers: the reference ones with their vocabularies cut to the first ids ----
def trim_tokenizer(j, keep):
    m = j["model"]
    if m["type"] == "Unigram":
        m["vocab"] = m["vocab"][:keep]
    else:
        m["vocab"] = {t: i for t, i in m["vocab"].items() if i < keep}
    if m["type"] == "BPE":
        merges = []
        for mg in m["merges"]:
            a, b = mg.split(" ", 1) if isinstance(mg, str) else mg
            if a in m["vocab"] and b in m["vocab"] and a + b in m["vocab"]:
                merges.append(mg)
        m["merges"] = merges
    j["added_tokens"] = [t for t in j.get("added_tokens", []) if t["id"] < keep]
    return j


def seed_tokenizers():
    ref = os.path.join(FIX, "tokenizers", "reference")
    for name in sorted(os.listdir(ref)):
        path = os.path.join(ref, name, "tokenizer.json")
        if os.path.isfile(path):
            j = trim_tokenizer(json.loads(read(path)), 300)
            put("tokenizer_json", name + ".json", json.dumps(j, ensure_ascii=False))
    syn = os.path.join(FIX, "tokenizers", "synthetic")
    for name in sorted(os.listdir(syn)):
        if name.endswith(".json") and not name.endswith(".expected.jsonl"):
            put("tokenizer_json", name, read(os.path.join(syn, name)))
    vocab_txt = read(os.path.join(ref, "bert-wordpiece-8k", "vocab.txt")).splitlines(keepends=True)
    put("vocab_txt", "bert-wordpiece-8k.txt", b"".join(vocab_txt[:300] + [l for l in vocab_txt if l.startswith(b"##")][:100]))
    bpe = os.path.join(SHARED, "tokenizers", "bpe-8k")
    vocab = {t: i for t, i in json.loads(read(os.path.join(bpe, "vocab.json"))).items() if i < 400}
    merges = [l for l in read(os.path.join(bpe, "merges.txt")).decode().splitlines()
              if l.startswith("#") or (len(l.split(" ")) == 2 and all(p in vocab for p in l.split(" "))
                                       and "".join(l.split(" ")) in vocab)]
    put("vocab_merges", "bpe-8k", json.dumps(vocab, ensure_ascii=False).encode() + b"\0" + "\n".join(merges).encode())


# ---- regex patterns (as Split / Replace components use them) and texts ----
PATTERNS = {
    "gpt2": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    "llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "cl100k": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "o200k": r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "bert_punct": r"[\p{P}\p{S}]|\w+|\s+",
    "digits": r"\d{1,3}(?=(?:\d{3})*\b)",
    "whitespace": r"\w+|[^\w\s]+",
    "metaspace": r"\u2581?[^\u2581]+",
    "deepseek": r"[\r\n]|\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕ]+|\s?[!-/:-~！-／：-～‘-‟　-。]+|\s+$|[一-龥ࠀ-一가-퟿]+|\p{N}+",
    "casefold": r"(?i)stra\u00DFe|STRASSE|\u212Aelvin|(?i:'s|'t)|[\u01C5]+|\u03C3+|[^\p{Lu}a-c]+|\w+",
    "lazy_look": r"(?:a|ab)*?c|(?=\d)\w+?\b|\s*?$|(?<n>\p{Lu})\p{Ll}*(?!\p{Ll})|[\x{1F600}-\x{1F64F}]+",
    "features": r"(?>a+)b|(?i)[ſk]+|x{2,3}?|y*+z|(?!q)\w|^\s*$|\A\h+\Z|[^\p{^Lu}]|\P{N}+",
}


def seed_regex():
    rows = [json.loads(l) for l in read(os.path.join(FIX, "tokenizers", "strings.jsonl")).decode().split("\n") if l.strip()]
    texts = [r["text"] for r in rows if "text" in r]
    sample = "\n".join(t for t in texts[:40])[:2000]
    for name, pat in PATTERNS.items():
        put("regex_match", name, pat.encode() + b"\0" + sample.encode())
    # Case folding: one character to two (U+00DF and "ss"), three-way orbits (s, S, U+017F; k,
    # K, U+212A), titlecase U+01C5, final sigma.
    put("regex_match", "casefold_text", PATTERNS["casefold"].encode() + b"\0" +
        "Stra\u00DFe STRASSE strasse \u017Ftra\u00DFe KELVIN \u212Aelvin 's 'S '\u017F \u01C4\u01C5\u01C6 \u03C3\u03C2\u03A3".encode())
    for i, t in enumerate(texts):
        put("tokenizer_encode", "strings_%03d" % i, t)
    put("tokenizer_encode", "invalid_utf8", b"ok \xff\xfe \xc3( \xe2\x82 \xf0\x9f\x98 end")


# ---- data files, the YAML job spec, strata step's batch ----
def seed_data():
    put("csv", "spam_train.csv", head_lines(os.path.join(SHARED, "spam", "train.csv.gz"), 12))
    put("csv", "austen_train.csv", head_lines(os.path.join(ROOT, "examples", "austen", "data", "train.csv.gz"), 12))
    put("csv", "ids.tsv", head_lines(os.path.join(SHARED, "spam", "ids.tsv.gz"), 12))
    put("csv", "pair_multilabel.csv", 'text,pair,label\n"a, quoted ""text""",second,"[0, 1]"\nplain,x,"[1, 1]"\r\n\r\n'
                                       '"multi\nline",y,"[0, 0]"\n')
    put("jsonl", "spam_train.jsonl", head_lines(os.path.join(SHARED, "spam", "train.jsonl.gz"), 8))
    put("jsonl", "pos_train.jsonl", head_lines(os.path.join(ROOT, "examples", "pos", "data", "train.jsonl.gz"), 4))
    put("jsonl", "qa_train.jsonl", head_lines(os.path.join(ROOT, "examples", "qa", "data", "train.jsonl.gz"), 3))
    put("jsonl", "regression.jsonl", '{"text": "good", "pair": "x", "label": 0.5}\r\n\n{"text": "bad", "pair": "y", "label": -1.25}\n')
    for name in ("spam.yaml", "spam_spot.yaml"):
        put("job_spec", name, read(os.path.join(ROOT, "examples", "jobs", name)))
    train = read(os.path.join(ROOT, "examples", "spam", "train.yaml")).decode()
    inline = "".join("  " + l + "\n" for l in train.splitlines() if l.strip() and not l.startswith("#"))
    put("job_spec", "inline.yaml", "base_job_name: inline\ninstance_type: local.c2\ninstance_count: 2\n"
        "backend: local\nenvironment:\n  OMP_NUM_THREADS: '1'\ndistribution:\n  dataparallel:\n    enabled: true\n"
        "hyperparameters:\n  learning_rate: 1.0e-4\n  max_steps: 5\ntraining_config:\n" + inline)
    for name in sorted(os.listdir(FIX)):
        if name.endswith(".inputs.json") and name.split(".")[0] in (
                "bert-seq-cls", "bert-seq-cls-regression", "bert-token-cls", "bert-qa", "gpt2-causal-lm",
                "albert-pretraining"):
            put("batch_json", name, read(os.path.join(FIX, name)))


# ---- PyTorch's pytorch_model.bin: the small files torch.save wrote for the reader's tests ----
def seed_torch_bin():
    for name in ("shared-storage.bin", "transposed.bin", "calls-os-system.bin"):
        put("torch_bin", name, read(os.path.join(FIX, "torch_bin", name)))


def main():
    for f in (seed_safetensors, seed_index, seed_configs, seed_tokenizers, seed_regex, seed_data, seed_torch_bin):
        f()
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs)
    print("fuzz/corpus: %d bytes" % total, file=sys.stderr)


if __name__ == "__main__":
    main()
