"""LLM-free ARM retrieval (§3.2 of the ARM paper), and the dense and BM25 baselines.

:func:`arm_retrieve` runs the retrieval half of ARM without a model:

1. keywords — given, replayed from the question's ``"keywords"`` (e.g. Spider's released
   LLM decomposition), or extracted from the question (maximal corpus n-gram spans);
2. information alignment (§3.2.1) — each keyword to its best corpus n-grams;
3. search objects — BM25 over the aligned n-grams ∪ the top objects by embedding
   similarity to the question, then expanded (§3.2.2, "Constructing multiple alignment
   drafts") with the most compatible objects of the best candidates: passages whose title
   a candidate mentions (or that mention it), tables joinable with it;
4. relevance R_i (min-max normalised BM25 and cosine similarity, mixed by ``bm25_weight``,
   plus ``database_weight`` × the best R of the table's database, :func:`database_relevance`)
   and compatibility C_ij (:func:`~atomgraph.nodes.arm.structure.compatibility_matrix`);
5. structure alignment (§3.2.2) — the MIP chooses k objects.

The result carries a trace of every step (keywords and their source, aligned n-grams,
candidates with scores, MIP status and time, the chosen ids). Drafts, self-verification and
voting (§3.3) need the model and are built on top of this by the ``arm`` graph.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from atomgraph.nodes.arm.alignment import align_keyword, extract_keywords
from atomgraph.nodes.arm.pool import Scores, _top, base_pool, solve_drafts, vote_drafts
from atomgraph.nodes.arm.pool import database_relevance, neighbours  # noqa: F401 - re-exported
from atomgraph.state.arm import ArmContext
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


def resolve_keywords(question: Question | str, index: ArmIndex, keywords: Sequence[str] | None, limit: int) -> tuple[list[str], str]:
    """The keywords to align and where they came from: ``given``, ``replayed`` (the question's
    ``"keywords"``) or ``question_ngrams`` (:func:`extract_keywords`)."""
    if keywords is not None:
        return [k for k in keywords if isinstance(k, str)][:limit], "given"
    if isinstance(question, Question) and question.keywords:
        return list(question.keywords)[:limit], "replayed"
    return extract_keywords(_question_text(question), index)[:limit], "question_ngrams"


def alignment_groups(kws: Sequence[str], index: ArmIndex, ctx: ArmContext, mode: str = "none") -> list[dict]:
    """LLM-free information alignment: each keyword with its list of corpus n-grams, as
    recorded in every trace: ``{"keyword", "ngrams", "scores", "mode"}``."""
    out = []
    for kw in kws:
        got = align_keyword(kw, index, per_keyword=ctx.ngrams_per_keyword, min_score=ctx.min_alignment_score)
        best: dict[str, float] = {}
        for a in got:
            if index.has_ngram(a.ngram):
                best[a.ngram] = max(best.get(a.ngram, 0.0), round(a.score, 4))
        if best:
            out.append({"keyword": kw, "ngrams": list(best), "scores": list(best.values()), "mode": mode})
    return out


def run_drafts(index: ArmIndex, question: str, alignment: Sequence[dict], ctx: ArmContext) -> tuple[Scores, dict[int, str], list[dict]]:
    """Retrieval and structure alignment from an alignment: the scores, the base set of
    search objects and one solved draft per expanded set (§3.2.2), shared by
    :func:`arm_retrieve` and the ``arm`` graph."""
    scores = Scores.of(index, question, [a["ngrams"] for a in alignment], ctx.bm25_weight)
    pool = base_pool(index, scores, ctx)
    return scores, pool, solve_drafts(index, pool, scores, ctx)



def distinct_drafts(drafts: Sequence[dict]) -> int:
    """How many drafts chose a different set of objects."""
    return len({frozenset(d["ids"]) for d in drafts})


def arm_retrieve(
    question: Question | str,
    index: ArmIndex,
    ctx: ArmContext | None = None,
    *,
    keywords: Sequence[str] | None = None,
) -> RetrievalResult:
    """ARM's retrieval without a model: alignment → search objects → drafts (R, C, MIP per
    expanded set) → a vote over the drafts (module doc)."""
    ctx = ctx or ArmContext()
    t0 = time.perf_counter()
    text = _question_text(question)
    kws, source = resolve_keywords(question, index, keywords, ctx.max_keywords)
    alignment = alignment_groups(kws, index, ctx)
    t1 = time.perf_counter()
    scores, pool, drafts = run_drafts(index, text, alignment, ctx)
    chosen = vote_drafts(drafts, ctx.k)
    R: dict[str, float] = {}
    for d in drafts:
        R.update(d["relevance"])
    trace = {
        "keywords": kws,
        "keyword_source": source,
        "alignment": alignment,
        "aligned": [{"keyword": a["keyword"], "ngram": g, "score": sc, "how": a["mode"]}
                    for a in alignment for g, sc in zip(a["ngrams"], a["scores"])],
        "candidates": [
            {"id": index.objects[p].id, "via": pool[p], "bm25": round(float(scores.bm25[p]), 4),
             "dense": round(float(scores.dense[p]), 4), "relevance": R.get(index.objects[p].id)}
            for p in pool
        ],
        "drafts": [{k: d[k] for k in ("draft", "steps", "ids", "links", "mip")} | {"pool_size": len(d["pool"])}
                   for d in drafts],
        "distinct_drafts": distinct_drafts(drafts),
        "links": drafts[0]["links"] if drafts else [],
        "mip": {k: v for k, v in drafts[0]["mip"].items() if k not in ("time_limited", "time_limit_s")} if drafts else {},
        "chosen": chosen,
        "stage_seconds": {"align": round(t1 - t0, 4), "drafts": round(time.perf_counter() - t1, 4)},
        "seconds": round(time.perf_counter() - t0, 4),
    }
    return RetrievalResult("arm", chosen, [float(R.get(i, 0.0)) for i in chosen], trace)


METHODS = ("dense", "bm25", "arm")


def retrieve(method: str, question: Question | str, index: ArmIndex, k: int = 5, ctx: ArmContext | None = None) -> RetrievalResult:
    """Dispatch to ``dense``, ``bm25`` or ``arm`` retrieval."""
    if method == "dense":
        return dense_retrieve(question, index, k)
    if method == "bm25":
        return bm25_retrieve(question, index, k)
    if method == "arm":
        ctx = ctx or ArmContext()
        if ctx.k != k:
            from dataclasses import replace

            ctx = replace(ctx, k=k)
        return arm_retrieve(question, index, ctx)
    raise ValueError(f"unknown retrieval method {method!r}; expected one of {', '.join(METHODS)}")
