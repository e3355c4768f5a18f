#!/usr/bin/env python3
"""Builds the pretraining text and the two held-out classification tasks.

Reads the project's plain-text corpora (../shared/data/corpus: austen.txt.gz, one paragraph
per line, the six novels in publication order; wordnet_glosses.txt.gz, one WordNet synset per
line, nouns first in data.noun order) and WordNet's data.noun (Debian wordnet-base, for each
noun synset's lexicographer file), and writes, deterministically (no randomness but SHA-256
of fixed strings; gzip mtime 0):

  examples/supersense/data/{train,validation,test}.csv.gz  text,label: a noun gloss line and
                                                           its supersense (8 classes)
  examples/austen/data/{train,validation,test}.csv.gz      text,label: a paragraph and its novel
  examples/{supersense,austen}/data/ids.tsv.gz             split, row, label, line in the source
  examples/corpus/pretrain.txt.gz                          every Austen paragraph and every
                                                           gloss that is in neither task

Supersense: noun synsets whose lexicographer file is one of SUPERSENSES, whose gloss line
occurs once in the file, ordered per class by sha256("supersense-v1:<line>"); the first
SS_PER_CLASS["train"] go to train, the next to validation, then test.
Austen: paragraphs of MIN_WORDS..MAX_WORDS whitespace words whose text occurs once in the file,
ordered per novel by sha256("austen-split-v1:<novel>:<line>"), split the same way.
Each split file is then in hash order, so labels are interleaved. The script checks that the
WordNet glosses line up with data.noun, that no task text is in the pretraining text, and that
the outputs together hold every line of both corpora exactly once.

Usage (from the repository root; Python 3 standard library only):
  apt-get install --no-install-recommends wordnet-base      # /usr/share/wordnet/data.noun
  python3 examples/corpus/make_corpus.py ../shared/data/corpus /usr/share/wordnet
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
# WordNet lexicographer file numbers (lexnames(5WN)) of the noun supersenses used as labels
SUPERSENSES = {5: "animal", 6: "artifact", 10: "communication", 13: "food", 15: "location",
               18: "person", 20: "plant", 27: "substance"}
SS_PER_CLASS = {"train": 100, "validation": 50, "test": 100}
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


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


def draw(groups, per_split):
    """groups: [(label, [(hash, line index), ...])] -> {split: [(hash, index, label)]}."""
    out = {s: [] for s in SPLITS}
    for label, cand in groups:
        cand = sorted(cand)
        at = 0
        for s in SPLITS:
            take = cand[at:at + per_split[s]]
            assert len(take) == per_split[s], (label, s)
            out[s] += [(h, i, label) for h, i in take]
            at += per_split[s]
    return out


def write_task(root, task, split_rows, texts, id_header):
    ids = [f"split\trow\t{id_header}\tline"]
    for s in SPLITS:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["text", "label"])
        for r, (_, i, label) in enumerate(sorted(split_rows[s])):
            w.writerow([texts[i], label])
            ids.append(f"{s}\t{r}\t{label}\t{i + 1}")
        write_gz(os.path.join(root, "examples", task, "data", s + ".csv.gz"), buf.getvalue())
    write_gz(os.path.join(root, "examples", task, "data", "ids.tsv.gz"), "\n".join(ids) + "\n")
    return {i for s in SPLITS for _, i, _ in split_rows[s]}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, wordnet = sys.argv[1], sys.argv[2]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    stats = json.load(open(os.path.join(src, "corpus_stats.json")))
    austen = read_lines(os.path.join(src, "austen.txt.gz"))
    glosses = read_lines(os.path.join(src, "wordnet_glosses.txt.gz"))
    counts = [stats["austen"][k]["paragraphs"] for k, _ in NOVELS]
    assert sum(counts) == len(austen), (sum(counts), len(austen))
    assert len(glosses) == stats["wordnet_glosses"]["lines"]

    # Noun supersenses: the glosses file starts with data.noun's synsets, in its order.
    with open(os.path.join(wordnet, "data.noun"), encoding="utf-8") as f:
        synsets = [line for line in f if not line.startswith("  ")]
    seen_g = Counter(glosses)
    groups = {name: [] for name in SUPERSENSES.values()}
    for i, syn in enumerate(synsets):
        head, _, gloss = syn.rstrip("\n").partition(" | ")
        assert glosses[i].endswith(" (noun): " + gloss.strip()), f"gloss line {i + 1} is not data.noun's synset"
        lex = int(head.split()[1])
        if lex in SUPERSENSES and seen_g[glosses[i]] == 1:
            groups[SUPERSENSES[lex]].append((sha(f"supersense-v1:{i + 1}"), i))
    ss_rows = draw(sorted(groups.items()), SS_PER_CLASS)
    held_g = write_task(root, "supersense", ss_rows, glosses, "supersense")

    seen_a = Counter(austen)
    groups, start = [], 0
    for (name, label), n in zip(NOVELS, counts):
        groups.append((label, [(sha(f"austen-split-v1:{name}:{i + 1}"), i) for i in range(start, start + n)
                               if MIN_WORDS <= len(austen[i].split()) <= MAX_WORDS and seen_a[austen[i]] == 1]))
        start += n
    au_rows = draw(groups, PER_NOVEL)
    held_a = write_task(root, "austen", au_rows, austen, "novel")

    pretrain = [p for i, p in enumerate(austen) if i not in held_a] + \
               [g for i, g in enumerate(glosses) if i not in held_g]
    held_texts = {austen[i] for i in held_a} | {glosses[i] for i in held_g}
    assert not held_texts.intersection(pretrain), "a task text is in the pretraining text"
    assert len(pretrain) + len(held_a) + len(held_g) == len(austen) + len(glosses)
    write_gz(os.path.join(root, "examples/corpus/pretrain.txt.gz"), "\n".join(pretrain) + "\n")

    words = sum(len(p.split()) for p in pretrain)
    for task, rows in (("supersense", ss_rows), ("austen", au_rows)):
        print(f"{task}: " + ", ".join(f"{s} {len(rows[s])}" for s in SPLITS))
    print(f"pretrain.txt.gz: {len(pretrain)} lines ({len(austen) - len(held_a)} Austen paragraphs, "
          f"{len(glosses) - len(held_g)} glosses), {words} words")


if __name__ == "__main__":
    main()
