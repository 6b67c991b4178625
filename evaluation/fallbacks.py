"""Every fallback of a run, by kind, from its trace.

One reading serves eval summaries, reports and ``demo``. The kinds:

- ``plan failure`` — ATOMR's plan was unreadable (the run ends with no answer, as the authors
  score it) or too big for ``max_nodes`` / ``max_depth`` (direct RAG answered the question);
- ``node → direct RAG (<reason>)`` — an ATOMR node answered by direct RAG (Algorithm 1: an
  operator failure, child reasoning that said Unknown or failed);
- ``closed-book root`` — the ATOMR root ended empty and was answered closed-book;
- ``budget`` — the LLM-call budget stopped the run (no prediction, the partial tree);
- ``KAR³ closed-book`` — KAR³ answered with no chunk chosen (nothing retrieved);
- whatever a method records in ``trace["fallbacks"]`` (``{"stage", "reason"}``; the
  baselines' convention), by :func:`atomgraph.evaluation.runner.failure_kind`.

An entry with ``final`` set is where the prediction itself came from: a run whose answers all
came from such entries is "answered only by fallbacks" and says so on its first line.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence


def _head(text: str) -> str:
    return str(text).split(":", 1)[0].strip()[:80] or "unknown"


def fallbacks_in(trace: dict) -> list[dict]:
    """``[{"stage", "kind", "reason", "final"}]`` for every fallback recorded in ``trace``."""
    from atomgraph.evaluation.runner import failure_kind

    out: list[dict] = []
    if not isinstance(trace, dict):
        return out
    for f in trace.get("fallbacks") or []:
        if isinstance(f, dict) and f.get("reason"):
            kind = f.get("kind") or failure_kind(f["reason"])
            out.append({"stage": str(f.get("stage") or ""), "kind": str(kind), "reason": str(f["reason"])[:500],
                        "final": bool(f.get("final"))})
    if trace.get("plan_fallback"):
        detail = failure_kind(trace["plan_fallback"])
        out.append({"stage": "plan", "kind": "plan failure" + (f" ({detail})" if detail != "other" else ""),
                    "reason": str(trace["plan_fallback"])[:500], "final": True})
    nodes = [n for n in trace.get("nodes") or [] if isinstance(n, dict)]
    root = nodes[-1]["id"] if nodes else None  # topological order: the root is last
    for n in nodes:
        why = n.get("fallback")
        if not why or (trace.get("plan_fallback") and why == "direct RAG"):  # the plan failure's own RAG
            continue
        parts = [p.strip() for p in str(why).split(";")]
        is_root = n.get("id") == root or n.get("parent") is None
        rag = [p for p in parts if p and p != "closed-book answer"]
        if rag and not (n.get("kind") == "open"):
            detail = failure_kind(rag[0])
            head = _head(rag[0])
            kind = f"node → direct RAG ({head}{'; ' + detail if detail not in ('other', head) else ''})"
            out.append({"stage": "direct_rag", "kind": kind, "reason": str(why)[:500],
                        "final": is_root and "closed-book answer" not in parts})
        if "closed-book answer" in parts:
            out.append({"stage": "closed_book", "kind": "closed-book root", "reason": str(why)[:500], "final": True})
    if "partial" in trace:
        out.append({"stage": "budget", "kind": "budget", "reason": "the LLM-call budget stopped the run", "final": False})
    return out


def answered_by_fallback(record: dict) -> bool:
    """The record's prediction came from a fallback (direct RAG at the root, closed-book, a
    plan failure's direct RAG, KAR³'s closed-book answer)."""
    if record.get("error") or not str(record.get("predicted") or record.get("answer") or "").strip():
        return False
    return any(f["final"] for f in fallbacks_in(record.get("trace") or {}))


def count_fallbacks(records: Sequence[dict]) -> dict:
    """``{"by_kind": {kind: examples}, "answered_by_fallback": n, "answered": n}`` over ``records``."""
    kinds: Counter = Counter()
    for r in records:
        for kind in dict.fromkeys(f["kind"] for f in fallbacks_in(r.get("trace") or {})):
            kinds[kind] += 1
    answered = sum(1 for r in records if not r.get("error") and str(r.get("predicted") or "").strip())
    return {"by_kind": dict(kinds.most_common()), "answered": answered,
            "answered_by_fallback": sum(1 for r in records if answered_by_fallback(r))}


def headline(counts: dict) -> str | None:
    """The first line a user must read when fallbacks answered the run, or None."""
    n, by = counts.get("answered", 0), counts.get("answered_by_fallback", 0)
    if n and by == n:
        return f"WARNING: every answer of this run ({n} of {n}) came from a fallback, none from the method itself"
    if by:
        return f"note: {by} of {n} answers came from a fallback"
    return None
