"""Summarise `atomgraph retrieve --method arm --out DIR` runs (issue 15, item 7): recall and
perfect recall, per-stage seconds, distinct drafts, and the alignment invariant checked from the
records themselves.

    python -m benchmarks.arm_local_report NAME=DIR [NAME=DIR ...] [--out benchmarks/results/arm_local.json]

``NAME`` is ``set/row`` (e.g. ``hotpotqa/full``); the set's objects are read from
``../shared/data/retrieval/<set>/objects.jsonl`` (``--data`` elsewhere) for the invariant check:
every n-gram listed in a record's ``alignment`` must occur as contiguous words of one field of
some object (the fields the index tokenises: title, text, column names, cells), checked here
with the index's tokenizer but without the index. Per run it reports:

- ``recall`` / ``perfect_recall`` (percent, k of the run) and ``questions``;
- ``stage_seconds``: mean and median per graph node (model runs: ``trace.stage_seconds``);
  ``seconds``: the same for the whole question — both over the ``timed_questions`` whose model
  calls the response cache answered none of (a replayed reply costs nothing);
- ``llm_calls_per_question``: per stage, mean calls, prompt and completion tokens and seconds per
  timed question;
- ``distinct_drafts``: mean and the count of questions with 1, 2, 3 distinct drafts;
- ``keyword_source`` and ``alignment_mode`` counts; ``ngrams_per_keyword`` (mean);
- ``invariant``: n-grams checked and violations (with the first few);
- ``verifier``: drafts verified, selections that kept nothing, unreadable replies.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval"


def _stats(values: list[float]) -> dict:
    return {"mean": round(statistics.mean(values), 3), "median": round(statistics.median(values), 3)} if values else {}


def field_texts(objects_file: Path) -> list[str]:
    """Every tokenised field of every object, as `` tok tok … `` (spaces around)."""
    from atomgraph.tools.arm_index import object_fields, tokens
    from atomgraph.tools.objects import load_objects

    return [" " + " ".join(tokens(f)) + " " for o in load_objects(objects_file) for f in object_fields(o)]


def summarise(run_dir: Path, fields: list[str] | None) -> dict:
    from atomgraph.evaluation.retrieval import summarize

    records = [json.loads(x) for x in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    summary = summarize(records)  # from the records: a run stopped early is summarised too
    traces = [r.get("trace") or {} for r in records]
    # seconds only from questions the response cache answered nothing of (a replayed reply takes ~0 s)
    timed = [t for t in traces if not any(c.get("cached") for c in (t.get("llm_call_stats") or {}).values())]
    stages: dict[str, list[float]] = {}
    for t in timed:
        for stage, sec in (t.get("stage_seconds") or {}).items():
            stages.setdefault(stage, []).append(float(sec))
    calls: dict[str, dict[str, float]] = {}
    for t in timed:
        for stage, c in (t.get("llm_call_stats") or {}).items():
            acc = calls.setdefault(stage, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0, "cached": 0})
            for key in acc:
                acc[key] += c.get(key, 0)
    n = max(len(timed), 1)
    drafts = [int(t["distinct_drafts"]) for t in traces if t.get("distinct_drafts") is not None]
    checked, bad = 0, []
    seen: dict[str, bool] = {}
    modes, per_kw = Counter(), []
    for r, t in zip(records, traces):
        for a in t.get("alignment") or []:
            modes[a.get("mode")] += 1
            per_kw.append(len(a.get("ngrams") or []))
            for g in a.get("ngrams") or []:
                checked += 1
                if fields is not None:
                    if g not in seen:
                        seen[g] = any(f" {g} " in f for f in fields)
                    if not seen[g]:
                        bad.append({"question": r["id"], "keyword": a.get("keyword"), "ngram": g})
    verdicts = [v for t in traces for v in t.get("verdicts") or []]
    all_group = summary.get("all", {})
    return {
        "questions": len(records),
        "recall": all_group.get("recall"), "perfect_recall": all_group.get("perfect_recall"),
        "complete": (run_dir / "summary.json").is_file(),
        "errors": sum(1 for r in records if "error" in r),
        "timed_questions": len(timed),
        "seconds": _stats([float(t["seconds"]) for t in timed if t.get("seconds") is not None]),
        "stage_seconds": {s: _stats(v) for s, v in stages.items()},
        "llm_calls_per_question": {s: {k: round(v / n, 2) for k, v in c.items()} for s, c in calls.items()},
        "distinct_drafts": {"mean": round(statistics.mean(drafts), 3) if drafts else None,
                            "counts": dict(sorted(Counter(drafts).items()))},
        "keyword_source": dict(Counter(t.get("keyword_source") for t in traces)),
        "alignment_mode": dict(modes),
        "ngrams_per_keyword": round(statistics.mean(per_kw), 2) if per_kw else None,
        "invariant": {"ngrams_checked": checked, "violations": len(bad) if fields is not None else None,
                      "first_violations": bad[:5]},
        "verifier": {"drafts_verified": len(verdicts),
                     "kept_nothing": sum(1 for v in verdicts if v.get("selected") == []),
                     "unreadable": sum(1 for v in verdicts if v.get("selected") is None)},
        "retrieved_per_question": round(statistics.mean(len(r.get("retrieved") or []) for r in records), 2) if records else 0,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", metavar="SET/ROW=DIR")
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--out", help="write the summaries as JSON here")
    ap.add_argument("--note", action="append", default=[], metavar="TEXT", help="a line kept in the JSON (conditions)")
    ap.add_argument("--records", metavar="FILE.jsonl",
                    help="also write compact per-question records (id, gold, retrieved, keywords, alignment, drafts, "
                         "verdicts, stage seconds) of the runs named */full")
    args = ap.parse_args(argv)
    fields_of: dict[str, list[str] | None] = {}
    out: dict = {"benchmark": "arm_local", "notes": args.note, "runs": {}}
    for item in args.runs:
        name, _, where = item.partition("=")
        dataset = name.split("/")[0]
        if dataset not in fields_of:
            objects = Path(args.data) / dataset / "objects.jsonl"
            fields_of[dataset] = field_texts(objects) if objects.is_file() else None
        out["runs"][name] = summarise(Path(where), fields_of[dataset])
        s = out["runs"][name]
        print(f"{name:28s} n={s['questions']:4d} R={s['recall']} PR={s['perfect_recall']} "
              f"sec/q={s['seconds'].get('mean')} drafts={s['distinct_drafts']['mean']} "
              f"invariant {s['invariant']['violations']}/{s['invariant']['ngrams_checked']}", file=sys.stderr)
    if args.records:
        with open(args.records, "w", encoding="utf-8") as fh:
            for item in args.runs:
                name, _, where = item.partition("=")
                if not name.endswith("/full"):
                    continue
                for line in (Path(where) / "results.jsonl").read_text(encoding="utf-8").splitlines():
                    r = json.loads(line)
                    t = r.get("trace") or {}
                    fh.write(json.dumps({
                        "run": name, "id": r["id"], "gold_ids": r["gold_ids"], "retrieved": r["retrieved"],
                        "scores": r["scores"], "keywords": t.get("keywords"), "keyword_source": t.get("keyword_source"),
                        "alignment": t.get("alignment"), "distinct_drafts": t.get("distinct_drafts"),
                        "drafts": [d.get("ids") for d in t.get("drafts") or []],
                        "verdicts": [{"selected": v.get("selected"), "reasoning": v.get("reasoning")}
                                     for v in t.get("verdicts") or []],
                        "stage_seconds": t.get("stage_seconds"), "llm_call_stats": t.get("llm_call_stats"),
                        "problems": t.get("problems"),
                    }, ensure_ascii=False) + "\n")
    text = json.dumps(out, indent=2, ensure_ascii=False)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
