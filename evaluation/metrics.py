"""Answer metrics (EM, token-level F1, cover-EM) and retrieval metrics over titles.

Answers are normalised the way the ATOMR authors scored their runs: lower case, hyphens
turned into spaces, punctuation and the articles a/an/the removed, whitespace collapsed — after
the text is read as a reader sees it: Unicode NFC (canonical composition: "e" + U+0301 is "é"), and
hidden characters (format characters such as zero-width spaces, BOM, soft hyphens, bidi marks and
the TAG block; private-use and unassigned code points: :func:`atomgraph.text.clean_hidden`) dropped,
so "Munich\u200b" scores as "Munich". On the five released prediction files this changes no score
(``tests/test_eval_metrics.py``). Compatibility folding (NFKC) is not applied: it changes what a
reader sees ("km²" becomes "km2") and would score HotpotQA's released file 71.37, not the authors' 71.27.
Each score is the maximum over the gold answers. A list answer is scored as the methods
print it: its items joined with ", ".

>>> round(f1_score("the Eiffel tower", ["Eiffel Tower, Paris"]), 3)
0.8
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from typing import Callable, Iterable, Sequence

from atomgraph.text import clean_hidden

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")

Answer = str | Sequence[str] | None


def normalize_answer(text: str) -> str:
    """NFC, hidden characters dropped; lower case, hyphens→spaces, no punctuation or articles, single spaces."""
    text = clean_hidden(unicodedata.normalize("NFC", str(text)))[0]
    text = text.lower().replace("-", " ")
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_text(answer: Answer) -> str:
    """A prediction as one string (lists joined with ", ", None → "")."""
    if answer is None:
        return ""
    if isinstance(answer, str):
        return answer
    return ", ".join(str(a) for a in answer)


def _golds(gold: Answer) -> list[str]:
    if gold is None:
        return []
    if isinstance(gold, str):
        return [gold]
    return [str(g) for g in gold]


def _token_f1(pred: str, gold: str) -> float:
    p, g = normalize_answer(pred).split(), normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: Answer, gold: Answer) -> float:
    """1.0 when the normalised prediction equals some normalised gold answer."""
    pred = normalize_answer(answer_text(prediction))
    return max((float(pred == normalize_answer(g)) for g in _golds(gold)), default=0.0)


def f1_score(prediction: Answer, gold: Answer) -> float:
    """Token-level F1, the best over the gold answers."""
    pred = answer_text(prediction)
    return max((_token_f1(pred, g) for g in _golds(gold)), default=0.0)


def cover_em(prediction: Answer, gold: Answer) -> float:
    """1.0 when some normalised gold answer appears, as whole tokens, in the prediction."""
    pred = f" {normalize_answer(answer_text(prediction))} "
    for g in _golds(gold):
        ng = normalize_answer(g)
        if ng and f" {ng} " in pred:
            return 1.0
    return 0.0


def answer_scores(prediction: Answer, gold: Answer) -> dict[str, float]:
    """``{"em", "f1", "cover_em"}`` for one example. No answer (an empty or blank prediction,
    what an errored example records) scores 0 whatever the gold: a gold that normalises to
    nothing ("The The" in hotpotqa-dev-100) would otherwise match it."""
    preds = [prediction] if isinstance(prediction, str) else list(prediction or [])
    if not any(str(p).strip() for p in preds):
        return {"em": 0.0, "f1": 0.0, "cover_em": 0.0}
    return {
        "em": exact_match(prediction, gold),
        "f1": f1_score(prediction, gold),
        "cover_em": cover_em(prediction, gold),
    }


# --- retrieval ---------------------------------------------------------------------------

def normalize_title(title: str) -> str:
    """Titles compare case-insensitively, with underscores as spaces (URL titles)."""
    return " ".join(str(title).replace("_", " ").casefold().split())


def retrieval_scores(retrieved: Iterable[str], gold: Iterable[str],
                     key: Callable[[str], str] = normalize_title) -> dict[str, float] | None:
    """Precision, recall, F1 and perfect recall of retrieved titles against gold titles
    (``key=str``: object ids, compared exactly).

    Duplicates count once. Returns None when there is no gold (nothing to score).
    """
    gold_set = {key(t) for t in gold if str(t).strip()}
    if not gold_set:
        return None
    got = {key(t) for t in retrieved if str(t).strip()}
    hit = len(got & gold_set)
    precision = hit / len(got) if got else 0.0
    recall = hit / len(gold_set)
    f1 = 2 * precision * recall / (precision + recall) if hit else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "perfect_recall": float(hit == len(gold_set)),
    }


# --- aggregation -------------------------------------------------------------------------

ANSWER_KEYS = ("em", "f1", "cover_em")
RETRIEVAL_KEYS = ("precision", "recall", "f1", "perfect_recall")


def mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def aggregate_scores(records: Sequence[dict], *, type_key: str = "question_type") -> dict:
    """Mean answer scores (in percent) overall and per question type, plus retrieval means.

    Each record holds ``metrics`` (``em``/``f1``/``cover_em`` and optionally ``retrieval``)
    and optionally a question type under ``type_key``.
    """
    out: dict = {"n": len(records)}
    for key in ANSWER_KEYS:
        out[key] = 100 * mean(r["metrics"].get(key, 0.0) for r in records)
    by_type: dict[str, list[dict]] = {}
    for r in records:
        t = r.get(type_key)
        if t:
            by_type.setdefault(str(t), []).append(r)
    out["by_type"] = {
        t: {"n": len(rs), **{k: 100 * mean(x["metrics"].get(k, 0.0) for x in rs) for k in ANSWER_KEYS}}
        for t, rs in sorted(by_type.items())
    }
    scored = [r["metrics"]["retrieval"] for r in records if r["metrics"].get("retrieval")]
    if scored:
        out["retrieval"] = {"n": len(scored), **{k: 100 * mean(s[k] for s in scored) for k in RETRIEVAL_KEYS}}
    return out
