"""Where ARM loses the gold objects dense retrieval finds (issue 30 item 3), LLM-free, k = 5.

    nice -n 10 python -m benchmarks.bench_arm_losses [--dataset musique] [--every 2] \
        [--set NAME=VALUE ...] [--out F.json]

One index, the dense baseline and one ARM configuration (the defaults, ``llm=False``, plus any
``--set``) on every Nth question. Each gold object is placed at the first stage that lost it:

- ``pool``: in no draft's set of search objects: not in the base set (§3.2.1: each keyword's best
  ``keyword_pool`` objects by its n-gram-list query) nor added by expansion (§3.2.2);
- ``set``: in some draft's set of search objects but chosen by no draft's MIP;
- ``vote``: in some draft but not among the k the vote returns;
- ``final``: retrieved.

For a gold object in a set that no MIP chose: its relevance (R_i) rank among the set's objects
(a gold object among the set's 5 most relevant that no draft keeps lost to compatibility or
coverage). ``via_expansion`` counts the gold objects of the later stages that only expansion brought in.
For every gold object outside the base set: the best rank any keyword's query gives it and its
rank by similarity to the whole question (dense).

Reported for every gold object and for the gold objects dense's top k holds (what ARM would have
to keep to match dense), plus how many of each keyword's best objects are gold and the
keywords of the questions where ARM retrieves less gold than dense (first 15).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval"
STAGES = ("pool", "set", "vote", "final")


def _rank(scores: np.ndarray, p: int) -> int:
    """1-based rank of position ``p`` (ties counted in its favour)."""
    return int(np.sum(scores > scores[p])) + 1


def main(argv: list[str] | None = None) -> int:
    from atomgraph.commands.retrieve import _parse_sets
    from atomgraph.graphs.arm import arm_retriever
    from atomgraph.nodes.arm.information_alignment import Scores
    from atomgraph.nodes.arm.pipeline import dense_retrieve
    from atomgraph.nodes.arm.structure_alignment import UnitCache
    from atomgraph.state.arm import ArmContext
    from atomgraph.tools.arm_index import ArmIndex
    from atomgraph.tools.objects import load_objects, load_questions

    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="musique")
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--every", type=int, default=2)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--set", action="append", metavar="NAME=VALUE")
    ap.add_argument("--mip-time-limit", type=float, default=20.0)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    folder = Path(args.data) / args.dataset
    if not folder.is_dir():
        print(f"skipped: {folder} is absent")
        return 0
    objects = load_objects(folder / "objects.jsonl")
    questions = load_questions(folder / "questions.jsonl", object_ids=[o.id for o in objects])[:: args.every]
    index = ArmIndex.build(objects)
    index.prime_queries([q.question for q in questions])
    ctx = ArmContext.validated(**{"mip_time_limit_s": args.mip_time_limit, **_parse_sets(args.set),
                                  "k": args.k, "llm": False})
    UnitCache.of(index, ctx.column_headers).prime_all()
    pos = {o.id: i for i, o in enumerate(objects)}
    retrieve = arm_retriever(index, ctx)

    t0 = time.perf_counter()
    stage_all: Counter = Counter()
    stage_dense: Counter = Counter()
    via_expansion: Counter = Counter()
    unchosen: list[dict] = []
    base_ranks: list[dict] = []
    kw_hits: list[tuple[int, int]] = []  # per keyword: (gold among its best keyword_pool, keyword_pool)
    per_question: list[dict] = []
    arm_r = dense_r = arm_pr = dense_pr = 0.0
    for q in questions:
        gold = list(q.gold_ids)
        dense_ids = dense_retrieve(q, index, args.k).ids
        res = retrieve(q)
        tr = res.trace
        final = set(res.ids[: args.k])
        base = {c["id"] for c in tr.get("candidates") or []}
        drafts = tr.get("drafts") or []
        sets = set().union(*(set(d["pool"]) for d in drafts)) if drafts else set(base)
        chosen = set().union(*(set(d["ids"]) for d in drafts)) if drafts else set()
        groups = [a["ngrams"] for a in tr.get("alignment") or []]
        scores = Scores.of(index, q.question, groups, ctx.keyword_bm25_weight)
        for s in scores.keyword:
            top = np.argsort(-s, kind="stable")[: ctx.keyword_pool]
            kw_hits.append((sum(objects[p].id in gold for p in top), len(top)))
        stages = {}
        for g in gold:
            st = ("final" if g in final else "vote" if g in chosen else "set" if g in sets else "pool")
            if st != "pool" and g not in base:
                via_expansion[st] += 1
            stages[g] = st
            if st == "set":  # in a set, chosen by no MIP: its relevance rank in the sets holding it
                held = [d for d in drafts if g in d["pool"]]
                rr = [sorted(d["relevance"].values(), reverse=True).index(d["relevance"][g]) + 1 for d in held]
                unchosen.append({"relevance_rank": min(rr), "set_size": len(held[0]["pool"]),
                                 "in_dense_top_k": g in dense_ids})
            stage_all[st] += 1
            if g in dense_ids:
                stage_dense[st] += 1
            if g not in base:
                p = pos[g]
                kr = min((_rank(s, p) for s in scores.keyword), default=None)
                base_ranks.append({"keyword_rank": kr, "dense_rank": _rank(scores.dense, p),
                                   "in_dense_top_k": g in dense_ids, "reached_by_expansion": g in sets})
        a_hit = sum(g in final for g in gold)
        d_hit = sum(g in dense_ids for g in gold)
        arm_r += a_hit / len(gold)
        dense_r += d_hit / len(gold)
        arm_pr += a_hit == len(gold)
        dense_pr += d_hit == len(gold)
        per_question.append({"id": q.id, "gold": len(gold), "arm": a_hit, "dense": d_hit,
                             "keywords": [a["keyword"] for a in tr.get("alignment") or []],
                             "stages": stages, "base": len(base), "distinct_drafts": tr.get("distinct_drafts")})
    n = len(questions)
    ranks = [b["keyword_rank"] for b in base_ranks if b["keyword_rank"] is not None]
    dense_lost = [b for b in base_ranks if b["in_dense_top_k"]]
    report = {
        "benchmark": "arm_losses", "dataset": args.dataset, "every": args.every, "questions": n, "k": args.k,
        "context_extensions": ctx.extensions(), "set": _parse_sets(args.set),
        "dense": {"recall": round(100 * dense_r / n, 1), "perfect_recall": round(100 * dense_pr / n, 1)},
        "arm": {"recall": round(100 * arm_r / n, 1), "perfect_recall": round(100 * arm_pr / n, 1)},
        "gold": sum(stage_all.values()),
        "lost_at_all_gold": {s: stage_all[s] for s in STAGES},
        "lost_at_dense_gold": {s: stage_dense[s] for s in STAGES},
        "via_expansion": dict(via_expansion),
        "not_in_base": {
            "count": len(base_ranks),
            "best_keyword_rank_median": statistics.median(ranks) if ranks else None,
            "best_keyword_rank_le": {str(c): sum(r <= c for r in ranks) for c in (5, 10, 20, 50)},
            "dense_rank_le": {str(c): sum(b["dense_rank"] <= c for b in base_ranks) for c in (5, 10, 20, 50)},
            "in_dense_top_k": len(dense_lost),
            "in_dense_top_k_best_keyword_rank": sorted(b["keyword_rank"] for b in dense_lost if b["keyword_rank"]),
        },
        "in_a_set_chosen_by_no_draft": {
            "relevance_rank_le": {str(c): sum(u["relevance_rank"] <= c for u in unchosen) for c in (1, 3, 5, 10)},
            "dense_hits_relevance_ranks": sorted(u["relevance_rank"] for u in unchosen if u["in_dense_top_k"]),
            "relevance_rank_median": statistics.median([u["relevance_rank"] for u in unchosen]) if unchosen else None,
        },
        "keywords_per_question": round(statistics.mean(len(p["keywords"]) for p in per_question), 2),
        "keyword_queries_with_gold_in_best": f"{sum(h > 0 for h, _ in kw_hits)} of {len(kw_hits)}",
        "base_median": statistics.median(p["base"] for p in per_question),
        "worse_than_dense": [p for p in per_question if p["arm"] < p["dense"]][:15],
        "questions_worse_better_than_dense": [sum(p["arm"] < p["dense"] for p in per_question),
                                              sum(p["arm"] > p["dense"] for p in per_question)],
        "seconds": round(time.perf_counter() - t0, 1),
    }
    summary = {k: v for k, v in report.items() if k != "worse_than_dense"}
    print(json.dumps(summary, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
