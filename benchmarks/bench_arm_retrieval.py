"""ARM retrieval (LLM-free) vs dense vs BM25 at k = 5 on ../shared/data/retrieval/*.

    python -m benchmarks.bench_arm_retrieval [--k 5] [--datasets spider,hotpotqa,musique] [--out F]

ARM replays each question's ``"keywords"`` where present (Spider: the LLM decomposition
released with JAR) and uses the question's corpus n-grams otherwise (hotpotqa, musique);
structure alignment runs with the default :class:`~atomgraph.state.arm.ArmContext` unless
``--set NAME=VALUE`` overrides it; ``--dense-search ann --ann-candidates N`` forces the ANN
dense search (``auto`` is exact on these sets) to measure what it changes. Reports recall and perfect recall (percent) overall and
for multi-gold questions (Spider's multi-table questions separately), plus ARM's candidate
pool sizes and MIP solve times taken from its traces. Spider is also reported by halves
(``halves``: questions at even positions, used for tuning, and at odd positions, held out). Index caches go to
``$ATOMGRAPH_ARM_CACHE`` (default ``~/.cache/atomgraph/arm-index``): the first run embeds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval"


def main(argv: list[str] | None = None) -> int:
    from atomgraph.commands.retrieve import _parse_sets
    from atomgraph.evaluation.retrieval import evaluate, summarize
    from atomgraph.graphs.arm import retrieve
    from atomgraph.state.arm import ArmContext
    from atomgraph.tools.arm_index import ArmIndex
    from atomgraph.tools.objects import load_objects, load_questions

    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--datasets", default="spider,hotpotqa,musique")
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--set", action="append", metavar="NAME=VALUE")
    ap.add_argument("--out")
    ap.add_argument("--methods", default="dense,bm25,arm")
    ap.add_argument("--limit", type=int, help="only every (n/limit)-th question of each set")
    ap.add_argument("--dense-search", choices=["auto", "exact", "ann"], default="auto")
    ap.add_argument("--ann-candidates", type=int, default=256, help="chunks the ANN returns per dense query")
    ap.add_argument("--mip-time-limit", type=float, default=20.0,
                    help="CBC's limit per MIP (s; the interactive default is 0.5 s): large, so the limit is no source "
                         "of noise on a loaded machine; the report counts the MIPs that still stopped at it")
    args = ap.parse_args(argv)
    ctx = ArmContext.validated(**{"mip_time_limit_s": args.mip_time_limit, **_parse_sets(args.set), "k": args.k})
    if not Path(args.data).is_dir():
        print(f"skipped: {args.data} is absent")
        return 0
    results: dict = {"benchmark": "arm_retrieval", "k": args.k, "context": ctx.to_json(), "datasets": {},
                     "dense_search": args.dense_search, "ann_candidates": args.ann_candidates}
    for name in args.datasets.split(","):
        folder = Path(args.data) / name
        objects = load_objects(folder / "objects.jsonl")
        questions = load_questions(folder / "questions.jsonl", object_ids=[o.id for o in objects])
        if args.limit and args.limit < len(questions):
            questions = questions[:: len(questions) // args.limit][: args.limit]
        t = time.perf_counter()
        index = ArmIndex.build(objects, dense_search=args.dense_search, ann_candidates=args.ann_candidates)
        index.prime_queries([q.question for q in questions])
        if ctx.structure_alignment:
            from atomgraph.nodes.arm.structure_alignment import UnitCache

            UnitCache.of(index).prime_all()  # sentence/cell/column embeddings (cached with the index)
        ds = {"objects": len(objects), "questions": len(questions), "index_s": round(time.perf_counter() - t, 1), "methods": {}}
        for method in args.methods.split(","):
            t = time.perf_counter()
            run = evaluate(lambda q: retrieve(method, q, index, args.k, ctx), questions, objects, method=method, k=args.k)
            entry = {g: {key: s[key] for key in ("questions", "recall", "perfect_recall", "precision", "f1")}
                     for g, s in run.summary.items()}
            entry["seconds"] = round(time.perf_counter() - t, 1)
            if name == "spider":  # even positions tuned on, odd positions held out (state/arm.py)
                entry["halves"] = {
                    half: {g: {key: s[key] for key in ("questions", "recall", "perfect_recall")}
                           for g, s in summarize(run.records[parity::2]).items() if g in ("all", "multi_table")}
                    for half, parity in (("even_tuned", 0), ("odd_held_out", 1))
                }
            if method == "arm":
                every = [d["mip"] for r in run.records if "trace" in r for d in r["trace"].get("drafts") or []]
                mips = [r["trace"]["mip"] for r in run.records if "trace" in r]
                solve = sorted(m["solve_ms"] for m in mips)
                entry["mip"] = {
                    "median_ms": round(statistics.median(solve), 2),
                    "p95_ms": round(solve[int(0.95 * (len(solve) - 1))], 2),
                    "median_candidates": statistics.median(m["candidates"] for m in mips),
                    "statuses": {s: sum(m["status"] == s for m in every) for s in {m["status"] for m in every}},
                    "time_limited": sum(m["status"] != "optimal" for m in every), "solved": len(every),
                    "time_limit_s": ctx.mip_time_limit_s,
                }
                distinct = [r["trace"]["distinct_drafts"] for r in run.records if "trace" in r]
                entry["drafts"] = {"mean_distinct": round(statistics.mean(distinct), 2),
                                   "histogram": {n: distinct.count(n) for n in sorted(set(distinct))}}
                stages = sorted({s for r in run.records for s in (r.get("trace") or {}).get("stage_seconds") or {}})
                entry["seconds_per_question"] = {  # per graph stage (align, retrieve, structure, ...)
                    stage: round(statistics.mean(r["trace"]["stage_seconds"].get(stage, 0.0) for r in run.records
                                                 if "trace" in r), 4) for stage in stages}
                entry["keyword_sources"] = {s: sum(r["trace"]["keyword_source"] == s for r in run.records)
                                            for s in {r["trace"]["keyword_source"] for r in run.records}}
            ds["methods"][method] = entry
            groups = "  ".join(f"{g}: R {s['recall']:.1f} PR {s['perfect_recall']:.1f} (n={s['questions']})"
                               for g, s in run.summary.items() if g in ("all", "multi_gold", "multi_table"))
            extra = f"  distinct drafts {entry['drafts']['mean_distinct']}" if method == "arm" else ""
            print(f"{name:9s} {method:6s} {groups}{extra}  ({entry['seconds']} s)", flush=True)
            for half, h in entry.get("halves", {}).items():
                print(f"{'':9s} {'':6s} {half}: " + "  ".join(
                    f"{g}: R {s['recall']:.1f} PR {s['perfect_recall']:.1f} (n={s['questions']})" for g, s in h.items()), flush=True)
        results["datasets"][name] = ds
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
