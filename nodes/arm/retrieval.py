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

import numpy as np

from atomgraph.nodes.arm.alignment import align_keyword, extract_keywords
from atomgraph.nodes.arm.structure import compatibility_matrix, solve_structure, table_compatibility
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


def _top(scores: np.ndarray, k: int, *, positive: bool = False) -> list[int]:
    if k <= 0 or len(scores) == 0:
        return []
    order = np.argsort(-scores, kind="stable")[:k]
    return [int(i) for i in order if not positive or scores[i] > 0]


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


def _minmax(x: np.ndarray) -> np.ndarray:
    if len(x) == 0:
        return x
    lo, hi = float(np.min(x)), float(np.max(x))
    return np.zeros_like(x) if hi - lo < 1e-12 else (x - lo) / (hi - lo)


def _mentioned_by(index: ArmIndex) -> list[list[int]]:
    if not hasattr(index, "_mentioned_by"):
        back: list[list[int]] = [[] for _ in index.objects]
        for i, targets in enumerate(index.mentions):
            for j in targets:
                back[j].append(i)
        index._mentioned_by = back
    return index._mentioned_by


def neighbours(index: ArmIndex, p: int, dense: np.ndarray, limit: int) -> list[int]:
    """The ``limit`` objects most compatible with object ``p`` (expansion, §3.2.2): passages
    linked by a title mention either way; tables joinable with a table (same database)."""
    if limit <= 0:
        return []
    obj = index.objects[p]
    scored: dict[int, float] = {}
    for q in list(index.mentions[p]) + _mentioned_by(index)[p]:
        if q != p:
            scored[q] = 1.0
    if obj.is_table:
        for q, o in enumerate(index.objects):
            if q != p and o.is_table and (obj.database is None or o.database == obj.database):
                v = table_compatibility(obj, o)
                if v > 0:
                    scored[q] = max(scored.get(q, 0.0), v)
    ranked = sorted(scored, key=lambda q: (-scored[q], -float(dense[q])))
    return ranked[:limit]


def database_relevance(objects: Sequence, R: np.ndarray, weight: float) -> np.ndarray:
    """R with each table's *database relevance* added: ``weight`` × the best R of any candidate
    table in the same ``database`` (passages and tables without a database are unchanged).

    A question over a schema is answered inside one database, so a weak but needed table
    (a join table, a lookup table) of the most relevant database should outrank a strong
    table of another database; without this, the MIP fills k with a well-joined cluster of a
    different database. Soft, not a filter: a second database keeps its own best R.
    """
    R = np.asarray(R, dtype=float)
    if weight <= 0 or len(R) == 0:
        return R.copy()
    dbs = [o.database if o.is_table else None for o in objects]
    best: dict[str, float] = {}
    for d, r in zip(dbs, R):
        if d is not None:
            best[d] = max(best.get(d, float("-inf")), float(r))
    return R + weight * np.array([best[d] if d is not None else 0.0 for d in dbs])


def resolve_keywords(question: Question | str, index: ArmIndex, keywords: Sequence[str] | None, limit: int) -> tuple[list[str], str]:
    """The keywords to align and where they came from: ``given``, ``replayed`` (the question's
    ``"keywords"``) or ``question_ngrams`` (:func:`extract_keywords`)."""
    if keywords is not None:
        return [k for k in keywords if isinstance(k, str)][:limit], "given"
    if isinstance(question, Question) and question.keywords:
        return list(question.keywords)[:limit], "replayed"
    return extract_keywords(_question_text(question), index)[:limit], "question_ngrams"


def arm_retrieve(
    question: Question | str,
    index: ArmIndex,
    ctx: ArmContext | None = None,
    *,
    keywords: Sequence[str] | None = None,
) -> RetrievalResult:
    """ARM's retrieval without a model: alignment → candidate pool → R, C → MIP (module doc)."""
    ctx = ctx or ArmContext()
    t0 = time.perf_counter()
    text = _question_text(question)
    kws, source = resolve_keywords(question, index, keywords, ctx.max_keywords)
    aligned = [a for kw in kws for a in align_keyword(kw, index, per_keyword=ctx.ngrams_per_keyword,
                                                     min_score=ctx.min_alignment_score)]
    query = [t for a in aligned for t in a.ngram.split()]
    bm25 = index.bm25_scores(query)
    dense = index.dense_scores(text)

    pool: dict[int, str] = {}
    for p in _top(bm25, ctx.bm25_pool, positive=True):
        pool.setdefault(p, "bm25")
    for p in _top(dense, ctx.dense_pool):
        pool.setdefault(p, "dense")

    def relevance(ps: list[int]) -> np.ndarray:
        return ctx.bm25_weight * _minmax(bm25[ps]) + (1 - ctx.bm25_weight) * _minmax(dense[ps])

    frontier = list(pool)
    for _ in range(ctx.expansion_hops):
        ps = list(pool)
        r = relevance(ps)
        seeds = [ps[i] for i in np.argsort(-r, kind="stable")[: ctx.expansion_seeds] if ps[i] in frontier]
        frontier = []
        for s in seeds:
            for q in neighbours(index, s, dense, ctx.expansion_per_seed):
                if q not in pool:
                    pool[q] = f"expansion of {index.objects[s].id}"
                    frontier.append(q)
    ps = list(pool)
    if len(ps) > ctx.max_candidates:
        r = relevance(ps)
        ps = [ps[i] for i in np.argsort(-r, kind="stable")[: ctx.max_candidates]]
    R = relevance(ps)
    R = database_relevance([index.objects[p] for p in ps], R, ctx.database_weight)
    C = compatibility_matrix(index, ps, link_weight=ctx.link_weight, join_weight=ctx.join_weight,
                             semantic_weight=ctx.semantic_weight, semantic_floor=ctx.semantic_floor)
    result = solve_structure(R, C, ctx.k, max_links=ctx.max_links, time_limit_s=ctx.mip_time_limit_s)
    chosen = [ps[i] for i in result.chosen]
    trace = {
        "keywords": kws,
        "keyword_source": source,
        "aligned": [{"keyword": a.keyword, "ngram": a.ngram, "score": round(a.score, 4), "how": a.path} for a in aligned],
        "candidates": [
            {"id": index.objects[p].id, "via": pool[p], "bm25": round(float(bm25[p]), 4),
             "dense": round(float(dense[p]), 4), "relevance": round(float(R[i]), 4)}
            for i, p in enumerate(ps)
        ],
        "links": [{"a": index.objects[ps[i]].id, "b": index.objects[ps[j]].id, "c": round(c, 4)} for i, j, c in result.links],
        "mip": {"status": result.status, "solve_ms": round(result.solve_seconds * 1000, 3),
                "objective": round(result.objective, 6), "greedy_objective": round(result.greedy_objective, 6),
                "pair_variables": result.pair_variables, "candidates": len(ps)},
        "chosen": [index.objects[p].id for p in chosen],
        "seconds": round(time.perf_counter() - t0, 4),
    }
    return RetrievalResult("arm", trace["chosen"], [float(R[i]) for i in result.chosen], trace)


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
