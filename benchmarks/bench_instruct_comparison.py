"""The papers' comparison on an instruction-tuned model: every method on the same questions of
HippoRAG's HotpotQA and MuSiQue closed corpora, with the model's per-stage usability.

    nice python -m benchmarks.bench_instruct_comparison [--model local:qwen2.5-1.5b] [--n 30]
        [--methods standard,cot,...] [--datasets hotpotqa,musique] [--work DIR] [--out FILE]
    nice python -m benchmarks.bench_instruct_comparison --model local --methods rag,atomr,kar3   # the 270M row
    nice python -m benchmarks.bench_instruct_comparison --summary                            # tables only

**Questions.** Per dataset, the first ``--n`` questions of ``hipporag-{hotpotqa,musique}`` that
no prompt pack uses as a demonstration (:func:`benchmarks.bench_local_prompting.demo_questions`),
the same for every method and model.

**Knowledge.** Each corpus (994 and 1,890 paragraphs) indexed with the project's own ingestion
(:func:`atomgraph.tools.ingest.ingest`, MiniLM) into an embedded Chroma folder under ``--work``;
every retrieving method reads it as its ``wikipedia`` source. KAR³ reads an atom index built by
the model under test (the ``kar3_index`` graph, the authors' atomizer prompt at temperature 0.7)
over the supporting paragraphs of the questions run (its own chunk collection per model,
``kar3-MODEL-DATASET``: a smaller corpus than the other methods search, stated in the results); the
atomizing's calls, tokens and seconds are recorded as ``kar3_atoms`` (each call logged as it ends,
so a killed atomizing run keeps its cost). ``rag_kar3_corpus`` is RAG
over those same paragraphs (their own Chroma collection): KAR³'s difference is reported against it
as well as against RAG over the whole corpus.

**Runs.** Each dataset × method is one :func:`atomgraph.evaluation.runner.arun_eval` run directory
(``WORK/runs/MODEL/DATASET/METHOD``, ``predictions.jsonl``): a killed run re-run continues where it
stopped. Methods run cheapest first (standard, chain-of-thought and RAG on both datasets, then the
loops, then KAR³ and ATOMR), one question at a time, no response cache.

**Results** (``--out``, default ``benchmarks/results/instruct_comparison.json``), per model ×
dataset × method: n (of the questions asked; ``complete`` when every one is in), EM/F1, the F1
difference against RAG on the questions both hold with its 95 % paired bootstrap interval
(:func:`atomgraph.evaluation.compare.paired_bootstrap`), model calls, prompt/completion tokens and
seconds per question, and per stage how often the model's reply is usable
(:func:`stage_usability`). The file is rebuilt from every run directory under ``--work`` at each
cell's end, so the 270M row and the instruction-tuned one sit side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Sequence

from atomgraph.nodes.call import CallRecorder

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ATOMGRAPH_SHARED_DATA", str(REPO.parent / "shared" / "data")))
WORK = REPO / ".atomgraph" / "instruct_comparison"
OUT = REPO / "benchmarks" / "results" / "instruct_comparison.json"
DEFAULT_MODEL = "local:qwen2.5-1.5b"
DATASETS = {"hotpotqa": "hipporag-hotpotqa", "musique": "hipporag-musique"}
# cheapest first: one call; a few calls; a loop or a tree of calls
TIERS = (("standard", "cot", "rag"), ("iter_retgen", "ircot", "self_ask", "decomposed_rag", "react"),
         ("kar3", "rag_kar3_corpus", "atomr"))
METHODS = tuple(m for tier in TIERS for m in tier)
BASELINE = "rag"
# KAR³ searches only the questions' supporting paragraphs: its fair baseline is RAG over those
SAME_CORPUS = {"kar3": "rag_kar3_corpus"}
SAME_CORPUS_METHOD = {cell: BASELINE for cell in SAME_CORPUS.values()}  # the method a same-corpus cell runs
# steps of the comparison methods' traces that hold no model reply
NO_REPLY_STEPS = {"retrieve", "search", "observation"}


# --- questions and knowledge ---------------------------------------------------------------

def _norm(q: str) -> str:
    return " ".join(q.split()).lower()


def select_questions(examples: Iterable, n: int, demos: set[str] | None = None) -> list:
    """The first ``n`` of ``examples`` whose question no prompt pack demonstrates."""
    if demos is None:
        from benchmarks.bench_local_prompting import demo_questions

        demos = demo_questions()
    return [e for e in examples if _norm(e.question) not in demos][:n]


def supporting_passages(dataset: str, ids: Sequence[str]) -> list[dict]:
    """``{"title", "text"}`` of the supporting paragraphs of the questions ``ids`` (the retrieval
    set's ``gold_ids``), each once, in question order."""
    folder = DATA / "retrieval" / dataset
    objects = {}
    for line in (folder / "objects.jsonl").open(encoding="utf-8"):
        o = json.loads(line)
        objects[o["id"]] = o
    gold = {}
    for line in (folder / "questions.jsonl").open(encoding="utf-8"):
        q = json.loads(line)
        gold[str(q["id"])] = q["gold_ids"]
    out: dict[str, dict] = {}
    for i in ids:
        for g in gold.get(str(i), []):
            if g in objects and g not in out:
                out[g] = {"title": objects[g]["title"], "text": objects[g]["text"]}
    return list(out.values())


# --- reading the records --------------------------------------------------------------------

def _tally() -> dict:
    return defaultdict(lambda: {"replies": 0, "usable": 0})


def _add(t: dict, stage: str, ok: bool) -> None:
    t[stage]["replies"] += 1
    t[stage]["usable"] += bool(ok)


def stage_usability(records: Sequence[dict]) -> dict[str, dict]:
    """Per stage, ``{"replies", "usable", "rate"}`` read from the records' traces:

    - ``answered``: the record ends with an answer (not empty, no error), every method;
      ``answered_by_method``: of those, not from a fallback (:func:`~atomgraph.evaluation.fallbacks.answered_by_fallback`);
    - ATOMR ``plan_read``: the planner's reply gave a tree (not unreadable, the call not failed);
      ``plan_without_repair``: and the parser repaired nothing, no plan fallback;
      ``operator``: operator nodes that ran: their reply read (no operator failure other than
      missing evidence); ``reasoning``: parent nodes whose child-answer reasoning was read (an
      Unknown counts as read; "child reasoning failed" does not);
    - KAR³ ``proposal``: rounds whose proposer reply was read; ``selection``: rounds offered
      candidates whose atomic-question pick was valid (an index among them, no paragraph
      backup); ``selection_any``: a valid pick either way;
    - ReAct ``searched``: the agent called a search tool at least once;
    - the comparison methods' steps by kind (``decompose``, ``reason``, ``generate``,
      ``intermediate_answer``, ``final_answer``, ``read_answer``, ``answer``, ``thought``, …): a step without
      ``error`` or ``fallback``.
    """
    from atomgraph.evaluation.fallbacks import answered_by_fallback

    t = _tally()
    for r in records:
        answered = bool(str(r.get("predicted") or "").strip()) and not r.get("error")
        _add(t, "answered", answered)
        if answered:
            _add(t, "answered_by_method", not answered_by_fallback(r))
        trace = r.get("trace") or {}
        if not isinstance(trace, dict):
            continue
        method = trace.get("method")
        if method == "atomr":
            pf = str(trace.get("plan_fallback") or "")
            read = trace.get("plan") is not None or not re.search(r"unreadable|call failed", pf)
            _add(t, "plan_read", read)
            _add(t, "plan_without_repair", read and not pf and not trace.get("repairs"))
            for n in trace.get("nodes") or []:
                fb = str(n.get("fallback") or "")
                if n.get("kind") == "operator":
                    subs = n.get("subcalls") or []
                    if subs and all(s.get("outcome") == "skipped" for s in subs) and not fb:
                        continue
                    failure = fb.startswith("operator failure")
                    if failure and "no evidence" in fb:
                        continue  # no reply to read: the sources gave nothing
                    _add(t, "operator", not failure)
                elif n.get("kind") == "parent" and n.get("done", True):
                    _add(t, "reasoning", not fb.startswith("child reasoning failed"))
        elif method == "react":
            _add(t, "searched", bool(trace.get("retrievals")))
        elif method == "kar3":
            for rnd in trace.get("rounds") or []:
                _add(t, "proposal", not rnd.get("proposer_unreadable"))
                if rnd.get("hits"):
                    _add(t, "selection", rnd.get("choice") is not None and not rnd.get("paragraphs_offered"))
                    _add(t, "selection_any", rnd.get("choice") is not None)
        for s in trace.get("steps") or []:
            if isinstance(s, dict) and s.get("kind") and s["kind"] not in NO_REPLY_STEPS:
                _add(t, str(s["kind"]), not s.get("error") and not s.get("fallback"))
    return {k: {**v, "rate": round(100 * v["usable"] / v["replies"], 1) if v["replies"] else None}
            for k, v in t.items()}


def f1_against(records: Sequence[dict], baseline: Sequence[dict]) -> dict | None:
    """The F1 difference (percent points, method − baseline) on the questions both hold, with its
    95 % paired bootstrap interval; None without a shared question."""
    from atomgraph.evaluation.compare import paired_bootstrap

    base = {str(r["id"]): 100 * float(r["metrics"]["f1"]) for r in baseline}
    diffs = [100 * float(r["metrics"]["f1"]) - base[str(r["id"])] for r in records if str(r["id"]) in base]
    if not diffs:
        return None
    low, high = paired_bootstrap(diffs)
    return {"n": len(diffs), "difference": round(sum(diffs) / len(diffs), 1),
            "interval": [round(low, 1), round(high, 1)]}


def cell(records: Sequence[dict], baseline: Sequence[dict] | None, asked: int) -> dict:
    """One dataset × method: scores, cost per question, usability, the difference against RAG."""
    n = len(records)

    def per_q(key: str) -> float:
        return round(sum(float((r.get("usage") or {}).get(key) or 0) for r in records) / max(n, 1), 1)

    out = {
        "n": n, "asked": asked, "complete": n >= asked > 0,
        "em": round(100 * sum(float(r["metrics"]["em"]) for r in records) / max(n, 1), 1),
        "f1": round(100 * sum(float(r["metrics"]["f1"]) for r in records) / max(n, 1), 1),
        "errors": sum(1 for r in records if r.get("error")),
        "llm_calls_per_question": per_q("llm_calls"),
        "prompt_tokens_per_question": per_q("prompt_tokens"),
        "completion_tokens_per_question": per_q("completion_tokens"),
        "seconds_per_question": round(sum(float(r.get("latency_s") or 0) for r in records) / max(n, 1), 1),
        "usability": stage_usability(records),
    }
    if baseline is not None and records is not baseline:
        out["f1_vs_rag"] = f1_against(records, baseline)
    return out


def add_same_corpus(cells: dict, recs: dict) -> None:
    """KAR³'s F1 difference against RAG over its own paragraphs (``f1_vs_same_corpus_rag``),
    where both cells have records."""
    for method, base in SAME_CORPUS.items():
        if recs.get(method) and recs.get(base) and method in cells:
            cells[method]["f1_vs_same_corpus_rag"] = f1_against(recs[method], recs[base])


# --- the summary ----------------------------------------------------------------------------

def slug(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-") or "model"


def _records(run_dir: Path, wanted: set[str] | None) -> list[dict]:
    from atomgraph.evaluation.records import read_records

    path = run_dir / "predictions.jsonl"
    if not path.exists():
        return []
    recs = read_records(path)
    return [r for r in recs if wanted is None or str(r["id"]) in wanted]


def summarize(work: Path, n: int) -> dict:
    """Every model × dataset × method run under ``work/runs``, on the first ``n`` selected questions."""
    from atomgraph.evaluation.datasets import load_dataset
    from atomgraph.evaluation.records import read_records

    out: dict = {}
    runs = work / "runs"
    for model_dir in sorted(p for p in runs.glob("*") if p.is_dir()):
        model = json.loads((model_dir / "model.json").read_text())["model"] if (model_dir / "model.json").exists() \
            else model_dir.name
        for key, name in DATASETS.items():
            if not (model_dir / key).is_dir():
                continue
            wanted = {e.id for e in select_questions(load_dataset(name), n)}
            recs = {m: _records(model_dir / key / m, wanted) for m in METHODS}
            base = recs.get(BASELINE) or None
            cells = {m: cell(rs, base, len(wanted)) for m, rs in recs.items() if rs}
            add_same_corpus(cells, recs)
            for m, c in cells.items():  # records set aside to be answered again (bench_plan_grammar --apply)
                old = model_dir / key / m / "superseded.jsonl"
                if old.exists():
                    c["answered_again"] = len({str(r["id"]) for r in read_records(old)} & wanted)
            atoms = model_dir / key / "kar3_atoms.json"
            if atoms.exists():
                cells.setdefault("kar3", {})["atoms"] = json.loads(atoms.read_text())
            if cells:
                out.setdefault(model, {})[key] = cells
    return out


def table(summary: dict, model: str) -> str:
    """The complete cells of ``model`` as a Markdown table (n shown)."""
    rows = ["| dataset | method | n | EM | F1 | F1 − RAG (95 % CI) | calls/q | tokens/q (prompt+completion) | s/q |",
            "|---|---|---|---|---|---|---|---|---|"]
    for key, cells in (summary.get(model) or {}).items():
        for m in METHODS:
            c = cells.get(m)
            if not c or not c.get("complete"):
                continue
            d = c.get("f1_vs_rag")
            diff = "—" if m == BASELINE else f"{d['difference']:+.1f} ({d['interval'][0]:+.1f}, {d['interval'][1]:+.1f})" \
                if d else "n/a"
            same = c.get("f1_vs_same_corpus_rag")
            if same:  # against RAG over the same paragraphs, the comparison that holds
                diff += (f"; vs {SAME_CORPUS[m]}: {same['difference']:+.1f} "
                         f"({same['interval'][0]:+.1f}, {same['interval'][1]:+.1f})")
            rows.append(f"| {key} | {m} | {c['n']} | {c['em']} | {c['f1']} | {diff} | {c['llm_calls_per_question']} | "
                        f"{c['prompt_tokens_per_question']:.0f}+{c['completion_tokens_per_question']:.0f} | "
                        f"{c['seconds_per_question']} |")
    return "\n".join(rows)


def usability_table(summary: dict, model: str) -> str:
    """Per complete cell of ``model``, each stage's usable replies (``usable / replies``)."""
    rows = ["| dataset | method | n | usable replies by stage |", "|---|---|---|---|"]
    for key, cells in (summary.get(model) or {}).items():
        for m in METHODS:
            c = cells.get(m)
            if c and c.get("complete"):
                stages = "; ".join(f"{k} {v['usable']}/{v['replies']}" for k, v in c["usability"].items())
                rows.append(f"| {key} | {m} | {c['n']} | {stages} |")
    return "\n".join(rows)


def models_usability_table(summary: dict) -> str:
    """Per dataset × method × stage, each model's usable replies side by side (``usable / replies``,
    its rate), for the cells every model has run (complete or not: n shown)."""
    models = list(summary)
    if len(models) < 2:
        return ""
    rows = ["| dataset | method | stage | " + " | ".join(models) + " |", "|---|---|---|" + "---|" * len(models)]
    for key in DATASETS:
        for m in METHODS:
            cells = [((summary[model].get(key) or {}).get(m) or {}) for model in models]
            if not all("usability" in c for c in cells):
                continue
            stages = list(dict.fromkeys(st for c in cells for st in c["usability"]))
            for st in stages:
                shown = []
                for c in cells:
                    u = c["usability"].get(st)
                    shown.append(f"{u['usable']}/{u['replies']} ({u['rate']:.0f} %)" if u and u["replies"] else "—")
                rows.append(f"| {key} | {m} (n {'/'.join(str(c['n']) for c in cells)}) | {st} | " + " | ".join(shown) + " |")
    return "\n".join(rows)


def cells_state(summary: dict) -> list[str]:
    """One line per cell: complete, or n of asked."""
    lines = []
    for model, by_ds in summary.items():
        for key, cells in by_ds.items():
            for m in METHODS:
                c = cells.get(m)
                if c and "n" in c:
                    again = f", {c['answered_again']} re-run (their earlier records in superseded.jsonl)" \
                        if c.get("answered_again") else ""
                    lines.append(f"{model} {key} {m}: {'complete' if c['complete'] else 'partial'} "
                                 f"({c['n']} of {c['asked']}){again}")
    return lines


def write_summary(args) -> dict:
    from benchmarks.stats import write_result

    summary = summarize(Path(args.work), args.n)
    result = {"benchmark": "instruct_comparison", "n": args.n, "datasets": DATASETS,
              "kar3_corpus": "the supporting paragraphs of the questions run, atomized by the model under test",
              "command": f"python -m benchmarks.bench_instruct_comparison --model MODEL --n {args.n} (MODEL: each key of "
                         "results; the same command continues its partial cells)",
              "cells": cells_state(summary), "results": summary}
    write_result(result, args.out, show=False)
    return result


# --- running --------------------------------------------------------------------------------

def settings_for(model: str, key: str, work: Path):
    from atomgraph.settings import Settings

    return Settings(model=model, sources=["wikipedia"], chroma_path=str(work / "chroma"),
                    chroma_collection=DATASETS[key], cache=False, kar3={"collection": kar3_collection(model, key)})


def kar3_collection(model: str, key: str) -> str:
    """KAR³'s chunk collection (its atoms in ``NAME_atoms``) for ``model`` on ``key``: each model
    reads the atoms it wrote itself."""
    return f"kar3-{slug(model)}-{key}"


def ensure_index(key: str, work: Path, settings) -> None:
    from atomgraph.tools.ingest import ingest

    corpus = DATA / "hipporag" / f"{key}_train_corpus.json"
    stats = ingest([corpus], DATASETS[key], settings=settings, persist=str(work / "chroma"), progress=False)
    print(f"index {DATASETS[key]}: {stats.summary()}", file=sys.stderr, flush=True)


def write_kar3_corpus(key: str, questions: list, model_dir: Path) -> tuple[Path, list[dict]]:
    """The supporting paragraphs of ``questions`` as ``MODEL/DATASET/kar3_corpus.jsonl``."""
    passages = supporting_passages(key, [e.id for e in questions])
    corpus = model_dir / key / "kar3_corpus.jsonl"
    corpus.parent.mkdir(parents=True, exist_ok=True)
    corpus.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in passages), encoding="utf-8")
    return corpus, passages


def same_corpus_settings(key: str, questions: list, model_dir: Path, work: Path, settings):
    """Settings whose ``wikipedia`` source is a Chroma collection of KAR³'s paragraphs only
    (``kar3-DATASET-paragraphs``, indexed on first use)."""
    from atomgraph.tools.ingest import ingest

    corpus, _ = write_kar3_corpus(key, questions, model_dir)
    collection = f"kar3-{key}-paragraphs"
    stats = ingest([corpus], collection, settings=settings, persist=str(work / "chroma"), progress=False)
    print(f"index {collection}: {stats.summary()}", file=sys.stderr, flush=True)
    return settings.model_copy(update={"chroma_collection": collection})


class AtomizingLog(CallRecorder):
    """Each atomizer call's tokens (read as every call record reads them, :class:`CallRecorder`),
    appended to ``kar3_atoms_calls.jsonl`` as it ends, with the seconds since its run began: a
    killed atomizing run keeps the cost of every call it made."""

    def __init__(self, path: Path):
        super().__init__()
        self.path, self.run, self.t0 = path, uuid.uuid4().hex[:8], time.perf_counter()
        self._write_lock = threading.Lock()

    def write(self, **row) -> None:
        with self._write_lock, self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"run": self.run, "t": round(time.perf_counter() - self.t0, 1), **row}) + "\n")

    def _open_record(self, run_id):
        with self._lock:
            opened = self._open.get(run_id)
        return opened[0] if opened else None

    def _log(self, rec) -> None:
        if rec is not None:
            self.write(call=1, prompt_tokens=rec.prompt_tokens, completion_tokens=rec.completion_tokens,
                       **({"error": rec.error} if rec.error else {}))

    def on_llm_end(self, response, *, run_id, **kwargs) -> None:
        rec = self._open_record(run_id)
        super().on_llm_end(response, run_id=run_id, **kwargs)
        self._log(rec)

    def on_llm_error(self, error, *, run_id, **kwargs) -> None:
        rec = self._open_record(run_id)
        super().on_llm_error(error, run_id=run_id, **kwargs)
        self._log(rec)


def atomizing_cost(log: Path) -> dict:
    """Calls, tokens and seconds over every run in ``log`` (a run's seconds: its last line's; a
    ``carried`` line is a total recorded before the per-call log)."""
    from atomgraph.evaluation.records import read_records

    total = {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    runs: dict[str, float] = {}
    carried = 0.0
    for row in read_records(log) if log.exists() else []:
        if "carried" in row:
            for k in total:
                total[k] += int(row["carried"].get(k) or 0)
            carried += float(row["carried"].get("seconds") or 0)
            continue
        total["llm_calls"] += int(row.get("call") or 0)
        total["prompt_tokens"] += int(row.get("prompt_tokens") or 0)
        total["completion_tokens"] += int(row.get("completion_tokens") or 0)
        runs[row["run"]] = max(runs.get(row["run"], 0.0), float(row["t"]))
    return {**total, "seconds": round(carried + sum(runs.values()), 1), "runs": len(runs)}


async def ensure_atoms(key: str, questions: list, model_dir: Path, settings, model=None) -> dict:
    """KAR³'s atom index over the supporting paragraphs of ``questions``, atomized by the model
    under test (``model``: default the settings'; resumable: chunks already atomized are skipped);
    its cost over every run, a killed one included (:class:`AtomizingLog`)."""
    from atomgraph.graphs.kar3_index import build_kar3_index_graph
    from atomgraph.tools.atom_index import AtomIndex

    corpus, passages = write_kar3_corpus(key, questions, model_dir)
    settings = settings.model_copy(update={"data_dirs": [*settings.data_dirs, str(corpus.parent)]})
    path, log = model_dir / key / "kar3_atoms.json", model_dir / key / "kar3_atoms_calls.jsonl"
    if path.exists() and not log.exists():  # a total written before the per-call log: carried into it
        before = json.loads(path.read_text())
        log.write_text(json.dumps({"carried": {k: before.get(k) for k in (
            "llm_calls", "prompt_tokens", "completion_tokens", "seconds")}}) + "\n")
    tally = AtomizingLog(log)
    graph = build_kar3_index_graph(model, settings=settings, progress=False)
    out = await graph.ainvoke({"inputs": [str(corpus)], "collection": settings.kar3.collection},
                              context={"format": "jsonl", "atomizer_concurrency": 1, "write_batch": 2},
                              config={"callbacks": [tally]})
    tally.write(call=0)  # the run's end: its seconds include the last write
    stats = out.get("stats") or {}
    counts = AtomIndex(settings.kar3.collection, settings=settings).counts()
    spent = {"atomized": counts["atomized"], **atomizing_cost(log), "paragraphs": len(passages),
             "atoms": counts["atoms"], "failed": stats.get("failed"), "error": out.get("error")}
    path.write_text(json.dumps(spent, indent=2) + "\n")
    print(f"kar3 atoms {key}: {json.dumps(spent)}", file=sys.stderr, flush=True)
    return spent


async def run_cell(method: str, key: str, questions: list, model_dir: Path, settings, deadline: float | None) -> None:
    from atomgraph.evaluation.runner import arun_eval

    def show(r: dict) -> None:
        print(f"{method} {key} {r['id']}: F1 {100 * r['metrics']['f1']:.0f} {r['latency_s']:.0f}s "
              f"calls {(r.get('usage') or {}).get('llm_calls')} {str(r.get('predicted') or '')[:60]!r}"
              + (f" error {str(r['error'])[:80]!r}" if r.get("error") else ""), file=sys.stderr, flush=True)

    run_dir = model_dir / key / method
    if len(_records(run_dir, {e.id for e in questions})) == len(questions):
        # complete: nothing to run (a run.json written by older code may list fewer settings)
        print(f"{method} {key}: complete ({len(questions)} questions), not run again", file=sys.stderr, flush=True)
        return
    await arun_eval(SAME_CORPUS_METHOD.get(method, method), questions, run_dir, settings=settings, dataset_name=DATASETS[key],
                    concurrency=1, progress=False, resume=True, deadline_s=deadline, on_record=show)


async def run_all(args) -> None:
    from atomgraph.evaluation.datasets import load_dataset

    work = Path(args.work)
    model_dir = work / "runs" / slug(args.model)
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "model.json").write_text(json.dumps({"model": args.model}) + "\n")
    methods = [m for tier in TIERS for m in tier if m in args.methods]
    tiers = [[m for m in tier if m in methods] for tier in TIERS]
    indexed: set[str] = set()
    for tier in tiers:
        for key in args.datasets:
            settings = settings_for(args.model, key, work)
            questions = select_questions(load_dataset(DATASETS[key]), args.n)
            for method in tier:
                if key not in indexed:
                    ensure_index(key, work, settings)
                    indexed.add(key)
                if method == "kar3" and not args.skip_atoms:
                    await ensure_atoms(key, questions, model_dir, settings)
                cell_settings = settings
                if method in SAME_CORPUS_METHOD:
                    cell_settings = same_corpus_settings(key, questions, model_dir, work, settings)
                t0 = time.perf_counter()
                await run_cell(method, key, questions, model_dir, cell_settings, args.deadline)
                result = write_summary(args)
                print(f"cell {method} {key} done in {time.perf_counter() - t0:.0f}s; "
                      + "; ".join(result["cells"]), file=sys.stderr, flush=True)


def model_run_parser(doc: str, work: Path, out: Path, n_of: str) -> argparse.ArgumentParser:
    """The options every model benchmark of this kind takes: ``--model``, ``--n`` (per ``n_of``),
    ``--work`` (its resumable records), ``--out`` and ``--summary``; the caller adds its own."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--model", default=DEFAULT_MODEL,
                    help="the model of every role (default local:qwen2.5-1.5b; 'local' is the bundled Gemma-3-270M; "
                         "a served model's name with OPENAI_BASE_URL set)")
    ap.add_argument("--n", type=int, default=30, help=f"questions per {n_of} (default 30)")
    ap.add_argument("--work", default=str(work), help="the resumable records (run directories, stores)")
    ap.add_argument("--out", default=str(out))
    ap.add_argument("--summary", action="store_true", help="rebuild the results file from the records only")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = model_run_parser(__doc__, WORK, OUT, "dataset")
    ap.add_argument("--methods", default=",".join(METHODS), help="comma-separated, run cheapest first")
    ap.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated: hotpotqa, musique")
    ap.add_argument("--deadline", type=float, default=None,
                    help="seconds a question may take before its model calls are refused (default: none)")
    ap.add_argument("--skip-atoms", action="store_true",
                    help="KAR³ over the atom index already built (no atomizing in this run)")
    args = ap.parse_args(argv)
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    bad = [m for m in args.methods if m not in METHODS] + [d for d in args.datasets if d not in DATASETS]
    if bad or args.n < 1:
        ap.error(f"unknown method or dataset: {', '.join(bad)}" if bad else "--n must be at least 1")
    if not (DATA / "hipporag").is_dir():
        print(f"skipped: {DATA / 'hipporag'} is absent", file=sys.stderr)
        return 0
    if not args.summary:
        asyncio.run(run_all(args))
    result = write_summary(args)
    print("\n".join(result["cells"]))
    for model in result["results"]:
        print(f"\n{model}\n{table(result['results'], model)}\n\n{usability_table(result['results'], model)}")
    side_by_side = models_usability_table(result["results"])
    if side_by_side:
        print(f"\nusable replies, model by model\n{side_by_side}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
