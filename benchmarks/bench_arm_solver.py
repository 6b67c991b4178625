"""ARM's structure alignment per question: CPU of today's solver against the baseline, and the
retrieved objects, in one run.

    python -m benchmarks.bench_arm_solver [--datasets spider,hotpotqa,musique] [--bird DIR]
        [--limit N] [--ids-out F] [--compare F] [--out F]

ARM LLM-free (as ``bench_arm_retrieval``) on every question of each set, once to warm the
caches (units, neighbours, compatibility), then twice per question, alternately (the order
swapped every question): with today's structure stage
(:func:`atomgraph.nodes.arm.structure_alignment.solve_drafts`: one C over every draft's set,
:func:`~atomgraph.nodes.arm.structure_alignment.solve_structures`: small problems scored set by
set where the warm start bounds them, relaxations, warm starts computed for every candidate at
once) and with the baseline (:func:`baseline_solve_drafts` and :func:`baseline_solve_structures`
below: each draft's C on its own, one exact MIP per draft with CBC's defaults, the warm start
scanned set by set: ``greedy_by_scan``). Per solver: the process CPU seconds each question takes (all stages);
their ratio; and the comparison — the questions whose retrieved ids, any draft's ids, or any
draft's objective (both optimal: within 1e-6) differ. ``--ids-out`` writes the ids (one JSON
object per set: question id → ``[ids, [draft ids …]]``); ``--compare`` reads such a file and
counts the questions whose ids differ from it. The exit status is 1 when any question differs.
``scoring_crossover``: one draft scored set by set against CBC's program, by size
(:func:`scoring_crossover`).
``--bird DIR``: a Bird set in the retrieval format (``benchmarks.bird_from_jar``). The MIP time
limit is large (20 s) so that no result depends on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from atomgraph.nodes.arm.structure_alignment import (Prepared, StructureResult, _pairs, build_model, choice_program,
                                                      selection_value)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval"


# --- the baseline: the solver before the orientation program and the partner relaxations ---------------
# One exact MIP per draft (c_ij ≤ b_i, c_ij ≤ b_j per pair), CBC's default heuristics, cuts and
# preprocessing; kept here so that every run measures the solver against it.

def baseline_build_model(R: np.ndarray, C: np.ndarray, k: int, *, max_links: int | None,
                         links_rule: str = "forest", coverage: np.ndarray | None = None, link_weight: float = 1.0):
    """The baseline's python-mip model: under ``pairs`` one binary c_ij per pair with C_ij > 0,
    c_ij ≤ b_i, c_ij ≤ b_j, Σ c_ij ≤ k − 1, CBC's defaults; ``forest`` is today's program."""
    import mip

    if links_rule != "pairs":
        return build_model(R, C, k, max_links=max_links, links_rule=links_rule, coverage=coverage,
                           link_weight=link_weight)
    model, b, objective = choice_program(R, k, coverage)
    pairs = _pairs(C)
    c = [model.add_var(var_type=mip.BINARY, name=f"c{i}_{j}") for i, j, _ in pairs]
    model.objective = objective + mip.xsum(link_weight * w * v for (_, _, w), v in zip(pairs, c))
    if max_links is not None and c:
        model += mip.xsum(c) <= max_links
    for (i, j, _), v in zip(pairs, c):
        model += v <= b[i]
        model += v <= b[j]
    return model, b, c, pairs


def baseline_solve_structures(problems: Sequence, k: int, *, max_links: int | None = -1, time_limit_s: float = 0.5,
                              links_rule: str = "forest", link_weight: float = 1.0) -> list[StructureResult]:
    """The baseline's drafts in order: one exact model each, warm-started as the solver's are."""
    import mip

    out: list[StructureResult] = []
    before: list[Any] = []
    for keys, R, C, coverage in problems:
        t0 = time.perf_counter()
        p = Prepared.of(keys, R, C, coverage, k, max_links, links_rule, link_weight, before)
        R, C, coverage, n, kk, cap = p.R, p.C, p.coverage, len(p.R), p.k, p.cap
        start, g_val, g_links = p.greedy, p.greedy_value, p.greedy_links
        if p.settled:
            out.append(StructureResult(p.best, p.best_value, "optimal", time.perf_counter() - t0, g_val, p.counted, 0,
                                       time_limit_s, "settled"))
            before = [keys[i] for i in p.best]
            continue
        model, b, c, pairs = baseline_build_model(R, C, kk, max_links=cap, links_rule=links_rule, coverage=coverage,
                                                  link_weight=link_weight)
        chosen_start, counted = p.best, p.counted  # the warm start: greedy's, or the problem before's where better
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


def baseline_solve_drafts(index, pool, scores, ctx, exclude=frozenset()):
    """The baseline's drafts: each draft's C computed over its own set (the solver's drafts share
    one C over all their sets), solved by :func:`baseline_solve_structures`."""
    from atomgraph.nodes.arm.structure_alignment import draft_program, expanded_pools, solve_programs
    from atomgraph.state.arm_graph import Draft

    sets = expanded_pools(index, pool, scores, ctx, ctx.drafts, exclude) if ctx.structure_alignment else [(0, pool)]
    programs = [draft_program(index, list(objs), scores, ctx) for _, objs in sets]
    return [Draft(draft=d, steps=steps, pool=[index.objects[p].id for p in objs], ids=solved["ids"],
                  links=solved["links"], relevance=solved["relevance"], mip=solved["mip"])
            for d, ((steps, objs), solved) in enumerate(zip(sets, solve_programs(index, programs, ctx)))]


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
    solvers = {"solver": (structure_alignment.solve_structures, structure_alignment.solve_drafts,
                          structure_alignment.greedy),
               "baseline": (baseline_solve_structures, baseline_solve_drafts, structure_alignment.greedy_by_scan)}
    for q in questions:  # warm: imports, CBC loaded, every question's neighbour and compatibility caches
        retrieve("arm", q, index, ctx.k, ctx)
    cpu: dict[str, list[float]] = {name: [] for name in solvers}
    structure, mip_ms, runs = [], [], {name: {} for name in solvers}
    paths = {"scored": 0, "program": 0, "settled": 0}
    try:
        for n, q in enumerate(questions):
            for name in (list(solvers) if n % 2 == 0 else list(solvers)[::-1]):
                (structure_alignment.solve_structures, structure_alignment.solve_drafts,
                 structure_alignment.greedy) = solvers[name]
                c0 = time.process_time()
                res = retrieve("arm", q, index, ctx.k, ctx)
                cpu[name].append(time.process_time() - c0)
                drafts = res.trace.get("drafts") or []
                runs[name][q.id] = [list(res.ids), [{"ids": list(d["ids"]), "status": d["mip"]["status"],
                                                     "objective": float(d["mip"]["objective"])} for d in drafts]]
                if name == "solver":
                    for d in drafts:  # how each draft was solved
                        paths[d["mip"]["solved_by"]] += 1
                    structure.append(float((res.trace.get("stage_seconds") or {}).get("structure", 0.0)))
                    mip_ms.append(sum(float(d["mip"]["solve_ms"]) for d in drafts))
    finally:
        (structure_alignment.solve_structures, structure_alignment.solve_drafts,
         structure_alignment.greedy) = solvers["solver"]
    differ = [q for q in runs["solver"] if not _same(runs["solver"][q], runs["baseline"][q])]
    summary = {
        "objects": len(objects), "questions": len(questions),
        "cpu_ms_per_question": {name: _ms(xs) for name, xs in cpu.items()},
        "cpu_ratio": round(statistics.fmean(cpu["solver"]) / statistics.fmean(cpu["baseline"]), 3),
        "structure_ms_per_question": _ms(structure),
        "mip_ms_per_question": {"mean": round(statistics.fmean(mip_ms), 2), "median": round(statistics.median(mip_ms), 2)},
        "drafts_by_path": paths,
        "identical": {"questions": len(runs["solver"]), "drafts": sum(len(r[1]) for r in runs["solver"].values()),
                      "differ": len(differ), "first": differ[:5]},
    }
    ids = {q: [r[0], [d["ids"] for d in r[1]]] for q, r in runs["solver"].items()}
    return summary, ids


def scoring_crossover(sizes: Sequence[int] = (10, 15, 20, 25, 28, 30, 35), k: int = 5, repeats: int = 5) -> list[dict]:
    """Median CPU ms of one ``pairs`` draft through :func:`solve_structures` with its size within
    :data:`~atomgraph.nodes.arm.structure_alignment.ENUMERATION_MAX` (every set bounded against the
    warm start, scored where at most ``SCORED_MAX`` can reach it, the program otherwise) against the
    same draft solved by CBC's program alone (relaxations, warm start), on random drafts of each size
    (C 30 % dense, 5 keywords, k = 5): where ``ENUMERATION_MAX`` stands."""
    from atomgraph.nodes.arm import structure_alignment as sa

    rng = np.random.default_rng(1)
    rows = []
    for n in sizes:
        times: dict[str, list[float]] = {"scored": [], "program": []}
        sa._all_sets(n, k)  # kept for the run, as in a run of questions
        for _ in range(repeats):
            R = rng.random(n)
            C = np.triu(rng.random((n, n)) * (rng.random((n, n)) < 0.3), 1)
            C = C + C.T
            cov = rng.random((5, n)) * (rng.random((5, n)) < 0.5)
            for path, limit in (("scored", math.comb(n, k)), ("program", 0)):
                kept, sa.ENUMERATION_MAX = sa.ENUMERATION_MAX, limit
                try:
                    c0 = time.process_time()
                    sa.solve_structures([(list(range(n)), R, C, cov)], k, links_rule="pairs", time_limit_s=20.0)
                    times[path].append(time.process_time() - c0)
                finally:
                    sa.ENUMERATION_MAX = kept
        rows.append({"objects": n, "sets": math.comb(n, k),
                     **{f"{path}_ms": round(1000 * statistics.median(xs), 2) for path, xs in times.items()}})
    return rows


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
    result["scoring_crossover"] = scoring_crossover()
    print("scored set by set / CBC's program, ms a draft: " + ", ".join(
        f"{r['objects']} objects {r['scored_ms']} / {r['program_ms']}" for r in result["scoring_crossover"]), flush=True)
    result["load_after"] = os.getloadavg()
    if args.ids_out:
        Path(args.ids_out).write_text(json.dumps(every))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
