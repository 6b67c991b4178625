"""The comparison retrievers of ARM's experiments (Appendix D.2): dense and BM25, and the
result type every object retriever returns (:class:`RetrievalResult`).

ARM's own retrieval is the ``arm`` graph (:func:`atomgraph.graphs.arm.arm_retriever`, with or
without a model); :func:`atomgraph.graphs.arm.retrieve` picks one of the three by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from atomgraph.nodes.arm.information_alignment import _top
from atomgraph.tools.arm_index import ArmIndex, stopwords, tokens
from atomgraph.tools.objects import Question


@dataclass
class RetrievalResult:
    """Retrieved object ids, best first, with their scores and a trace of how."""

    method: str
    ids: list[str]
    scores: list[float]
    trace: dict[str, Any] = field(default_factory=dict)


def _question_text(question: Question | str) -> str:
    return question.question if isinstance(question, Question) else str(question or "")


def dense_retrieve(question: Question | str, index: ArmIndex, k: int = 5) -> RetrievalResult:
    """Top-k objects by cosine similarity of the question to their best chunk (Appendix D.2)."""
    scores = index.dense_scores(_question_text(question))
    top = _top(scores, k)
    return RetrievalResult("dense", [index.objects[i].id for i in top], [float(scores[i]) for i in top])


def bm25_retrieve(question: Question | str, index: ArmIndex, k: int = 5) -> RetrievalResult:
    """Top-k objects by BM25 over the question's tokens (stopwords dropped)."""
    stop = stopwords()
    q = [t for t in tokens(_question_text(question)) if t not in stop]
    scores = index.bm25_scores(q)
    top = _top(scores, k)
    return RetrievalResult("bm25", [index.objects[i].id for i in top], [float(scores[i]) for i in top])


METHODS = ("dense", "bm25", "arm")
