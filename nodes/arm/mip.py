"""§3.2.2 structure alignment's mixed-integer program (§3.2.2 and Appendix B of the ARM paper).

Choose k of M candidate objects maximising  Σ_i R_i b_i + Σ_{i<j} C_ij c_ij  subject to
Σ_i b_i = k, at most ``max_links`` connections (Appendix B's Σ c_ij ≤ 2(k−1) over ordered
pairs is k−1 unordered links: the chosen objects may form a tree of connections), and
linking constraints. Two formulations:

- ``tight`` (default): a variable c_ij only for pairs with C_ij > 0 (a pair that cannot add
  to the objective needs none), linked by c_ij ≤ b_i and c_ij ≤ b_j;
- ``naive``: a variable for every pair and the aggregated 2 c_ij ≤ b_i + b_j of Appendix B
  (kept for the benchmark; its LP relaxation is weaker and it has M(M−1)/2 variables).

The solver is CBC through python-mip, silenced, warm-started with a greedy solution
(``model.start``) and bounded by a time limit: a proven optimum is ``optimal``, the best
feasible solution found in time is ``feasible``, and when CBC returns nothing usable the
greedy solution is used (``greedy``). :func:`brute_force` is the reference for tests.

C_ij itself is :mod:`atomgraph.nodes.arm.compatibility`; the sets of search objects the MIP
runs over, and the drafts, are :mod:`atomgraph.nodes.arm.structure_alignment`.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np


@dataclass
class StructureResult:
    """The objects the MIP chose (candidate positions), and how it got them."""

    chosen: list[int]
    objective: float
    status: str  # "optimal" | "feasible" | "greedy"
    solve_seconds: float
    greedy_objective: float
    links: list[tuple[int, int, float]] = field(default_factory=list)
    pair_variables: int = 0
    formulation: str = "tight"
    time_limit_s: float | None = None

    def to_json(self) -> dict:
        return {
            "chosen": self.chosen,
            "objective": round(self.objective, 6),
            "status": self.status,
            "solve_ms": round(self.solve_seconds * 1000, 3),
            "greedy_objective": round(self.greedy_objective, 6),
            "links": [[i, j, round(c, 4)] for i, j, c in self.links],
            "pair_variables": self.pair_variables,
            "formulation": self.formulation,
            "time_limit_s": self.time_limit_s,
        }


# --- objective, greedy and brute force ---------------------------------------------------

def _pairs(C: np.ndarray) -> list[tuple[int, int, float]]:
    n = C.shape[0]
    sym = np.maximum(C, C.T)
    iu, ju = np.triu_indices(n, k=1)
    vals = sym[iu, ju]
    keep = vals > 0
    return [(int(i), int(j), float(v)) for i, j, v in zip(iu[keep], ju[keep], vals[keep])]


LINK_RULES = ("forest", "pairs")


def _forest(links: list[tuple[int, int, float]]) -> list[tuple[int, int, float]]:
    """The heaviest spanning forest of ``links`` (Kruskal; ``links`` sorted best first)."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    kept = []
    for a, b, c in links:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[ra] = rb
            kept.append((a, b, c))
    return kept


def coverage_value(chosen: Sequence[int], coverage: np.ndarray | None) -> float:
    """Σ over keywords of the best coverage any chosen object gives it (0 without ``coverage``)."""
    s = list(chosen)
    if coverage is None or not len(coverage) or not s:
        return 0.0
    return float(np.asarray(coverage)[:, s].max(axis=1).sum())


def selection_value(chosen: Sequence[int], R: np.ndarray, C: np.ndarray, max_links: int | None,
                    links_rule: str = "forest", coverage: np.ndarray | None = None) -> tuple[float, list]:
    """The objective of a chosen set and its counted links: the best ``max_links`` pairs
    (``pairs``), or the heaviest spanning forest of the chosen objects (``forest``: no cycle
    counts, so k objects in c connected groups count at most k − c links); plus, with
    ``coverage`` (keywords × objects), each keyword's best coverage by a chosen object."""
    s = list(chosen)
    links = []
    for a, b in itertools.combinations(sorted(s), 2):
        c = float(max(C[a, b], C[b, a]))
        if c > 0:
            links.append((a, b, c))
    links.sort(key=lambda t: (-t[2], t[0], t[1]))
    if links_rule == "forest":
        links = _forest(links)
    elif links_rule != "pairs":
        raise ValueError(f"unknown links rule {links_rule!r}; expected one of {', '.join(LINK_RULES)}")
    if max_links is not None:
        links = links[: max(0, max_links)]
    return float(sum(R[i] for i in s)) + sum(c for _, _, c in links) + coverage_value(s, coverage), links


def greedy(R: np.ndarray, C: np.ndarray, k: int, max_links: int | None, links_rule: str = "forest",
           coverage: np.ndarray | None = None) -> list[int]:
    """Add, one at a time, the object that raises the objective most (the warm start)."""
    n = len(R)
    chosen: list[int] = []
    while len(chosen) < min(k, n):
        best, best_v = None, -np.inf
        for j in range(n):
            if j in chosen:
                continue
            v, _ = selection_value(chosen + [j], R, C, max_links, links_rule, coverage)
            if v > best_v + 1e-12:
                best, best_v = j, v
        chosen.append(best)
    return chosen


def brute_force(R: np.ndarray, C: np.ndarray, k: int, max_links: int | None,
                links_rule: str = "forest", coverage: np.ndarray | None = None) -> tuple[float, tuple[int, ...]]:
    """The optimum by enumeration (reference for tests; n ≤ 12 or so)."""
    n = len(R)
    best = (-np.inf, ())
    for s in itertools.combinations(range(n), min(k, n)):
        v, _ = selection_value(s, R, C, max_links, links_rule, coverage)
        if v > best[0] + 1e-12:
            best = (v, s)
    return best


# --- the MIP ---------------------------------------------------------------------------------

def build_model(R: np.ndarray, C: np.ndarray, k: int, *, max_links: int | None, formulation: str = "tight",
                links_rule: str = "forest", coverage: np.ndarray | None = None):
    """The python-mip model (CBC, silent), its b and c variables, and the pairs they cover.

    ``links_rule="forest"`` adds a single-commodity flow that makes the counted links a
    spanning forest of the chosen objects: a chosen object is a root (r_i) or receives one
    unit of flow along counted links from a root, and Σ c = k − Σ r; so every group of
    connected objects is a tree and k objects in g groups count k − g links.

    ``coverage`` (keywords × objects, ≥ 0) adds Σ_q Σ_i cov_qi y_qi with y_qi ≤ b_i and
    Σ_i y_qi ≤ 1: each keyword counts the best chosen object covering it (JAR's sub-query
    coverage, reduced to one score per keyword and object). The y are continuous; with b
    integral an optimal y is integral too."""
    import mip

    n = len(R)
    model = mip.Model(sense=mip.MAXIMIZE, solver_name=mip.CBC)
    model.verbose = 0
    model.threads = 1
    b = [model.add_var(var_type=mip.BINARY, name=f"b{i}") for i in range(n)]
    if formulation == "tight":
        pairs = _pairs(C)
    elif formulation == "naive":
        sym = np.maximum(C, C.T)
        pairs = [(i, j, float(sym[i, j])) for i, j in itertools.combinations(range(n), 2)]
    else:
        raise ValueError(f"unknown formulation {formulation!r}")
    c = [model.add_var(var_type=mip.BINARY, name=f"c{i}_{j}") for i, j, _ in pairs]
    objective = mip.xsum(float(R[i]) * b[i] for i in range(n)) + mip.xsum(w * v for (_, _, w), v in zip(pairs, c))
    if coverage is not None and len(coverage):
        for q, row in enumerate(np.asarray(coverage, dtype=float)):
            ys = [(i, model.add_var(lb=0.0, ub=1.0, name=f"y{q}_{i}")) for i in range(n) if row[i] > 0]
            for i, y in ys:
                model += y <= b[i]
            if ys:
                model += mip.xsum(y for _, y in ys) <= 1
                objective = objective + mip.xsum(float(row[i]) * y for i, y in ys)
    model.objective = objective
    model += mip.xsum(b) == k
    if max_links is not None and c:
        model += mip.xsum(c) <= max_links
    for (i, j, _), v in zip(pairs, c):
        if formulation == "tight":
            model += v <= b[i]
            model += v <= b[j]
        else:
            model += 2 * v <= b[i] + b[j]
    if links_rule == "forest" and c:
        r = [model.add_var(var_type=mip.BINARY, name=f"r{i}") for i in range(n)]
        inflow: list[list] = [[] for _ in range(n)]
        outflow: list[list] = [[] for _ in range(n)]
        for (i, j, _), v in zip(pairs, c):
            for a, z in ((i, j), (j, i)):
                f = model.add_var(lb=0.0, name=f"f{a}_{z}")
                model += f <= (k - 1) * v
                outflow[a].append(f)
                inflow[z].append(f)
        for i in range(n):
            model += r[i] <= b[i]
            model += mip.xsum(inflow[i]) + k * r[i] - mip.xsum(outflow[i]) >= b[i]
        model += mip.xsum(c) == k - mip.xsum(r)
    elif links_rule not in LINK_RULES:
        raise ValueError(f"unknown links rule {links_rule!r}; expected one of {', '.join(LINK_RULES)}")
    return model, b, c, pairs


def solve_structure(
    R: Sequence[float],
    C: np.ndarray,
    k: int,
    *,
    max_links: int | None = -1,
    time_limit_s: float = 0.5,
    formulation: str = "tight",
    links_rule: str = "forest",
    coverage: np.ndarray | None = None,
) -> StructureResult:
    """Choose ``k`` objects maximising relevance plus compatibility (§3.2.2, Appendix B).

    ``max_links=-1`` (default) is the paper's k−1 links; ``None`` counts every chosen pair.
    The best solution CBC finds within ``time_limit_s`` is used; see the module doc.
    ``coverage`` (keywords × objects): the optional keyword-coverage term (:func:`build_model`).
    """
    import mip

    R = np.asarray(R, dtype=float)
    C = np.asarray(C, dtype=float)
    n = len(R)
    if C.shape != (n, n):
        raise ValueError(f"C must be {n}x{n}, got {C.shape}")
    k = max(0, min(int(k), n))
    if max_links == -1:
        max_links = max(0, k - 1)
    t0 = time.perf_counter()
    if coverage is not None:
        coverage = np.asarray(coverage, dtype=float).reshape(-1, n)
        if not coverage.any():
            coverage = None
    start = greedy(R, C, k, max_links, links_rule, coverage)
    g_val, g_links = selection_value(start, R, C, max_links, links_rule, coverage)
    if k == 0 or k == n or (not _pairs(C) and coverage is None):
        # nothing to optimise: all objects, or the top-k by relevance (exactly optimal)
        chosen = list(range(n)) if k == n else sorted(range(n), key=lambda i: -R[i])[:k]
        v, links = selection_value(chosen, R, C, max_links, links_rule, coverage)
        return StructureResult(chosen, v, "optimal", time.perf_counter() - t0, g_val, links, 0, formulation, time_limit_s)
    model, b, c, pairs = build_model(R, C, k, max_links=max_links, formulation=formulation, links_rule=links_rule,
                                     coverage=coverage)
    chosen_set = set(start)
    counted = {(i, j) for i, j, _ in g_links}
    if links_rule == "pairs":  # a warm start (the forest's flows are left to CBC)
        model.start = [(b[i], 1.0 if i in chosen_set else 0.0) for i in range(n)] + [
            (v, 1.0 if (i, j) in counted else 0.0) for (i, j, _), v in zip(pairs, c)
        ]
    status = model.optimize(max_seconds=max(time_limit_s, 1e-3))
    elapsed = time.perf_counter() - t0
    chosen: list[int] = []
    if status in (mip.OptimizationStatus.OPTIMAL, mip.OptimizationStatus.FEASIBLE) and model.num_solutions:
        chosen = [i for i in range(n) if b[i].x is not None and b[i].x >= 0.5]
    label = "optimal" if status == mip.OptimizationStatus.OPTIMAL else "feasible"
    if len(chosen) != k:
        chosen, label = start, "greedy"
    v, links = selection_value(chosen, R, C, max_links, links_rule, coverage)
    if v < g_val - 1e-9:  # never worse than the warm start
        chosen, v, links, label = start, g_val, g_links, "greedy"
    chosen.sort(key=lambda i: -R[i])
    return StructureResult(chosen, v, label, elapsed, g_val, links, len(pairs), formulation, time_limit_s)
