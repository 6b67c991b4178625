"""Algorithm 1 of the ATOMR paper (Atomic Reasoning Execution) as one table.

Every step of a tree node ends with an outcome; the table says what the node does next.
``DONE`` settles the node. A :class:`Switch` row is one of atomgraph's additions: it applies
only when its context field is on (all are off by default, so the table reads as the paper).

| step | outcome | next | Algorithm 1 |
|---|---|---|---|
| select | leaf | operate | l.5–8: sources chosen, run the atomic operator |
| select | fallback | rag | l.19–21: sources chosen for direct RAG |
| operate | answered | DONE | l.8 |
| operate | empty | DONE (``unknown_leaf_rag``: rag) | the operator said Unknown: no failure |
| operate | failed | rag | l.9–10: operator execution failure (no evidence from any selected source, a failed call, an unreadable reply) |
| operate | skipped | DONE | a referenced node has no answer: no call over an empty reference |
| children | answered | DONE | l.17 |
| children | empty / failed | select → rag | l.18–21: child-answer reasoning said Unknown |
| siblings | answered / empty / failed | DONE (``dr_unknown_rag``: select → rag) | l.14–15: no fallback |
| rag | any | DONE | l.10, l.21 |
| root | empty | closed_book (``closed_book_root``) | the authors' direct answer when the root ends empty |
| closed_book | any | DONE | |

An unreadable plan (before any of this) leaves the run without a tree and with ``error``
set, as the authors score it empty; ``plan_failure_rag`` answers it by direct RAG instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from atomgraph.state.atomr import AtomRContext, NodeRun

DONE = None


@dataclass(frozen=True)
class Switch:
    """Go to ``then`` only when context field ``name`` is on; otherwise settle."""

    name: str
    then: str


ALGORITHM_1: dict[tuple[str, str], str | Switch | None] = {
    ("select", "leaf"): "operate",
    ("select", "fallback"): "rag",
    ("operate", "answered"): DONE,
    ("operate", "empty"): Switch("unknown_leaf_rag", "rag"),
    ("operate", "failed"): "rag",
    ("operate", "skipped"): DONE,
    ("children", "answered"): DONE,
    ("children", "empty"): "select",
    ("children", "failed"): "select",
    ("children", "skipped"): "select",
    ("siblings", "answered"): DONE,
    ("siblings", "empty"): Switch("dr_unknown_rag", "select"),
    ("siblings", "failed"): Switch("dr_unknown_rag", "select"),
    ("siblings", "skipped"): Switch("dr_unknown_rag", "select"),
    ("rag", "answered"): DONE,
    ("rag", "empty"): DONE,
    ("rag", "failed"): DONE,
    ("rag", "skipped"): DONE,
    ("root", "empty"): Switch("closed_book_root", "closed_book"),
    ("closed_book", "answered"): DONE,
    ("closed_book", "empty"): DONE,
    ("closed_book", "failed"): DONE,
}

# Why a node went to direct RAG, by the row that sent it (the trace's ``fallback``).
FALLBACK_REASONS = {
    ("operate", "failed"): "operator failure",
    ("operate", "empty"): "operator answered Unknown (unknown_leaf_rag)",
    ("children", "empty"): "child reasoning answered Unknown",
    ("children", "failed"): "child reasoning failed",
    ("children", "skipped"): "child reasoning failed",
    ("siblings", "empty"): "[DR] answered Unknown (dr_unknown_rag)",
    ("siblings", "failed"): "[DR] failed (dr_unknown_rag)",
    ("siblings", "skipped"): "[DR] failed (dr_unknown_rag)",
}


def _resolve(row, params: AtomRContext):
    if isinstance(row, Switch):
        return row.then if getattr(params, row.name) else DONE
    return row


def advance(run: NodeRun, step: str, outcome: str, params: AtomRContext, *, is_root: bool,
            problem: str | None = None) -> NodeRun:
    """Move ``run`` on after ``step`` ended with ``outcome`` (Algorithm 1's table)."""
    nxt = _resolve(ALGORITHM_1[(step, outcome)], params)
    if nxt in ("rag", "select") and step != "select":
        reason = FALLBACK_REASONS.get((step, outcome), outcome)
        run.fallback = f"{reason}: {problem}" if problem else reason
    if nxt is DONE and is_root and not run.answers and step != "closed_book":
        nxt = _resolve(ALGORITHM_1[("root", "empty")], params)
    run.step = nxt
    return run
