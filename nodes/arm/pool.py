"""Search objects and solver drafts (§3.2.1 end, §3.2.2 of the paper), for the ``arm`` graph
and the LLM-free pipeline (:func:`atomgraph.nodes.arm.retrieval.arm_retrieve`) alike.

- :func:`base_pool` — the *base* search objects: the best objects by BM25 over the aligned
  n-grams, and by embedding similarity to the question;
- :func:`expanded_pools` — several expansions of the base set (draft ``d`` adds ``d`` hops
  of each seed's most compatible objects), one per draft;
- :func:`solve_draft` — the structure-alignment MIP (:mod:`atomgraph.nodes.arm.structure`)
  over one expanded set: k objects and the connections between them.

Positions are indices into ``index.objects``; what goes into the graph state is ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from atomgraph.nodes.arm.structure import compatibility_matrix, solve_structure, table_compatibility
from atomgraph.state.arm import ArmContext
from atomgraph.tools.arm_index import ArmIndex, tokens


def _top(scores: np.ndarray, k: int, *, positive: bool = False) -> list[int]:
    if k <= 0 or len(scores) == 0:
        return []
    order = np.argsort(-scores, kind="stable")[:k]
    return [int(i) for i in order if not positive or scores[i] > 0]


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


@dataclass
class Scores:
    """BM25 over the aligned n-grams and cosine similarity to the question, for every object."""

    bm25: np.ndarray
    dense: np.ndarray

    @classmethod
    def of(cls, index: ArmIndex, question: str, ngrams: Sequence[str]) -> "Scores":
        query = [t for g in ngrams for t in tokens(g)]
        return cls(index.bm25_scores(query), index.dense_scores(question))

    def relevance(self, positions: Sequence[int], bm25_weight: float) -> np.ndarray:
        """R_i over ``positions``: min-max normalised BM25 and similarity, mixed."""
        ps = list(positions)
        return bm25_weight * _minmax(self.bm25[ps]) + (1 - bm25_weight) * _minmax(self.dense[ps])


def base_pool(index: ArmIndex, scores: Scores, ctx: ArmContext) -> dict[int, str]:
    """Position → how it was found (``bm25`` or ``dense``), BM25 hits first."""
    pool: dict[int, str] = {}
    for p in _top(scores.bm25, ctx.bm25_pool, positive=True):
        pool.setdefault(p, "bm25")
    for p in _top(scores.dense, ctx.dense_pool):
        pool.setdefault(p, "dense")
    return pool


def expand(index: ArmIndex, pool: dict[int, str], scores: Scores, ctx: ArmContext, hops: int) -> dict[int, str]:
    """``pool`` with ``hops`` rounds of expansion: each round, the best ``expansion_seeds`` new
    objects add their ``expansion_per_seed`` most compatible objects."""
    out = dict(pool)
    frontier = list(out)
    for _ in range(hops):
        ps = list(out)
        r = scores.relevance(ps, ctx.bm25_weight)
        seeds = [ps[i] for i in np.argsort(-r, kind="stable") if ps[i] in frontier][: ctx.expansion_seeds]
        frontier = []
        for s in seeds:
            for q in neighbours(index, s, scores.dense, ctx.expansion_per_seed):
                if q not in out:
                    out[q] = f"expansion of {index.objects[s].id}"
                    frontier.append(q)
        if not frontier:
            break
    if len(out) > ctx.max_candidates:
        ps = list(out)
        r = scores.relevance(ps, ctx.bm25_weight)
        keep = {ps[i] for i in np.argsort(-r, kind="stable")[: ctx.max_candidates]}
        out = {p: v for p, v in out.items() if p in keep}
    return out


def expanded_pools(index: ArmIndex, pool: dict[int, str], scores: Scores, ctx: ArmContext, drafts: int) -> list[tuple[int, dict[int, str]]]:
    """One expanded set per draft, ``(hops, set)``, identical sets given once."""
    out: list[tuple[int, dict[int, str]]] = []
    seen: set[frozenset[int]] = set()
    for hops in range(max(1, drafts)):
        s = expand(index, pool, scores, ctx, hops)
        key = frozenset(s)
        if key not in seen:
            seen.add(key)
            out.append((hops, s))
    return out


def solve_draft(index: ArmIndex, positions: Sequence[int], scores: Scores, ctx: ArmContext) -> dict:
    """The MIP over one set of search objects: chosen ids (best first), links, solver report."""
    ps = list(positions)
    R = database_relevance([index.objects[p] for p in ps], scores.relevance(ps, ctx.bm25_weight), ctx.database_weight)
    C = compatibility_matrix(index, ps, link_weight=ctx.link_weight, join_weight=ctx.join_weight,
                             semantic_weight=ctx.semantic_weight, semantic_floor=ctx.semantic_floor)
    res = solve_structure(R, C, ctx.k, max_links=ctx.max_links, time_limit_s=ctx.mip_time_limit_s)
    ids = [index.objects[ps[i]].id for i in res.chosen]
    return {
        "ids": ids,
        "relevance": {index.objects[ps[i]].id: round(float(R[i]), 4) for i in range(len(ps))},
        "links": [{"a": index.objects[ps[i]].id, "b": index.objects[ps[j]].id, "c": round(c, 4)} for i, j, c in res.links],
        "mip": {"status": res.status, "time_limited": res.status != "optimal", "solve_ms": round(res.solve_seconds * 1000, 3),
                "objective": round(res.objective, 6), "greedy_objective": round(res.greedy_objective, 6),
                "pair_variables": res.pair_variables, "candidates": len(ps), "time_limit_s": res.time_limit_s},
    }
