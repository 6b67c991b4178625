"""ARM's structure alignment per question: CPU and the retrieved objects, one run.

    python -m benchmarks.bench_arm_solver [--datasets spider,hotpotqa,musique] [--bird DIR]
        [--limit N] [--ids-out F] [--compare F] [--out F]

ARM LLM-free (as ``bench_arm_retrieval``) on every question of each set: the process CPU
seconds each question takes (all stages; the MIPs of the three drafts are most of it), the
structure stage's wall seconds, and every question's retrieved ids and each draft's ids.
``--ids-out`` writes those ids (one JSON object per set: question id → ``[ids, [draft ids …]]``);
``--compare`` reads such a file and counts the questions whose ids differ from it (the exit
status is 1 when any does). ``--bird DIR``: a Bird set in the retrieval format
(``benchmarks.bird_from_jar``). The MIP time limit is large (20 s) so that no result depends on
the machine's load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval"


def run_set(folder: Path, ctx, limit: int | None) -> tuple[dict, dict]:
    from atomgraph.graphs.arm import retrieve
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
    retrieve("arm", questions[0], index, ctx.k, ctx)  # warm: imports, CBC loaded, neighbour caches of the first
    cpu, structure, mip_ms, ids = [], [], [], {}
    for q in questions:
        c0 = time.process_time()
        res = retrieve("arm", q, index, ctx.k, ctx)
        cpu.append(time.process_time() - c0)
        structure.append(float((res.trace.get("stage_seconds") or {}).get("structure", 0.0)))
        drafts = res.trace.get("drafts") or []
        mip_ms.append(sum(float(d["mip"]["solve_ms"]) for d in drafts))
        ids[q.id] = [list(res.ids), [list(d["ids"]) for d in drafts]]
    summary = {
        "objects": len(objects), "questions": len(questions),
        "cpu_ms_per_question": {"mean": round(1000 * statistics.fmean(cpu), 2),
                                "median": round(1000 * statistics.median(cpu), 2)},
        "structure_ms_per_question": {"mean": round(1000 * statistics.fmean(structure), 2),
                                      "median": round(1000 * statistics.median(structure), 2)},
        "mip_ms_per_question": {"mean": round(statistics.fmean(mip_ms), 2), "median": round(statistics.median(mip_ms), 2)},
    }
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
    result: dict = {"benchmark": "arm_solver", "context": ctx.to_json(), "datasets": {}}
    every: dict = {}
    differ = 0
    for name, folder in folders.items():
        summary, ids = run_set(folder, ctx, args.limit)
        every[name] = ids
        if name in reference:
            ref = reference[name]
            diff = [q for q in ids if q in ref and ids[q] != ref[q]]
            summary["compared"] = {"questions": sum(q in ref for q in ids), "differ": len(diff), "first": diff[:5]}
            differ += len(diff)
        result["datasets"][name] = summary
        print(f"{name:9s} {summary['questions']:5d} questions  CPU {summary['cpu_ms_per_question']['mean']:8.1f} ms/question"
              f"  structure {summary['structure_ms_per_question']['mean']:8.1f} ms  MIPs {summary['mip_ms_per_question']['mean']:8.1f} ms"
              + (f"  differ {summary['compared']['differ']}/{summary['compared']['questions']}" if "compared" in summary else ""),
              flush=True)
    if args.ids_out:
        Path(args.ids_out).write_text(json.dumps(every))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
