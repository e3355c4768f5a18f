"""Does strata's tokenizer give the HF tokenizers library's ids and offsets for a real model's
tokenizer on the bundled texts (spam, QA contexts and questions, POS sentences, supersense)?

    $(scripts/bench_python.sh) tools/hf/compare_tokenizer.py TOKENIZER_DIR [--strata build/strata]

Runs `strata tokenize` over every text and `tokenizers.Tokenizer.from_file` (PyPI tokenizers)
over the same, without the truncation and padding a tokenizer.json may store (transformers sets
both per call, and strata's training sets them from max_seq_length), and prints how many texts
and tokens differ. Exits 1 if any does.
"""

import argparse
import csv
import gzip
import json
import os
import subprocess
import sys
import tempfile

from tokenizers import Tokenizer

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def bundled_texts():
    ex = os.path.join(REPO, "examples")
    for split in ("train", "validation", "test"):
        with gzip.open(os.path.join(ex, "spam", "data", split + ".csv.gz"), "rt", encoding="utf-8", newline="") as f:
            yield from (r["text"] for r in csv.DictReader(f))
    for name in sorted(os.listdir(ex)):
        data = os.path.join(ex, name, "data")
        if name == "spam" or not os.path.isdir(data):
            continue
        for file in sorted(os.listdir(data)):
            if not file.endswith(".jsonl.gz"):
                continue
            with gzip.open(os.path.join(data, file), "rt", encoding="utf-8") as f:
                for line in f:
                    r = json.loads(line)
                    for key in ("context", "question", "text"):
                        if isinstance(r.get(key), str):
                            yield r[key]
                    words = r.get("tokens") or r.get("words")
                    if isinstance(words, list):
                        yield " ".join(words)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tokenizer_dir")
    ap.add_argument("--strata", default=os.path.join(REPO, "build", "strata"))
    args = ap.parse_args()
    texts = list(bundled_texts())
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "texts.jsonl"), os.path.join(tmp, "ids.jsonl")
        with open(src, "w", encoding="utf-8") as f:
            for t in texts:
                f.write(json.dumps({"text": t}) + "\n")
        subprocess.run([args.strata, "tokenize", "--tokenizer", args.tokenizer_dir, "--input", src, "--output", out],
                       check=True)
        ours = [json.loads(line) for line in open(out, encoding="utf-8")]
    tok = Tokenizer.from_file(os.path.join(args.tokenizer_dir, "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    differ = tokens = 0
    for text, o in zip(texts, ours):
        e = tok.encode(text)
        tokens += len(e.ids)
        if e.ids != o["input_ids"] or [list(x) for x in e.offsets] != o["offsets"]:
            differ += 1
            if differ <= 3:
                print("differs:", repr(text[:60]), file=sys.stderr)
    print(f"{args.tokenizer_dir}: {len(texts)} texts, {tokens} tokens; {differ} texts differ in ids or offsets")
    return 1 if differ or len(ours) != len(texts) else 0


if __name__ == "__main__":
    sys.exit(main())
