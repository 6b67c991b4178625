"""ARM's Figure 4 ablation without a model, the distinct-draft histogram, and the paper switch,
on ../shared/data/retrieval/* at k = 5.

    python -m benchmarks.bench_arm_ablation [--datasets hotpotqa,musique,spider] [--every N] \
        [--configs dense,ia,sa1,sa,paper,mix,ent_title] [--mip-time-limit S] [--out F.json]

Every configuration runs the one ARM pipeline (the ``arm`` graph, ``llm=False``: keywords
replayed where the question has them — Spider, Bird — else the question's own corpus n-grams;
the drafts' own votes, no verification) over one index per set:

- ``dense``: the dense baseline (Appendix D.2);
- ``ia``: information alignment only (``structure_alignment=False``: the k most relevant base
  search objects, Figure 4's first bar);
- ``sa1``: + structure alignment, one draft (``drafts=1``: the MIP over the first set of search
  objects alone, Figure 4's second bar without aggregation);
- ``sa``: + structure alignment and aggregation (the defaults: three expanded sets, one MIP draft
  each, the drafts' own votes: Figure 4's third bar without a model's verification);
- ``paper``: ``paper=true`` (every extension off: R_i the cosine, no coverage or database term);
- ``paper_ia``: ``paper=true`` with ``structure_alignment=False``;
- ``twice``: the defaults with ``link_count=twice`` (Appendix B's ordered pairs: each link's C
  counted twice, as ``paper=true`` counts it); ``paper_once``: the paper's setting with
  ``link_count=once`` (each link once, the default);
- ``mix``: the defaults with ``relevance=mix`` (R_i as BM25 + cosine, min-max mixed);
- ``noexp``: the defaults with ``expansion_per_seed=0`` (the base set alone, one draft);
  ``exp3``: with 3 (the default is 5, §3.2.2's "its k most compatible objects" with the paper's k);
- ``corpuskw`` / ``ia_corpuskw``, ``infkw`` / ``ia_infkw``: the defaults / information alignment
  only with ``question_keywords=corpus`` (the question's corpus n-grams alone) or ``informative``
  (names and the rarer n-grams, at most 6); the default ``all`` is the corpus n-grams and the
  names the corpus spells otherwise;
- ``kwpool5``: ``keyword_pool=5`` (5 objects per keyword query, a number the paper does not give);
- ``ent``: ``entity_links=true`` (passages linked by the rarest capitalised word they share);
  ``title``: ``same_title_links=false`` (passages of one title link nothing); ``ent_title``: both.

Self-verification (Figure 4's third bar) needs a model and is not run here. For ARM rows the
report adds the distinct drafts per question (histogram and mean), the MIP statuses and the
seconds per question. ``--every N`` keeps every Nth question of each set (say so when quoting).
``--mip-time-limit S`` (default 20 s, against the interactive 0.5 s) sets CBC's limit for every
ARM configuration, so that the limit is not a source of noise on a loaded machine; the report
counts the MIPs that stopped at it (``mip_statuses``: ``feasible``/``greedy``) and the slowest
solve (``mip_max_s``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval"

CONFIGS: dict[str, dict | None] = {
    "dense": None,
    "ia": {"structure_alignment": False},
    "sa1": {"drafts": 1},
    "sa": {},
    "paper": {"paper": True},
    "paper_ia": {"paper": True, "structure_alignment": False},
    "twice": {"link_count": "twice"},
    "paper_once": {"database_weight": 0.0, "coverage_weight": 0.0, "table_compatibility_scale": 1.0},
    "mix": {"relevance": "mix"},
    "noexp": {"expansion_per_seed": 0},
    "corpuskw": {"question_keywords": "corpus"},
    "ia_corpuskw": {"question_keywords": "corpus", "structure_alignment": False},
    "infkw": {"question_keywords": "informative"},
    "ia_infkw": {"question_keywords": "informative", "structure_alignment": False},
    "exp3": {"expansion_per_seed": 3},
    "kwpool5": {"keyword_pool": 5},
    "ent": {"entity_links": True},
    "title": {"same_title_links": False},
    "ent_title": {"entity_links": True, "same_title_links": False},
}


def main(argv: list[str] | None = None) -> int:
    from atomgraph.commands.retrieve import _parse_sets
    from atomgraph.evaluation.retrieval import evaluate
    from atomgraph.graphs.arm import arm_retriever
    from atomgraph.nodes.arm.structure_alignment import UnitCache
    from atomgraph.nodes.arm.pipeline import dense_retrieve
    from atomgraph.state.arm import ArmContext
    from atomgraph.tools.arm_index import ArmIndex
    from atomgraph.tools.objects import load_objects, load_questions

    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--datasets", default="hotpotqa,musique,spider")
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--every", type=int, default=1, help="every Nth question of each set")
    ap.add_argument("--spider-every", type=int, help="Spider's own --every (default: --every)")
    ap.add_argument("--configs", default="dense,ia,sa1,sa,paper,mix,ent_title")
    ap.add_argument("--set", action="append", metavar="NAME=VALUE", help="applied to every ARM configuration")
    ap.add_argument("--mip-time-limit", type=float, default=20.0, help="CBC's limit per MIP (s) for every ARM configuration")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if not Path(args.data).is_dir():
        print(f"skipped: {args.data} is absent")
        return 0
    common = {"mip_time_limit_s": args.mip_time_limit, **_parse_sets(args.set)}
    results: dict = {"benchmark": "arm_ablation", "k": args.k, "every": args.every, "set": common, "datasets": {}}
    for name in args.datasets.split(","):
        folder = Path(args.data) / name
        objects = load_objects(folder / "objects.jsonl")
        questions = load_questions(folder / "questions.jsonl", object_ids=[o.id for o in objects])
        every = args.spider_every if name == "spider" and args.spider_every else args.every
        questions = questions[::every]
        t = time.perf_counter()
        index = ArmIndex.build(objects)
        index.prime_queries([q.question for q in questions])
        UnitCache.of(index).prime_all()
        ds: dict = {"objects": len(objects), "questions": len(questions), "every": every,
                    "index_s": round(time.perf_counter() - t, 1), "configs": {}}
        for cname in args.configs.split(","):
            over = CONFIGS[cname]
            t = time.perf_counter()
            if over is None:
                fn = lambda q: dense_retrieve(q, index, args.k)  # noqa: E731
                ctx = None
            else:
                ctx = ArmContext.validated(**{**common, **over, "k": args.k, "llm": False})
                fn = arm_retriever(index, ctx)
            run = evaluate(fn, questions, objects, method="dense" if ctx is None else "arm", k=args.k)
            s = run.summary["all"]
            entry: dict = {"recall": s["recall"], "perfect_recall": s["perfect_recall"],
                           "seconds": round(time.perf_counter() - t, 1)}
            if "multi_table" in run.summary:
                entry["multi_table_pr"] = run.summary["multi_table"]["perfect_recall"]
            traces = [r["trace"] for r in run.records if "trace" in r]
            if ctx is not None and traces:
                distinct = [int(tr.get("distinct_drafts") or 0) for tr in traces]
                entry["context_extensions"] = ctx.extensions()
                entry["distinct_drafts"] = {"mean": round(statistics.mean(distinct), 2),
                                            "histogram": {n: distinct.count(n) for n in sorted(set(distinct))}}
                statuses = [d["mip"]["status"] for tr in traces for d in tr.get("drafts") or []]
                entry["mip_statuses"] = {x: statuses.count(x) for x in sorted(set(statuses))}
                entry["mip_time_limited"] = sum(x != "optimal" for x in statuses)
                entry["mip_max_s"] = round(max((d["mip"]["solve_ms"] for tr in traces for d in tr.get("drafts") or []),
                                               default=0.0) / 1000, 2)
                entry["candidates_median"] = statistics.median(
                    [d["mip"]["candidates"] for tr in traces for d in tr.get("drafts") or []] or [0])
                entry["problems"] = sum(len(tr.get("problems") or []) for tr in traces)
                entry["seconds_per_question"] = round(statistics.mean(tr.get("seconds", 0.0) for tr in traces), 3)
            ds["configs"][cname] = entry
            extra = (f"  drafts {entry['distinct_drafts']}  MIPs {entry['mip_statuses']} (max {entry['mip_max_s']} s)"
                     if "distinct_drafts" in entry else "")
            print(f"{name:9s} {cname:9s} R {entry['recall']:.1f} PR {entry['perfect_recall']:.1f} "
                  f"(n={len(questions)}, {entry['seconds']} s){extra}", flush=True)
        results["datasets"][name] = ds
        if args.out:
            Path(args.out).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
