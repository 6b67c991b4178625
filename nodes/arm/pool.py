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

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from atomgraph.nodes.arm.compatibility import graded_matrix, neighbour_candidates
from atomgraph.nodes.arm.structure import compatibility_matrix, solve_structure, table_compatibility
from atomgraph.state.arm import ArmContext
from atomgraph.state.arm_graph import Draft
from atomgraph.tools.arm_index import ArmIndex, tokens


def _top(scores: np.ndarray, k: int, *, positive: bool = False) -> list[int]:
    if k <= 0 or len(scores) == 0:
        return []
    if len(scores) > 4 * k:  # the k-th best first, then a stable sort of those at or above it: same order, no full sort
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        cand = np.flatnonzero(scores >= kth)
        order = cand[np.argsort(-scores[cand], kind="stable")][:k]
    else:
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


def rule_neighbours(index: ArmIndex, p: int, dense: np.ndarray, limit: int) -> list[int]:
    """``compatibility="rules"``: passages linked by a title mention either way; tables
    joinable with a table by the column rules (same database), best first."""
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


def neighbours(index: ArmIndex, p: int, dense: np.ndarray, limit: int, ctx: ArmContext | None = None) -> list[int]:
    """The ``limit`` objects most compatible with object ``p`` (§3.2.2 expansion), by the
    run's compatibility (Appendix B's graded C by default; cached per object)."""
    ctx = ctx or ArmContext()
    if limit <= 0:
        return []
    if ctx.compatibility == "rules":
        return rule_neighbours(index, p, dense, limit)
    cache = index.__dict__.setdefault("_neighbours", {})
    key = (p, limit, ctx.compatibility_weight, ctx.neighbour_candidates, ctx.column_headers)
    if key not in cache:
        cands = neighbour_candidates(index, p, ctx.neighbour_candidates)
        C = graded_matrix(index, [p] + cands, weight=ctx.compatibility_weight, column_headers=ctx.column_headers)[0, 1:]
        order = np.argsort(-C, kind="stable")
        cache[key] = [cands[i] for i in order if C[i] > 0][:limit]
    return cache[key]


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
    """Every object's scores for one question.

    ``bm25``: BM25 over the bag of all aligned n-grams; ``dense``: cosine similarity to the
    question; ``keyword``: per keyword, its n-gram list as one query (§3.2.1: "each list of
    N-grams decoded is used as a query … exact match and semantic similarity"): min-max
    normalised BM25 over the list's n-grams mixed with the list's embedding similarity.
    """

    bm25: np.ndarray
    dense: np.ndarray
    keyword: list[np.ndarray] = field(default_factory=list)

    @classmethod
    def of(cls, index: ArmIndex, question: str, groups: Sequence[Sequence[str]], bm25_weight: float = 0.3) -> "Scores":
        """``groups``: the aligned n-gram list of each keyword (a flat list of strings is one
        n-gram per keyword)."""
        groups = [[g] if isinstance(g, str) else list(g) for g in groups]
        groups = [g for g in groups if g]
        query = [t for g in groups for n in g for t in tokens(n)]
        per_kw = []
        for g in groups:
            b = index.bm25_scores([t for n in g for t in tokens(n)])
            d = index.dense_scores(", ".join(g))
            per_kw.append(bm25_weight * _minmax(b) + (1 - bm25_weight) * _minmax(d))
        return cls(index.bm25_scores(query), index.dense_scores(question), per_kw)

    def relevance(self, positions: Sequence[int], bm25_weight: float) -> np.ndarray:
        """R_i over ``positions``: min-max normalised BM25 and similarity, mixed."""
        ps = list(positions)
        return bm25_weight * _minmax(self.bm25[ps]) + (1 - bm25_weight) * _minmax(self.dense[ps])


def base_pool(index: ArmIndex, scores: Scores, ctx: ArmContext) -> dict[int, str]:
    """Position → how it was found: each keyword's best ``keyword_pool`` objects by its
    n-gram list's combined score (``keyword i``), then the best ``bm25_pool`` by BM25 over all
    aligned n-grams and the best ``dense_pool`` by similarity to the question."""
    pool: dict[int, str] = {}
    for i, s in enumerate(scores.keyword):
        for p in _top(s, ctx.keyword_pool):
            pool.setdefault(p, f"keyword {i}")
    for p in _top(scores.bm25, ctx.bm25_pool, positive=True):
        pool.setdefault(p, "bm25")
    for p in _top(scores.dense, ctx.dense_pool):
        pool.setdefault(p, "dense")
    return pool


def expand(index: ArmIndex, pool: dict[int, str], scores: Scores, ctx: ArmContext, steps: int) -> dict[int, str]:
    """``pool`` expanded ``steps`` times (§3.2.2): each step, every object added by the step
    before (the base objects first) adds its ``expansion_per_seed`` most compatible objects.
    Past ``max_candidates`` the base objects stay and the expansion keeps its most relevant."""
    out = dict(pool)
    frontier = list(out)
    for _ in range(steps):
        new = []
        for s in frontier:
            for q in neighbours(index, s, scores.dense, ctx.expansion_per_seed, ctx):
                if q not in out:
                    out[q] = f"expansion of {index.objects[s].id}"
                    new.append(q)
        frontier = new
        if not frontier:
            break
    if len(out) > ctx.max_candidates:
        ps = list(out)
        r = scores.relevance(ps, ctx.bm25_weight)
        base = [i for i, p in enumerate(ps) if p in pool]
        rest = [i for i in np.argsort(-r, kind="stable") if ps[i] not in pool]
        keep = {ps[i] for i in (sorted(base, key=lambda i: -r[i]) + rest)[: ctx.max_candidates]}
        out = {p: v for p, v in out.items() if p in keep}
    return out


def expanded_pools(index: ArmIndex, pool: dict[int, str], scores: Scores, ctx: ArmContext, drafts: int) -> list[tuple[int, dict[int, str]]]:
    """``drafts`` expanded sets of search objects, ``(steps, set)``: the d-th expands the base
    set d steps (d = 1, 2, …); a set equal to an earlier one is expanded one more step (at
    most ``drafts + 2`` steps), so the sets really differ where the collection allows.
    ``expansion_per_seed = 0`` gives the base set alone."""
    out: list[tuple[int, dict[int, str]]] = []
    seen: set[frozenset[int]] = set()
    steps = 1 if ctx.expansion_per_seed > 0 else 0
    while len(out) < max(1, drafts) and steps <= max(1, drafts) + 2:
        s = expand(index, pool, scores, ctx, steps)
        key = frozenset(s)
        if key not in seen:
            seen.add(key)
            out.append((steps, s))
        if steps == 0:
            break
        steps += 1
    return out


def compatibility(index: ArmIndex, positions: Sequence[int], ctx: ArmContext) -> np.ndarray:
    """C_ij over ``positions`` by the run's ``compatibility`` (graded: Appendix B)."""
    if ctx.compatibility == "rules":
        return compatibility_matrix(index, positions, link_weight=ctx.link_weight, join_weight=ctx.join_weight,
                                    semantic_weight=ctx.semantic_weight, semantic_floor=ctx.semantic_floor)
    return graded_matrix(index, positions, weight=ctx.compatibility_weight, column_headers=ctx.column_headers)


def keyword_coverage(scores: Scores, positions: Sequence[int], weight: float) -> np.ndarray | None:
    """``coverage_weight`` (a measured extension, on by default; 0 = the paper): keywords ×
    ``positions``, each keyword's score (its n-gram list as a query) min-max normalised over
    the set, times ``weight`` —
    the MIP then also counts, per keyword, the best chosen object covering it, so k objects
    that all answer one keyword lose to a set that answers each (JAR's sub-query coverage)."""
    if weight <= 0 or not scores.keyword or not len(positions):
        return None
    ps = list(positions)
    return weight * np.stack([_minmax(s[ps]) for s in scores.keyword])


def solve_draft(index: ArmIndex, positions: Sequence[int], scores: Scores, ctx: ArmContext) -> dict:
    """The MIP over one set of search objects: chosen ids (best first), links, solver report.
    ``structure_alignment=False`` (Figure 4's "information alignment only"): the k most
    relevant objects, no MIP."""
    ps = list(positions)
    R = database_relevance([index.objects[p] for p in ps], scores.relevance(ps, ctx.bm25_weight), ctx.database_weight)
    if not ctx.structure_alignment:
        C = np.zeros((len(ps), len(ps)))
    else:
        C = compatibility(index, ps, ctx) * ctx.compatibility_scale
    res = solve_structure(R, C, ctx.k, max_links=ctx.max_links, time_limit_s=ctx.mip_time_limit_s,
                          links_rule=ctx.links, coverage=keyword_coverage(scores, ps, ctx.coverage_weight))
    ids = [index.objects[ps[i]].id for i in res.chosen]
    return {
        "ids": ids,
        "relevance": {index.objects[ps[i]].id: round(float(R[i]), 4) for i in range(len(ps))},
        "links": [{"a": index.objects[ps[i]].id, "b": index.objects[ps[j]].id, "c": round(c, 4)} for i, j, c in res.links],
        "mip": {"status": res.status, "time_limited": res.status != "optimal", "solve_ms": round(res.solve_seconds * 1000, 3),
                "objective": round(res.objective, 6), "greedy_objective": round(res.greedy_objective, 6),
                "pair_variables": res.pair_variables, "candidates": len(ps), "time_limit_s": res.time_limit_s},
    }


def vote_drafts(drafts: Sequence[Draft], k: int) -> list[str]:
    """Aggregation without verification (the LLM-free path, ``verification=False``): each
    draft votes for its objects; most votes first, ties by best relevance, then draft order."""
    votes: dict[str, int] = {}
    rel: dict[str, float] = {}
    order: dict[str, int] = {}
    for d in drafts:
        for oid in d["ids"]:
            votes[oid] = votes.get(oid, 0) + 1
            rel[oid] = max(rel.get(oid, float("-inf")), float(d.get("relevance", {}).get(oid, 0.0)))
            order.setdefault(oid, len(order))
    return sorted(votes, key=lambda o: (-votes[o], -rel[o], order[o]))[:k]


def solve_drafts(index: ArmIndex, pool: dict[int, str], scores: Scores, ctx: ArmContext) -> list[Draft]:
    """One solved MIP draft per expanded set of the base ``pool`` (§3.2.2; the base set alone
    without structure alignment)."""
    sets = expanded_pools(index, pool, scores, ctx, ctx.drafts) if ctx.structure_alignment else [(0, pool)]
    drafts = []
    for d, (steps, objs) in enumerate(sets):
        solved = solve_draft(index, list(objs), scores, ctx)
        drafts.append(Draft(draft=d, steps=steps, pool=[index.objects[p].id for p in objs],
                            mip_ids=solved["ids"], ids=solved["ids"], links=solved["links"],
                            relevance=solved["relevance"], mip=solved["mip"]))
    return drafts
