"""ATOMR executor benchmark on the paper's released trees.

(a) With every model call taking the same latency L, the wall time of one question under
    the concurrent scheduler vs a strictly sequential post-order run (``max_parallel=1``) of
    the same graph, as a ratio; and vs the critical-path bound (longest dependency chain of
    LLM calls, the plan included, × L).
(b) Framework overhead per step with a zero-latency model: wall time per executed step
    (LangGraph superstep machinery, state merging, prompt formatting, parsing), in ms.

    python -m benchmarks.bench_atomr_executor [--trees 40] [--latency 0.05] [--out FILE]

Both runs use two in-memory sources (so source selection is a real LLM step) and a
scripted model that returns the released tree as the plan.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from pathlib import Path

from atomgraph.graphs.atomr import build_atomr_graph
from atomgraph.prompts.atomr.tree_parser import parse_tree
from atomgraph.settings import Settings
from atomgraph.state.tree import TreeParseError
from atomgraph.testing import atomr_scripted_model
from atomgraph.tools.memory_source import InMemorySource

RELEASED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "atomr" / "released"
FILES = ["hotpotqa_test_500_trees.jsonl", "2Wiki_test_500_trees.jsonl"]


def load_trees(n: int, seed: int = 0) -> list[tuple[str, dict, int]]:
    """(question, raw tree, LLM-call critical path) for ``n`` parseable released trees."""
    rows = []
    for name in FILES:
        for line in (RELEASED / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            try:
                tree = parse_tree(row["reasoning_tree"], row["question"])
            except TreeParseError:
                continue
            rows.append((row["question"], row["reasoning_tree"], 1 + tree.critical_path()))
    random.Random(seed).shuffle(rows)
    return rows[:n]


def sources():
    passages = [{"title": f"Doc {i}", "text": f"Passage number {i} about ok things."} for i in range(20)]
    return [
        InMemorySource(passages, name="wikipedia", description="Encyclopedia passages."),
        InMemorySource(passages, name="google", description="Web results.", kind="web"),
    ]


async def time_question(graph, question: str, max_parallel: int | None) -> tuple[float, dict]:
    # filter_threshold 0: no Filter falls back to direct RAG on the benchmark's generic passages,
    # so every question makes exactly the calls its tree implies (the critical path is exact).
    cfg = {"configurable": {"max_parallel": max_parallel, "max_llm_calls": 500, "max_nodes": 200, "max_depth": 20,
                            "filter_threshold": 0.0}}
    t0 = time.perf_counter()
    out = await graph.ainvoke({"question": question}, config=cfg)
    return time.perf_counter() - t0, out


async def main_async(args) -> dict:
    trees = load_trees(args.trees)
    plans = {q: t for q, t, _ in trees}
    settings = Settings(cache=False)

    # (a) concurrency with a fixed simulated latency
    model = atomr_scripted_model(plans, latency_s=args.latency)
    graph = build_atomr_graph(model=model, sources=sources(), settings=settings)
    rows = []
    for q, _, cp in trees:
        conc, out = await time_question(graph, q, None)
        seq, out_seq = await time_question(graph, q, 1)
        calls = len(out["llm_calls"])
        assert calls == len(out_seq["llm_calls"]), "both schedules must make the same calls"
        rows.append({"calls": calls, "critical_path": cp, "concurrent_s": conc, "sequential_s": seq})

    # (b) per-step overhead with a zero-latency model
    fast = build_atomr_graph(model=atomr_scripted_model(plans), sources=sources(), settings=settings)
    steps = 0
    t0 = time.perf_counter()
    for q, _, _ in trees:
        _, out = await time_question(fast, q, None)
        steps += len(out["llm_calls"])  # one LLM call per step, the plan included
    overhead_ms = (time.perf_counter() - t0) / steps * 1000

    L = args.latency
    speedups = [r["sequential_s"] / r["concurrent_s"] for r in rows]
    branching = [r for r in rows if r["critical_path"] < r["calls"]]
    vs_bound = [r["concurrent_s"] / (r["critical_path"] * L) for r in rows]
    summary = {
        "trees": len(rows),
        "latency_s": L,
        "mean_llm_calls": statistics.mean(r["calls"] for r in rows),
        "mean_critical_path_calls": statistics.mean(r["critical_path"] for r in rows),
        "total_sequential_s": sum(r["sequential_s"] for r in rows),
        "total_concurrent_s": sum(r["concurrent_s"] for r in rows),
        "speedup_total": sum(r["sequential_s"] for r in rows) / sum(r["concurrent_s"] for r in rows),
        "speedup_median": statistics.median(speedups),
        "trees_with_parallel_branches": len(branching),
        "speedup_median_parallel_trees": statistics.median(r["sequential_s"] / r["concurrent_s"] for r in branching)
        if branching else None,
        "calls_over_critical_path_median_parallel_trees": statistics.median(r["calls"] / r["critical_path"] for r in branching)
        if branching else None,
        "concurrent_over_critical_path_median": statistics.median(vs_bound),
        "concurrent_over_critical_path_max": max(vs_bound),
        "sequential_over_calls_x_L_median": statistics.median(r["sequential_s"] / (r["calls"] * L) for r in rows),
        "overhead_ms_per_step": overhead_ms,
        "steps_measured": steps,
    }
    return {"summary": summary, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trees", type=int, default=40)
    p.add_argument("--latency", type=float, default=0.05, help="simulated seconds per model call")
    p.add_argument("--out", help="write the JSON result here")
    args = p.parse_args(argv)
    if not RELEASED.is_dir():
        print(f"skipped: {RELEASED} is absent", file=sys.stderr)
        return 0
    result = asyncio.run(main_async(args))
    s = result["summary"]
    print(f"ATOMR executor on {s['trees']} released trees, L = {s['latency_s'] * 1000:.0f} ms per call")
    print(f"  mean LLM calls / question          {s['mean_llm_calls']:.1f}")
    print(f"  mean critical path (calls)         {s['mean_critical_path_calls']:.1f}")
    print(f"  sequential / concurrent (total)    {s['speedup_total']:.2f}x   (median per question {s['speedup_median']:.2f}x)")
    if s["trees_with_parallel_branches"]:
        print(f"  trees with parallel branches       {s['trees_with_parallel_branches']}: median speedup "
              f"{s['speedup_median_parallel_trees']:.2f}x (ideal: calls / critical path = "
              f"{s['calls_over_critical_path_median_parallel_trees']:.2f}x)")
    print(f"  concurrent / critical-path bound   median {s['concurrent_over_critical_path_median']:.3f}, max {s['concurrent_over_critical_path_max']:.3f}")
    print(f"  sequential / (calls x L)           median {s['sequential_over_calls_x_L_median']:.3f}")
    print(f"  framework overhead per step        {s['overhead_ms_per_step']:.2f} ms  ({s['steps_measured']} steps, zero-latency model)")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
