"""ARM's structure-alignment solver as it stood before the partner relaxations and the
orientation program: one exact MIP per draft (c_ij ≤ b_i, c_ij ≤ b_j per pair), CBC's default
heuristics, cuts and preprocessing. Kept so that ``benchmarks.bench_arm_solver`` measures it
against :func:`atomgraph.nodes.arm.structure_alignment.solve_structures` in one run."""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from atomgraph.nodes.arm.structure_alignment import LINK_RULES, StructureResult, _pairs, greedy, selection_value


def baseline_build_model(R: np.ndarray, C: np.ndarray, k: int, *, max_links: int | None,
                links_rule: str = "forest", coverage: np.ndarray | None = None, link_weight: float = 1.0):
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
    # "optimal" means optimal: CBC's default gaps (relative 1e-4) let a solution it calls optimal
    # fall below the greedy warm start (Bird, links="forest": 5.862127 against 5.862212)
    model.max_mip_gap = 1e-9
    model.max_mip_gap_abs = 1e-9
    # b_i ∈ {0, 1}: object i is chosen
    b = [model.add_var(var_type=mip.BINARY, name=f"b{i}") for i in range(n)]
    pairs = _pairs(C)
    # c_ij ∈ {0, 1}: the connection of objects i and j is counted (one variable per unordered pair)
    c = [model.add_var(var_type=mip.BINARY, name=f"c{i}_{j}") for i, j, _ in pairs]
    # objective: max Σ_i R_i b_i + w Σ_{i<j} C_ij c_ij (w = link_weight: 2 = Appendix B's ordered pairs)
    objective = mip.xsum(float(R[i]) * b[i] for i in range(n)) + mip.xsum(
        link_weight * w * v for (_, _, w), v in zip(pairs, c))
    if coverage is not None and len(coverage):  # extension (coverage_weight): + Σ_q Σ_i cov_qi y_qi
        for q, row in enumerate(np.asarray(coverage, dtype=float)):
            ys = [(i, model.add_var(lb=0.0, ub=1.0, name=f"y{q}_{i}")) for i in range(n) if row[i] > 0]
            for i, y in ys:
                model += y <= b[i]  # y_qi ≤ b_i: keyword q is covered only by a chosen object
            if ys:
                model += mip.xsum(y for _, y in ys) <= 1  # Σ_i y_qi ≤ 1: by one object, its best
                objective = objective + mip.xsum(float(row[i]) * y for i, y in ys)
    model.objective = objective
    model += mip.xsum(b) == k  # Σ_i b_i = k: exactly k objects
    if max_links is not None and c:
        model += mip.xsum(c) <= max_links  # Σ_{i<j} c_ij ≤ k − 1 (Appendix B's Σ_{i,j} c_ij ≤ 2(k − 1))
    for (i, j, _), v in zip(pairs, c):
        model += v <= b[i]  # c_ij ≤ b_i
        model += v <= b[j]  # c_ij ≤ b_j: a connection counts only between chosen objects
    if links_rule == "forest" and c:  # the counted links form a spanning forest of the chosen objects
        # r_i ∈ {0, 1}: object i is the root of its group; f_az ≥ 0: flow from a to z along a counted link
        r = [model.add_var(var_type=mip.BINARY, name=f"r{i}") for i in range(n)]
        inflow: list[list] = [[] for _ in range(n)]
        outflow: list[list] = [[] for _ in range(n)]
        for (i, j, _), v in zip(pairs, c):
            for a, z in ((i, j), (j, i)):
                f = model.add_var(lb=0.0, name=f"f{a}_{z}")
                model += f <= (k - 1) * v  # f_az ≤ (k − 1) c_az: flow only along counted links
                outflow[a].append(f)
                inflow[z].append(f)
        for i in range(n):
            model += r[i] <= b[i]  # r_i ≤ b_i: only a chosen object is a root
            # Σ_a f_ai + k r_i − Σ_z f_iz ≥ b_i: a chosen object is a root or keeps one unit of flow from one
            model += mip.xsum(inflow[i]) + k * r[i] - mip.xsum(outflow[i]) >= b[i]
        model += mip.xsum(c) == k - mip.xsum(r)  # Σ c_ij = k − Σ_i r_i: each group a tree, no cycle counted
    elif links_rule not in LINK_RULES:
        raise ValueError(f"unknown links rule {links_rule!r}; expected one of {', '.join(LINK_RULES)}")
    return model, b, c, pairs


def baseline_solve_structures(
    problems: Sequence[tuple[Sequence[Any], Sequence[float], np.ndarray, np.ndarray | None]],
    k: int,
    *,
    max_links: int | None = -1,
    time_limit_s: float = 0.5,
    links_rule: str = "forest",
    link_weight: float = 1.0,
) -> list[StructureResult]:
    """:func:`solve_structure` for several problems ``(keys, R, C, coverage)`` in order (a
    question's drafts; ``keys``: each problem's objects, e.g. positions): each starts from the
    better of its greedy solution and the problem before's solution, where that lies in its set.
    Each result is in its own problem's indices."""
    import mip

    out: list[StructureResult] = []
    before: list[Any] = []
    for keys, R, C, coverage in problems:
        R = np.asarray(R, dtype=float)
        C = np.asarray(C, dtype=float)
        n = len(R)
        if C.shape != (n, n):
            raise ValueError(f"C must be {n}x{n}, got {C.shape}")
        kk = max(0, min(int(k), n))
        cap = max(0, kk - 1) if max_links == -1 else max_links
        t0 = time.perf_counter()
        if coverage is not None:
            coverage = np.asarray(coverage, dtype=float).reshape(-1, n)
            if not coverage.any():
                coverage = None
        start = greedy(R, C, kk, cap, links_rule, coverage, link_weight)
        g_val, g_links = selection_value(start, R, C, cap, links_rule, coverage, link_weight)
        if kk == 0 or kk == n or (not _pairs(C) and coverage is None):
            # nothing to optimise: all objects, or the top-k by relevance (exactly optimal)
            chosen = list(range(n)) if kk == n else sorted(range(n), key=lambda i: -R[i])[:kk]
            v, links = selection_value(chosen, R, C, cap, links_rule, coverage, link_weight)
            out.append(StructureResult(chosen, v, "optimal", time.perf_counter() - t0, g_val, links, 0, time_limit_s))
            before = [keys[i] for i in chosen]
            continue
        model, b, c, pairs = baseline_build_model(R, C, kk, max_links=cap, links_rule=links_rule, coverage=coverage,
                                         link_weight=link_weight)
        # the warm start: the greedy solution, or the problem before's where it lies in this set and is better
        chosen_start, counted = start, g_links
        local = {key: i for i, key in enumerate(keys)}
        prev = [local.get(key) for key in before]
        if len(prev) == kk and None not in prev:
            p_val, p_links = selection_value(prev, R, C, cap, links_rule, coverage, link_weight)
            if p_val > g_val + 1e-12:
                chosen_start, counted = prev, p_links
        if links_rule == "pairs":  # a warm start (the forest's flows are left to CBC)
            on, linked = set(chosen_start), {(i, j) for i, j, _ in counted}
            model.start = [(b[i], 1.0 if i in on else 0.0) for i in range(n)] + [
                (v, 1.0 if (i, j) in linked else 0.0) for (i, j, _), v in zip(pairs, c)
            ]
        status = model.optimize(max_seconds=max(time_limit_s, 1e-3))
        elapsed = time.perf_counter() - t0
        chosen: list[int] = []
        if status in (mip.OptimizationStatus.OPTIMAL, mip.OptimizationStatus.FEASIBLE) and model.num_solutions:
            chosen = [i for i in range(n) if b[i].x is not None and b[i].x >= 0.5]
        label = "optimal" if status == mip.OptimizationStatus.OPTIMAL else "feasible"
        if len(chosen) != kk:
            chosen, label = start, "greedy"
        v, links = selection_value(chosen, R, C, cap, links_rule, coverage, link_weight)
        if v < g_val - 1e-9:  # never worse than the warm start; "greedy" only where CBC proved nothing better
            chosen, v, links = start, g_val, g_links
            if label != "optimal":
                label = "greedy"
        chosen.sort(key=lambda i: -R[i])
        out.append(StructureResult(chosen, v, label, elapsed, g_val, links, len(pairs), time_limit_s))
        before = [keys[i] for i in chosen]
    return out
