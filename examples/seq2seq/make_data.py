#!/usr/bin/env python3
"""Builds the sequence-to-sequence example: a WordNet gloss -> the words it defines.

Reads ../shared/data/corpus/wordnet_glosses.txt.gz (one WordNet 3.0 synset per line:
`<lemma>, <lemma>, ... (<pos>): <gloss>`) and writes, deterministically (no randomness but
SHA-256 of fixed strings; gzip mtime 0):

  examples/seq2seq/data/{train,validation,test}.jsonl.gz   {"gloss": ..., "words": ...}

validation and test are in the repository; train (0.9 MB) is made by `examples/run.sh
gloss2word` when missing (the same bytes every time), to keep the tracked tree small.

`gloss` is the synset's gloss (its definition and WordNet's quoted usage examples), `words`
its lemmas as the line lists them ("rage"; "grade, ground level"). Kept: synsets of at most
MAX_LEMMAS lemmas whose gloss has MIN_WORDS..MAX_WORDS words, occurs once in the file, and has
a usage example in which the first lemma appears as a word: the model has to find, in the
example, the word the definition defines (and recall its synonyms), which a small model
learns in minutes. Ordered by sha256("gloss2word-v1:<line>"): the first N_VALIDATION go to
validation, the next N_TEST to test, the rest (at most N_TRAIN) to train.

Usage (from the repository root; Python 3 standard library only):
  python3 examples/seq2seq/make_data.py ../shared/data/corpus/wordnet_glosses.txt.gz
"""
import gzip
import hashlib
import io
import json
import os
import re
import sys

MAX_LEMMAS, MIN_WORDS, MAX_WORDS = 3, 4, 40
N_VALIDATION, N_TEST, N_TRAIN = 500, 500, 40000


def main(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f]
    counts = {}
    for l in lines:
        counts[l] = counts.get(l, 0) + 1
    rows = []
    for l in lines:
        head, sep, gloss = l.partition("): ")
        if not sep or counts[l] != 1:
            continue
        words, _, pos = head.rpartition(" (")
        lemmas = words.split(", ")
        n = len(gloss.split())
        if len(lemmas) > MAX_LEMMAS or not MIN_WORDS <= n <= MAX_WORDS:
            continue
        examples = " ".join(re.findall(r'"([^"]*)"', gloss))
        if lemmas[0] not in re.findall(r"[\w'-]+", examples):
            continue
        key = hashlib.sha256(("gloss2word-v1:" + l).encode()).hexdigest()
        rows.append((key, {"gloss": gloss, "words": words}))
    rows.sort(key=lambda r: r[0])
    assert len(rows) >= N_VALIDATION + N_TEST + 10000, len(rows)
    splits = {"validation": rows[:N_VALIDATION], "test": rows[N_VALIDATION:N_VALIDATION + N_TEST],
              "train": rows[N_VALIDATION + N_TEST:N_VALIDATION + N_TEST + N_TRAIN]}
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    os.makedirs(out, exist_ok=True)
    for name, split in splits.items():
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for _, r in split)
        with open(os.path.join(out, name + ".jsonl.gz"), "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
                gz.write(text.encode("utf-8"))
        print(f"{name}: {len(split)} examples")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/corpus/wordnet_glosses.txt.gz")
