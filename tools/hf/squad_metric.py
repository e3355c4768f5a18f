"""The official SQuAD v1.1 evaluation (what HF `evaluate`'s squad metric calls), ported for the
oracle's scripts: answers normalised (lower case, no punctuation, no articles, single spaces),
exact match and token F1 against the best of the gold answers, as percentages over the questions.
Used by tests/fixtures/qa/make_qa_postprocess_reference.py and bench/hf_trainer_finetune.py."""
import collections
import re
import string


def normalize_answer(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def f1_v1(pred, gold):
    p, g = normalize_answer(pred).split(), normalize_answer(gold).split()
    same = sum((collections.Counter(p) & collections.Counter(g)).values())
    if same == 0:
        return 0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def squad_v1(preds, refs):
    """preds: {id: text}; refs: [{"id", "answers": [gold texts]}]; questions without a prediction score 0."""
    em = f1 = 0
    for r in refs:
        if r["id"] not in preds:
            continue
        em += max(normalize_answer(preds[r["id"]]) == normalize_answer(g) for g in r["answers"])
        f1 += max(f1_v1(preds[r["id"]], g) for g in r["answers"])
    return {"exact_match": 100.0 * em / len(refs), "f1": 100.0 * f1 / len(refs)}
