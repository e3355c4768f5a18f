#!/usr/bin/env python3
"""Builds the extractive question-answering example from the WordNet 3.0 glosses.

Each context is a window of CONTEXT_LINES consecutive lines of wordnet_glosses.txt.gz, joined
with newlines, as they are in the file:

  killing, kill, putting to death (noun): the act of terminating a life
  storm, force (verb): take by force; "Storm the fort"

A line is `<lemmas> (<pos>): <definition>[; "<example>"; ...]`. Questions about the window
(answers are spans of the context, SQuAD style, answer_start in code points = Python str
indices; the glosses are ASCII, so also bytes):

  define   "What does <lemma> mean?"              -> the definition of the line with that lemma
  word     "Which word means <definition>?"       -> every lemma of that line (several answers)
  usage    "How is <lemma> used in a sentence?"   -> the line's first quoted example (no quotes)

and, for the SQuAD v2 files only, one unanswerable question per context: either "What does
<lemma> mean?" for a lemma of another context that the window does not contain, or "How is
<lemma> used in a sentence?" for a lemma of the window whose line has no example.

A lemma is asked about only when no other line of the window has it as a lemma; definitions,
examples and lemmas must be free of double quotes and short (MAX_ANSWER_WORDS words). Windows
are the non-overlapping runs of CONTEXT_LINES lines starting at line 1; those whose lines are
all well formed and short enough are ordered by sha256("wn-qa-v1:<first line>") and the first
ones go to train, validation and test (CONTEXTS). Choices within a window come from Python's
random.Random seeded with the window's hash. Output (gzip, mtime 0): data/{train,validation,
test}.jsonl.gz (every question answerable) and data/{train,validation,test}_v2.jsonl.gz (the
same rows plus the unanswerable ones), one JSON object a line:
{"id", "question", "context", "answers": {"text": [...], "answer_start": [...]}}.

Usage (from the repository root; Python 3 standard library only):
  python3 examples/qa/make_data.py ../shared/data/corpus/wordnet_glosses.txt.gz
"""
import gzip
import hashlib
import json
import os
import random
import re
import sys

CONTEXT_LINES = 4
MAX_LINE_CHARS = 220
MAX_CONTEXT_CHARS = 700
MAX_ANSWER_WORDS = 20
CONTEXTS = {"train": 1500, "validation": 150, "test": 150}
QUESTIONS_PER_CONTEXT = 2
LINE = re.compile(r"^(.*?) \((noun|verb|adj|adv)\): (.*)$")
EXAMPLES = re.compile(r'^"[^"]+"(; "[^"]+")*$')


def parse(line, offset):
    """The spans of one gloss line, as (text, start in the context) pairs; None if malformed."""
    m = LINE.match(line)
    if not m:
        return None
    lemmas_text, pos, gloss = m.groups()
    cut = gloss.find('; "')
    definition = gloss if cut < 0 else gloss[:cut]
    rest = "" if cut < 0 else gloss[cut + 2:]
    if '"' in definition or not definition.strip() or (rest and not EXAMPLES.match(rest)):
        return None
    g0 = offset + m.start(3)
    lemmas, at = [], offset
    for lem in lemmas_text.split(", "):
        lemmas.append((lem, at))
        at += len(lem) + 2
    examples = []
    if rest:
        r0 = g0 + cut + 2
        examples = [(m.group(1), r0 + m.start(1)) for m in re.finditer(r'"([^"]+)"', rest)]
    return {"lemmas": lemmas, "pos": pos, "definition": (definition, g0), "examples": examples}


def short(text):
    return len(text.split()) <= MAX_ANSWER_WORDS


def answers(spans):
    return {"text": [t for t, _ in spans], "answer_start": [s for _, s in spans]}


def questions(lines, rng):
    """Answerable questions about one window: QUESTIONS_PER_CONTEXT of them on distinct lines."""
    count = {}
    for ln in lines:
        for lem, _ in ln["lemmas"]:
            count[lem] = count.get(lem, 0) + 1
    out = []
    for ln in rng.sample(lines, len(lines)):
        own = [lem for lem, _ in ln["lemmas"] if count[lem] == 1 and '"' not in lem]
        kinds = []
        if own and short(ln["definition"][0]):
            kinds += ["define"] * 9
        if short(ln["definition"][0]) and all(count[lem] == 1 for lem, _ in ln["lemmas"]):
            kinds += ["word"] * 6
        if own and ln["examples"] and short(ln["examples"][0][0]):
            kinds += ["usage"] * 20
        if not kinds:
            continue
        kind = rng.choice(kinds)
        if kind == "define":
            out.append(("define", f"What does {rng.choice(own)} mean?", [ln["definition"]]))
        elif kind == "word":
            out.append(("word", f"Which word means {ln['definition'][0]}?", ln["lemmas"]))
        else:
            out.append(("usage", f"How is {rng.choice(own)} used in a sentence?", [ln["examples"][0]]))
        if len(out) == QUESTIONS_PER_CONTEXT:
            return out
    return None


def unanswerable(context, lines, other_lemmas, rng):
    no_example = [lem for ln in lines if not ln["examples"] for lem, _ in ln["lemmas"]
                  if '"' not in lem and sum(lem == l2 for x in lines for l2, _ in x["lemmas"]) == 1]
    if no_example and rng.random() < 0.5:
        return "no-example", f"How is {rng.choice(no_example)} used in a sentence?"
    absent = [lem for lem in other_lemmas if lem.lower() not in context.lower() and '"' not in lem]
    return ("absent-lemma", f"What does {rng.choice(absent)} mean?") if absent else None


def write_jsonl_gz(path, rows):
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as f:
            for r in rows:
                f.write((json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8"))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with gzip.open(sys.argv[1], "rt", encoding="utf-8", newline="\n") as f:
        glosses = f.read().rstrip("\n").split("\n")
    windows = []
    for first in range(0, len(glosses) - CONTEXT_LINES + 1, CONTEXT_LINES):
        raw = glosses[first:first + CONTEXT_LINES]
        context = "\n".join(raw)
        if max(map(len, raw)) > MAX_LINE_CHARS or len(context) > MAX_CONTEXT_CHARS:
            continue
        lines, at = [], 0
        for line in raw:
            p = parse(line, at)
            if p is None:
                break
            lines.append(p)
            at += len(line) + 1
        if len(lines) == CONTEXT_LINES:
            h = hashlib.sha256(f"wn-qa-v1:{first + 1}".encode()).hexdigest()
            windows.append((h, first + 1, context, lines))
    windows.sort()

    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    os.makedirs(out_dir, exist_ok=True)
    stats = {}
    pos = 0
    for split, n in CONTEXTS.items():
        chosen = []
        while len(chosen) < n:
            h, first, context, lines = windows[pos]
            pos += 1
            rng = random.Random(int(h, 16))
            qs = questions(lines, rng)
            if qs:
                chosen.append((first, context, lines, qs, rng))
        v1, v2, kinds = [], [], {}
        for i, (first, context, lines, qs, rng) in enumerate(chosen):
            for k, (kind, q, spans) in enumerate(qs):
                for text, start in spans:
                    assert context[start:start + len(text)] == text, (first, q, text)
                row = {"id": f"{split}-{i:04d}-{k}", "question": q, "context": context, "answers": answers(spans)}
                v1.append(row)
                v2.append(row)
                kinds[kind] = kinds.get(kind, 0) + 1
            # another window of the same split supplies absent lemmas
            other = chosen[(i + 1) % len(chosen)][2]
            neg = unanswerable(context, lines, [lem for ln in other for lem, _ in ln["lemmas"]], rng)
            if neg:
                kinds["unanswerable " + neg[0]] = kinds.get("unanswerable " + neg[0], 0) + 1
                v2.append({"id": f"{split}-{i:04d}-n", "question": neg[1], "context": context,
                           "answers": {"text": [], "answer_start": []}})
        write_jsonl_gz(os.path.join(out_dir, f"{split}.jsonl.gz"), v1)
        write_jsonl_gz(os.path.join(out_dir, f"{split}_v2.jsonl.gz"), v2)
        stats[split] = {"contexts": len(chosen), "questions": len(v1), "questions_v2": len(v2),
                        "kinds": dict(sorted(kinds.items()))}
        print(split, json.dumps(stats[split]))
    with open(os.path.join(out_dir, "stats.json"), "w") as f:
        f.write(json.dumps({"eligible_windows": len(windows), **stats}, indent=2) + "\n")


if __name__ == "__main__":
    main()
