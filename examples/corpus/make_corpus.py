#!/usr/bin/env python3
"""Builds the pretraining text and the held-out Austen novel-attribution task.

Reads the project's plain-text corpora (../shared/data/corpus: austen.txt.gz, one paragraph
per line, the six novels in publication order; wordnet_glosses.txt.gz, one WordNet synset per
line) and writes, deterministically (no randomness but SHA-256 of fixed strings; gzip mtime 0):

  examples/austen/data/{train,validation,test}.csv.gz   text,label  (label = the novel's title)
  examples/austen/data/ids.tsv.gz                       split, row, novel, line in austen.txt
  examples/corpus/pretrain.txt.gz                       every Austen paragraph that is not in
                                                        the task, then every WordNet gloss

Task paragraphs are drawn per novel from paragraphs of MIN_WORDS..MAX_WORDS whitespace words
whose text occurs once in the whole Austen file, ordered by sha256("austen-split-v1:<novel>:
<line>"): the first PER_NOVEL["train"] go to train, the next to validation, then test. Each
split file is then ordered by the same hash, so the labels are interleaved. The script checks
that no task paragraph is in the pretraining text and that the two outputs together hold every
line of both corpora exactly once.

Usage (from the repository root; Python 3 standard library only):
  python3 examples/corpus/make_corpus.py ../shared/data/corpus
"""
import csv
import gzip
import hashlib
import io
import json
import os
import sys
from collections import Counter

NOVELS = [  # (key in corpus_stats.json, label), in the file's order
    ("sensesensibility", "Sense and Sensibility"),
    ("prideprejudice", "Pride and Prejudice"),
    ("mansfieldpark", "Mansfield Park"),
    ("emma", "Emma"),
    ("northangerabbey", "Northanger Abbey"),
    ("persuasion", "Persuasion"),
]
MIN_WORDS, MAX_WORDS = 30, 120
PER_NOVEL = {"train": 200, "validation": 40, "test": 80}
SPLITS = ["train", "validation", "test"]


def read_lines(path):
    with gzip.open(path, "rt", encoding="utf-8", newline="\n") as f:
        text = f.read()
    assert text.endswith("\n"), path
    return text[:-1].split("\n")


def write_gz(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as f:
            f.write(text.encode("utf-8"))


def key(novel, line):
    return hashlib.sha256(f"austen-split-v1:{novel}:{line}".encode()).hexdigest()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    stats = json.load(open(os.path.join(src, "corpus_stats.json")))
    austen = read_lines(os.path.join(src, "austen.txt.gz"))
    glosses = read_lines(os.path.join(src, "wordnet_glosses.txt.gz"))
    counts = [stats["austen"][k]["paragraphs"] for k, _ in NOVELS]
    assert sum(counts) == len(austen), (sum(counts), len(austen))
    assert len(glosses) == stats["wordnet_glosses"]["lines"]

    seen = Counter(austen)
    split_rows = {s: [] for s in SPLITS}  # (hash, line index, label)
    start = 0
    for (name, label), n in zip(NOVELS, counts):
        cand = [i for i in range(start, start + n)
                if MIN_WORDS <= len(austen[i].split()) <= MAX_WORDS and seen[austen[i]] == 1]
        cand.sort(key=lambda i: key(name, i + 1))
        at = 0
        for s in SPLITS:
            take = cand[at:at + PER_NOVEL[s]]
            assert len(take) == PER_NOVEL[s], (name, s)
            split_rows[s] += [(key(name, i + 1), i, label) for i in take]
            at += PER_NOVEL[s]
        start += n

    held = set()
    ids = ["split\trow\tnovel\tline"]
    for s in SPLITS:
        rows = sorted(split_rows[s])
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["text", "label"])
        for r, (_, i, label) in enumerate(rows):
            w.writerow([austen[i], label])
            ids.append(f"{s}\t{r}\t{label}\t{i + 1}")
            held.add(i)
        write_gz(os.path.join(root, "examples/austen/data", s + ".csv.gz"), buf.getvalue())
    write_gz(os.path.join(root, "examples/austen/data/ids.tsv.gz"), "\n".join(ids) + "\n")

    pretrain = [p for i, p in enumerate(austen) if i not in held] + glosses
    held_texts = {austen[i] for i in held}
    assert not held_texts.intersection(pretrain), "a task paragraph is in the pretraining text"
    assert len(pretrain) + len(held) == len(austen) + len(glosses)
    write_gz(os.path.join(root, "examples/corpus/pretrain.txt.gz"), "\n".join(pretrain) + "\n")

    words = sum(len(p.split()) for p in pretrain)
    print(f"task paragraphs: " + ", ".join(f"{s} {len(split_rows[s])}" for s in SPLITS))
    print(f"pretrain.txt.gz: {len(pretrain)} lines ({len(austen) - len(held)} Austen paragraphs, "
          f"{len(glosses)} glosses), {words} words")


if __name__ == "__main__":
    main()
