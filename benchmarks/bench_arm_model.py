"""ARM with a model choosing the keywords, against dense retrieval and against ARM's own path
without a model, on the same questions of the shared retrieval sets.

    nice python -m benchmarks.bench_arm_model [--model local:qwen2.5-1.5b] [--n 30]
        [--datasets spider,hotpotqa,musique] [--work DIR] [--out FILE]
    nice python -m benchmarks.bench_arm_model --model local            # the bundled Gemma-3-270M
    python -m benchmarks.bench_arm_model --summary                     # the tables only

**Questions.** Per set (``../shared/data/retrieval/{spider,hotpotqa,musique}``), ``--n`` questions
spread evenly over ``questions.jsonl`` (every ``len // n``-th, from the first), the same for every
path and every model.

**Paths**, each at k = 5 over the set's objects (the index cached as ``retrieve`` caches it):
``dense`` (the question's embedding, top k); ``arm_replayed``, ARM without a model (Spider: the
keywords JAR's LLM wrote, replayed; HotpotQA and MuSiQue: the question's own corpus n-grams), drafts
voted by their own counts; ``arm_model``, the ``arm`` graph with the model in every role: the model
writes the keywords (none replayed), each is aligned to the corpus by constrained decoding, three
MIP drafts, the model verifies each, the weighted vote. ARM's settings are
:class:`~atomgraph.state.arm.ArmContext`'s defaults for both ARM paths.

**Runs.** One JSON line per question in ``WORK/MODEL/SET/PATH.jsonl`` (the record ``atomgraph
retrieve --out`` writes, trace included), appended as each question ends: a killed run re-run
continues where it stopped; the two model-free paths are shared by every model.

**Results** (``--out``, default ``benchmarks/results/arm_model.json``), per model × set × path:
questions, recall and perfect recall (percent), the recall difference of ``arm_model`` against
``dense`` and against ``arm_replayed`` on the same questions with its 95 % paired bootstrap interval
(:func:`atomgraph.evaluation.compare.paired_bootstrap`),
model calls, prompt/completion tokens and seconds per question, and how often the model's replies
are usable: keyword lists read (decomposition), keywords aligned to a corpus n-gram, verifications
read (an unreadable one is left out of the vote).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ATOMGRAPH_SHARED_DATA", str(REPO.parent / "shared" / "data"))) / "retrieval"
WORK = REPO / ".atomgraph" / "arm_model"
OUT = REPO / "benchmarks" / "results" / "arm_model.json"
SETS = ("spider", "hotpotqa", "musique")
PATHS = ("dense", "arm_replayed", "arm_model")
K = 5


def spread(questions: list, n: int) -> list:
    """``n`` questions spread evenly over ``questions`` (every ``len // n``-th, from the first)."""
    step = max(1, len(questions) // n)
    return questions[::step][:n]


def read_records(path: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                out[rec["id"]] = rec
    return out


def usable(records: list[dict]) -> dict[str, dict]:
    """Per ARM stage, how often the model's reply was usable, from the traces."""
    out = {"keywords": {"ok": 0, "of": 0}, "aligned": {"ok": 0, "of": 0}, "verify": {"ok": 0, "of": 0}}
    for r in records:
        t = r.get("trace") or {}
        if t.get("keyword_source") is not None:
            out["keywords"]["of"] += 1
            out["keywords"]["ok"] += int(t.get("keyword_source") == "model" and bool(t.get("keywords")))
        for a in t.get("aligned") or []:
            out["aligned"]["of"] += 1
            out["aligned"]["ok"] += int(bool(a.get("ngram")))
        for v in t.get("verdicts") or []:
            out["verify"]["of"] += 1
            out["verify"]["ok"] += int(v.get("selected") is not None)
    return {k: v for k, v in out.items() if v["of"]}


def cell(records: list[dict]) -> dict:
    n = len(records)
    recall = [100 * float(r["scores"]["recall"]) for r in records]
    row = {"questions": n, "recall": round(statistics.fmean(recall), 1) if n else None,
           "perfect_recall": round(100 * sum(1 for r in records if r["scores"]["recall"] >= 1) / n, 1) if n else None,
           "errors": sum(1 for r in records if r.get("error"))}
    traces = [r.get("trace") or {} for r in records]
    calls = [t.get("llm_call_stats") or {} for t in traces]
    if any(calls):
        row["calls_per_q"] = round(sum(s["calls"] for c in calls for s in c.values()) / n, 2)
        row["prompt_tokens_per_q"] = round(sum(s["prompt_tokens"] for c in calls for s in c.values()) / n)
        row["completion_tokens_per_q"] = round(sum(s["completion_tokens"] for c in calls for s in c.values()) / n)
        row["seconds_per_q"] = round(statistics.fmean(float(t.get("seconds") or 0) for t in traces), 1)
        row["usable"] = usable(records)
    return row


def summarize(work: Path, n: int) -> dict:
    from atomgraph.evaluation.compare import paired_bootstrap

    results: dict = {}
    for model_dir in sorted(p for p in work.glob("*") if p.is_dir() and p.name != "_shared"):
        model = json.loads((model_dir / "model.json").read_text())["model"] if (model_dir / "model.json").exists() \
            else model_dir.name
        for name in SETS:
            paths = {"dense": work / "_shared" / name / "dense.jsonl",
                     "arm_replayed": work / "_shared" / name / "arm_replayed.jsonl",
                     "arm_model": model_dir / name / "arm_model.jsonl"}
            recs = {p: read_records(f) for p, f in paths.items()}
            if not recs["arm_model"]:
                continue
            cells = {p: cell(list(r.values())) for p, r in recs.items()}
            for other in ("dense", "arm_replayed"):
                both = [i for i in recs["arm_model"] if i in recs[other]]
                if len(both) >= 2:
                    a = [100 * recs["arm_model"][i]["scores"]["recall"] for i in both]
                    b = [100 * recs[other][i]["scores"]["recall"] for i in both]
                    lo, hi = paired_bootstrap([x - y for x, y in zip(a, b)])
                    cells["arm_model"][f"recall_minus_{other}"] = {
                        "questions": len(both), "diff": round(statistics.fmean(a) - statistics.fmean(b), 1),
                        "ci95": [round(lo, 1), round(hi, 1)]}
            cells["arm_model"]["complete"] = len(recs["arm_model"]) >= n
            results.setdefault(model, {})[name] = cells
    return results


def table(results: dict) -> str:
    lines = ["| model | set | path | n | recall | perfect recall | recall diff (95 % CI) | calls/q | tokens/q | s/q |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for model, sets in results.items():
        for name, cells in sets.items():
            for path in PATHS:
                c = cells[path]
                diffs = "; ".join(f"vs {o}: {d['diff']:+.1f} ({d['ci95'][0]:+.1f}, {d['ci95'][1]:+.1f})"
                                  for o in ("dense", "arm_replayed") if (d := c.get(f"recall_minus_{o}")))
                tokens = (f"{c['prompt_tokens_per_q']}+{c['completion_tokens_per_q']}"
                          if "prompt_tokens_per_q" in c else "—")
                lines.append(f"| {model} | {name} | {path} | {c['questions']} | {c['recall']} | {c['perfect_recall']} | "
                             f"{diffs or '—'} | {c.get('calls_per_q', '—')} | {tokens} | {c.get('seconds_per_q', '—')} |")
    return "\n".join(lines)


def usability_table(results: dict) -> str:
    lines = ["| model | set | keyword lists read | keywords aligned | verifications read |", "|---|---|---|---|---|"]
    for model, sets in results.items():
        for name, cells in sets.items():
            u = cells["arm_model"].get("usable") or {}
            show = [f"{u[s]['ok']}/{u[s]['of']}" if s in u else "—" for s in ("keywords", "aligned", "verify")]
            lines.append(f"| {model} | {name} | " + " | ".join(show) + " |")
    return "\n".join(lines)


def run(args) -> None:
    from dataclasses import replace

    from atomgraph.evaluation.retrieval import evaluate
    from atomgraph.graphs.arm import arm_retriever, retrieve
    from atomgraph.settings import Settings
    from atomgraph.state.arm import ArmContext
    from atomgraph.tools.arm_index import ArmIndex
    from atomgraph.tools.objects import load_objects, load_questions
    from atomgraph.warmup import warm_up

    work = Path(args.work)
    from benchmarks.bench_instruct_comparison import slug  # the same folder name per model

    model_dir = work / slug(args.model)
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "model.json").write_text(json.dumps({"model": args.model}) + "\n")
    settings = Settings(model=args.model, cache=False)
    warm_up(None, show=True, models=False)
    ctx = ArmContext.validated(k=K)
    for name in args.datasets:
        folder = DATA / name
        objects = load_objects(folder / "objects.jsonl")
        questions = spread(load_questions(folder / "questions.jsonl", object_ids=[o.id for o in objects]), args.n)
        index = ArmIndex.build(objects, progress=None)
        index.prime_queries([q.question for q in questions], progress=None)
        from atomgraph.nodes.arm.structure_alignment import UnitCache

        UnitCache.of(index).prime_all(progress=None)
        with_model = arm_retriever(index, ctx, settings=settings)
        without = arm_retriever(index, replace(ctx, llm=False))
        runs = {"dense": (work / "_shared" / name / "dense.jsonl", lambda q: retrieve("dense", q, index, K), False),
                "arm_replayed": (work / "_shared" / name / "arm_replayed.jsonl", without, False),
                "arm_model": (model_dir / name / "arm_model.jsonl", with_model, True)}
        for path, (file, fn, no_keywords) in runs.items():
            done = read_records(file)
            file.parent.mkdir(parents=True, exist_ok=True)
            todo = [q for q in questions if q.id not in done]
            t0 = time.perf_counter()
            for q in todo:
                asked = replace(q, keywords=None) if no_keywords else q
                rec = evaluate(fn, [asked], objects, method="arm" if path != "dense" else "dense", k=K).records[0]
                with open(file, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                if path == "arm_model":
                    t = rec.get("trace") or {}
                    print(f"{name} {q.id}: recall {rec['scores']['recall']:.2f} keywords {t.get('keywords')} "
                          f"{t.get('seconds')}s calls {t.get('llm_calls')}" + (f" error {rec['error'][:80]!r}"
                                                                                 if rec.get("error") else ""),
                          file=sys.stderr, flush=True)
            print(f"{name} {path}: {len(todo)} run, {len(done)} kept, {time.perf_counter() - t0:.0f}s",
                  file=sys.stderr, flush=True)
            write_summary(args)


def write_summary(args) -> dict:
    from benchmarks.stats import write_result

    results = summarize(Path(args.work), args.n)
    result = {"benchmark": "arm_model", "k": K, "n": args.n, "results": results}
    write_result(result, args.out, show=False)
    return result


def main(argv: list[str] | None = None) -> int:
    from benchmarks.bench_instruct_comparison import model_run_parser

    ap = model_run_parser(__doc__, WORK, OUT, "set")
    ap.add_argument("--datasets", default=",".join(SETS), help="comma-separated: spider, hotpotqa, musique")
    args = ap.parse_args(argv)
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    bad = [d for d in args.datasets if d not in SETS]
    if bad or args.n < 1:
        ap.error(f"unknown set: {', '.join(bad)}" if bad else "--n must be at least 1")
    if not DATA.is_dir():
        print(f"skipped: {DATA} is absent", file=sys.stderr)
        return 0
    if not args.summary:
        run(args)
    result = write_summary(args)
    print(table(result["results"]))
    print()
    print(usability_table(result["results"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
