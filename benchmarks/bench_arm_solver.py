"""ARM's structure alignment per question: CPU of today's solver against the baseline, and the
retrieved objects, in one run.

    python -m benchmarks.bench_arm_solver [--datasets spider,hotpotqa,musique] [--bird DIR]
        [--limit N] [--ids-out F] [--compare F] [--out F]

ARM LLM-free (as ``bench_arm_retrieval``) on every question of each set, once to warm the
caches (units, neighbours, compatibility), then twice per question, alternately (the order
swapped every question): with :func:`atomgraph.nodes.arm.structure_alignment.solve_structures`
and with the baseline solver (:func:`baseline_solve_structures` below: one exact MIP per draft
with CBC's defaults). Per solver: the process CPU seconds each question takes (all stages);
their ratio; and the comparison — the questions whose retrieved ids, any draft's ids, or any
draft's objective (both optimal: within 1e-6) differ. ``--ids-out`` writes the ids (one JSON
object per set: question id → ``[ids, [draft ids …]]``); ``--compare`` reads such a file and
counts the questions whose ids differ from it. The exit status is 1 when any question differs.
``--bird DIR``: a Bird set in the retrieval format (``benchmarks.bird_from_jar``). The MIP time
limit is large (20 s) so that no result depends on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from atomgraph.nodes.arm.structure_alignment import LINK_RULES, StructureResult, _pairs, greedy, selection_value

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval"


# --- the baseline: the solver before the orientation program and the partner relaxations ---------------
# One exact MIP per draft (c_ij ≤ b_i, c_ij ≤ b_j per pair), CBC's default heuristics, cuts and
# preprocessing; kept here so that every run measures the solver against it.

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


def _ms(xs: list[float]) -> dict:
    return {"mean": round(1000 * statistics.fmean(xs), 2), "median": round(1000 * statistics.median(xs), 2)}


def _same(a, b) -> bool:
    """Two runs of one question agree: ids, each draft's ids, each draft's objective (both optimal)."""
    if a[0] != b[0] or len(a[1]) != len(b[1]):
        return False
    for x, y in zip(a[1], b[1]):
        if x["ids"] != y["ids"]:
            return False
        if x["status"] == y["status"] == "optimal" and abs(x["objective"] - y["objective"]) > 1.1e-6:
            return False
    return True


def run_set(folder: Path, ctx, limit: int | None) -> tuple[dict, dict]:
    from atomgraph.graphs.arm import retrieve
    from atomgraph.nodes.arm import structure_alignment
    from atomgraph.nodes.arm.structure_alignment import UnitCache
    from atomgraph.tools.arm_index import ArmIndex
    from atomgraph.tools.objects import load_objects, load_questions

    objects = load_objects(folder / "objects.jsonl")
    questions = load_questions(folder / "questions.jsonl", object_ids=[o.id for o in objects])
    if limit and limit < len(questions):
        questions = questions[:: len(questions) // limit][:limit]
    index = ArmIndex.build(objects)
    index.prime_queries([q.question for q in questions])
    UnitCache.of(index).prime_all()
    solvers = {"solver": structure_alignment.solve_structures, "baseline": baseline_solve_structures}
    for q in questions:  # warm: imports, CBC loaded, every question's neighbour and compatibility caches
        retrieve("arm", q, index, ctx.k, ctx)
    cpu: dict[str, list[float]] = {name: [] for name in solvers}
    structure, mip_ms, runs = [], [], {name: {} for name in solvers}
    try:
        for n, q in enumerate(questions):
            for name in (list(solvers) if n % 2 == 0 else list(solvers)[::-1]):
                structure_alignment.solve_structures = solvers[name]
                c0 = time.process_time()
                res = retrieve("arm", q, index, ctx.k, ctx)
                cpu[name].append(time.process_time() - c0)
                drafts = res.trace.get("drafts") or []
                runs[name][q.id] = [list(res.ids), [{"ids": list(d["ids"]), "status": d["mip"]["status"],
                                                     "objective": float(d["mip"]["objective"])} for d in drafts]]
                if name == "solver":
                    structure.append(float((res.trace.get("stage_seconds") or {}).get("structure", 0.0)))
                    mip_ms.append(sum(float(d["mip"]["solve_ms"]) for d in drafts))
    finally:
        structure_alignment.solve_structures = solvers["solver"]
    differ = [q for q in runs["solver"] if not _same(runs["solver"][q], runs["baseline"][q])]
    summary = {
        "objects": len(objects), "questions": len(questions),
        "cpu_ms_per_question": {name: _ms(xs) for name, xs in cpu.items()},
        "cpu_ratio": round(statistics.fmean(cpu["solver"]) / statistics.fmean(cpu["baseline"]), 3),
        "structure_ms_per_question": _ms(structure),
        "mip_ms_per_question": {"mean": round(statistics.fmean(mip_ms), 2), "median": round(statistics.median(mip_ms), 2)},
        "identical": {"questions": len(runs["solver"]), "drafts": sum(len(r[1]) for r in runs["solver"].values()),
                      "differ": len(differ), "first": differ[:5]},
    }
    ids = {q: [r[0], [d["ids"] for d in r[1]]] for q, r in runs["solver"].items()}
    return summary, ids


def main(argv: list[str] | None = None) -> int:
    from atomgraph.commands.retrieve import _parse_sets
    from atomgraph.state.arm import ArmContext

    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", default="spider,hotpotqa,musique")
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--bird", help="a folder holding bird/ in the retrieval format (benchmarks.bird_from_jar)")
    ap.add_argument("--set", action="append", metavar="NAME=VALUE")
    ap.add_argument("--limit", type=int, help="only every (n/limit)-th question of each set")
    ap.add_argument("--ids-out")
    ap.add_argument("--compare")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    ctx = ArmContext.validated(**{"mip_time_limit_s": 20.0, **_parse_sets(args.set)})
    folders = {name: Path(args.data) / name for name in args.datasets.split(",") if name}
    if args.bird:
        folders["bird"] = Path(args.bird) / "bird"
    folders = {n: f for n, f in folders.items() if (f / "objects.jsonl").is_file() or print(f"skipped: {f} is absent")}
    reference = json.loads(Path(args.compare).read_text()) if args.compare else {}
    result: dict = {"benchmark": "arm_solver", "context": ctx.to_json(), "load_before": os.getloadavg(),
                    "datasets": {}}
    every: dict = {}
    differ = 0
    for name, folder in folders.items():
        summary, ids = run_set(folder, ctx, args.limit)
        every[name] = ids
        differ += summary["identical"]["differ"]
        if name in reference:
            ref = reference[name]
            diff = [q for q in ids if q in ref and ids[q] != ref[q]]
            summary["compared"] = {"questions": sum(q in ref for q in ids), "differ": len(diff), "first": diff[:5]}
            differ += len(diff)
        result["datasets"][name] = summary
        cpu = summary["cpu_ms_per_question"]
        print(f"{name:9s} {summary['questions']:5d} questions  CPU {cpu['solver']['mean']:8.1f} ms/question against "
              f"{cpu['baseline']['mean']:8.1f} (x{summary['cpu_ratio']:.2f})  MIPs {summary['mip_ms_per_question']['mean']:8.1f} ms"
              f"  differ {summary['identical']['differ']}/{summary['questions']}"
              + (f"  against --compare {summary['compared']['differ']}/{summary['compared']['questions']}"
                 if "compared" in summary else ""), flush=True)
    result["load_after"] = os.getloadavg()
    if args.ids_out:
        Path(args.ids_out).write_text(json.dumps(every))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
