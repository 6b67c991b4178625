"""Reports over run directories: one Markdown table per dataset, and summary rows for plots.

Each row puts one method's EM/F1 (overall and per question type), retrieval precision,
recall and perfect recall (against gold titles, or gold object ids where records carry
``gold_ids`` and ``retrieved_ids``), LLM and retriever calls, tokens and dollars per question,
errors and bound-stopped runs side by side.

>>> print(markdown_report(["runs/rag-hotpot", "runs/atomr-hotpot"]))

Costs are recomputed from each record's tokens per model with the current price table, so a
report can price an old run with new prices.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from atomgraph.errors import ConfigError
from atomgraph.evaluation.metrics import aggregate_scores, mean
from atomgraph.state.run import models_cost
from atomgraph.evaluation.records import read_records
from atomgraph.jsonl import UTF8_ONLY, check_file, read_json
from atomgraph.evaluation.runner import PREDICTIONS, RUN_META, suspect_counts


def load_run(path: str | os.PathLike) -> tuple[dict, list[dict]]:
    """``(run metadata, records)`` of a run directory (or of a predictions file)."""
    p = Path(path)
    pred = p / PREDICTIONS if p.is_dir() else p
    if not pred.is_file():
        raise ConfigError(f"{path} is not a run directory (no {PREDICTIONS})")
    meta: dict = {}
    meta_path = pred.parent / RUN_META
    if meta_path.is_file():
        meta = read_json(meta_path, what="run record", error=ConfigError, hint=UTF8_ONLY)
        if not isinstance(meta, dict):
            raise ConfigError(f"{meta_path}: expected a JSON object")
    skipped: Counter = Counter()  # a torn last line (a run killed, or a full disk, mid-write): counted, reported
    records = read_records(pred, validate="report", method=meta.get("method"), skips=skipped)  # a damaged file: refused
    meta = {**meta, "skipped": dict(skipped)} if skipped else meta
    if records:
        meta.setdefault("method", records[0].get("method"))
        meta.setdefault("dataset", records[0].get("dataset"))
    meta.setdefault("method", p.name)
    meta.setdefault("dataset", "unknown")
    return meta, records


def _record_cost(rec: dict, prices: Mapping[str, tuple[float, float]]) -> tuple[float, set[str]]:
    usage = rec.get("usage") or {}
    by_model = usage.get("tokens_by_model")
    if by_model is None:
        return float(usage.get("cost_usd") or 0.0), set(usage.get("unpriced_models") or [])
    total, unpriced = models_cost(by_model, prices)
    return total, set(unpriced)


def summarize_run(meta: dict, records: Sequence[dict], prices: Mapping[str, tuple[float, float]]) -> dict:
    """One report row: accuracy overall and per type, usage means, cost, latency."""
    records = [_with_id_retrieval(r) for r in records]
    scores = aggregate_scores(records)
    n = len(records)
    by_source: dict[str, int] = defaultdict(int)
    for r in records:
        for s, c in (r.get("usage") or {}).get("retriever_calls_by_source", {}).items():
            by_source[s] += c
    costs = [_record_cost(r, prices) for r in records]
    unpriced = sorted(set().union(*(u for _, u in costs))) if costs else []
    return {
        "method": meta.get("method"),
        "dataset": meta.get("dataset"),
        "n": n,
        "em": scores["em"],
        "f1": scores["f1"],
        "cover_em": scores["cover_em"],
        "by_type": {t: v["f1"] for t, v in scores["by_type"].items()},
        "retrieval": scores.get("retrieval"),
        "llm_calls": mean((r.get("usage") or {}).get("llm_calls", 0) for r in records),
        "cached_calls": sum(int((r.get("usage") or {}).get("cached_calls", 0) or 0) for r in records),
        "retriever_calls": {s: c / n for s, c in sorted(by_source.items())} if n else {},
        "tokens_in": mean((r.get("usage") or {}).get("prompt_tokens", 0) for r in records),
        "tokens_out": mean((r.get("usage") or {}).get("completion_tokens", 0) for r in records),
        "cost_usd": sum(c for c, _ in costs),
        "cost_per_question": mean(c for c, _ in costs),
        "unpriced_models": unpriced,
        "latency_s": mean(r.get("latency_s", 0.0) for r in records),
        "errors": sum(1 for r in records if r.get("error")),
        "stopped": sum(1 for r in records if r.get("stopped")),
        "skipped": dict(meta.get("skipped") or {}),  # lines of the records file not read (a torn last line)
        **_fallback_counts(records),
        **suspect_counts(records),
        **_paper_beside(meta, scores),
    }


def _paper_beside(meta: dict, scores: dict) -> dict:
    """The recipe's paper value for its metric beside this run's (run.json ``run.paper_values``),
    and the degraded mark of a run that lacked part of its setting (``run.degraded``)."""
    run = meta.get("run") or {}
    out: dict = {"degraded": list(run.get("degraded") or [])}
    metric, values = run.get("metric"), run.get("paper_values") or {}
    if metric in values:
        ours = scores.get(metric)
        if ours is None and isinstance(scores.get("retrieval"), dict):
            ours = scores["retrieval"].get(metric)
        out["paper"] = {"metric": metric, "paper": float(values[metric]), "ours": ours, "recipe": run.get("recipe")}
    return out


def _fallback_counts(records: Sequence[dict]) -> dict:
    from atomgraph.evaluation.fallbacks import count_fallbacks

    c = count_fallbacks(records)
    return {"fallbacks": c["by_kind"], "answered_by_fallback": c["answered_by_fallback"], "answered": c["answered"]}


def _with_id_retrieval(rec: dict) -> dict:
    """A record scored on retrieved object ids where it has gold ids and no title-based
    retrieval score (ids compare as strings)."""
    metrics = rec.get("metrics") or {}
    if metrics.get("retrieval") or not rec.get("gold_ids"):
        return rec
    from atomgraph.evaluation.metrics import retrieval_scores

    scores = retrieval_scores([str(i) for i in rec.get("retrieved_ids") or []], [str(i) for i in rec["gold_ids"]], key=str)
    return {**rec, "metrics": {**metrics, "retrieval": scores}}


def summarize_runs(dirs: Iterable[str | os.PathLike], prices: Mapping[str, tuple[float, float]]) -> list[dict]:
    return [summarize_run(*load_run(d), prices) for d in dirs]


def _fmt(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def _suspect_cell(r: dict) -> str:
    """Retrieved passages that addressed the model: how many, in how many examples, how many dropped."""
    n = int(r.get("suspect_evidence") or 0)
    if not n:
        return "0"
    dropped = int(r.get("dropped_evidence") or 0)
    return f"{n} in {r.get('suspect_examples', 0)} q" + (f", {dropped} dropped" if dropped else "")


def markdown_tables(rows: Sequence[dict]) -> str:
    """One Markdown table per dataset (rows in the order given)."""
    by_dataset: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_dataset[str(r["dataset"])].append(r)
    parts = []
    for dataset, rs in by_dataset.items():
        types = sorted({t for r in rs for t in r["by_type"]})
        has_retrieval = any(r["retrieval"] for r in rs)
        head = ["method", "n", "EM", "F1", *[f"F1 {t}" for t in types]]
        if has_retrieval:
            head += ["ret. P", "ret. R", "perfect R"]
        has_paper = any(r.get("paper") for r in rs)
        if has_paper:
            head += ["paper (metric)", "ours − paper"]
        head += ["LLM calls", "cached", "retriever calls", "tokens in", "tokens out", "cost $", "$/q", "latency s",
                 "errors", "stopped", "by fallback", "fallbacks", "suspect evidence"]
        lines = [f"### {dataset}", ""]
        for r in rs:  # a run whose records file ends in a torn line says so before its table
            if r.get("skipped"):
                lines += [f"**{r['method']}: {_said(Counter(r['skipped']))} in its records (a write that never "
                          "finished: a killed run or a full disk); that example is not in this table — `eval run` "
                          "on the folder runs it again.**", ""]
        for r in rs:  # a run answered only by fallbacks says so before its table
            if r.get("answered") and r.get("answered_by_fallback") == r.get("answered"):
                lines += [f"**{r['method']}: every answer ({r['answered']}) came from a fallback, none from the "
                          "method itself.**", ""]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in rs:
            name = str(r["method"]) + (" **(DEGRADED: not the setting; not comparable)**" if r.get("degraded") else "")
            cells = [name, str(r["n"]), _fmt(r["em"]), _fmt(r["f1"])]
            cells += [_fmt(r["by_type"][t]) if t in r["by_type"] else "–" for t in types]
            if has_retrieval:
                ret = r["retrieval"]
                cells += [_fmt(ret["precision"]), _fmt(ret["recall"]), _fmt(ret["perfect_recall"])] if ret else ["–"] * 3
            if has_paper:
                p = r.get("paper")
                if not p:
                    cells += ["–", "–"]
                else:
                    diff = "not comparable" if r.get("degraded") or p["ours"] is None else f"{p['ours'] - p['paper']:+.2f}"
                    cells += [f"{p['paper']:g} ({p['metric']})", diff]
            sources = ", ".join(f"{s} {c:.2f}" for s, c in r["retriever_calls"].items()) or "0"
            cost = f"{r['cost_usd']:.4f}" + (" *" if r["unpriced_models"] else "")
            cells += [_fmt(r["llm_calls"]), str(r.get("cached_calls", 0)), sources, f"{r['tokens_in']:.0f}", f"{r['tokens_out']:.0f}",
                      cost, f"{r['cost_per_question']:.5f}", _fmt(r["latency_s"]), str(r["errors"]),
                      str(r.get("stopped", 0))]
            by = r.get("answered_by_fallback", 0)
            all_by = bool(by) and by == r.get("answered")
            cells += [f"{by} of {r.get('answered', 0)}" + (" (ALL)" if all_by else ""),
                      "; ".join(f"{n} {k}" for k, n in (r.get("fallbacks") or {}).items()) or "0",
                      _suspect_cell(r)]
            lines.append("| " + " | ".join(cells) + " |")
        unpriced = sorted({m for r in rs for m in r["unpriced_models"]})
        if unpriced:
            lines += ["", f"\\* no price for model(s) {', '.join(unpriced)}: counted as $0 "
                          "(add them to the `prices` setting)."]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def markdown_report(dirs: Iterable[str | os.PathLike], prices: Mapping[str, tuple[float, float]] | None = None) -> str:
    """The Markdown report of run directories (prices default to settings)."""
    if prices is None:
        from atomgraph.state.run import price_table
        from atomgraph.settings import get_settings

        prices = price_table(get_settings())
    return markdown_tables(summarize_runs(dirs, prices))


def score_predictions(path: str | os.PathLike, dataset: str | None = None, encoding: str = "utf-8") -> dict:
    """EM / F1 / cover-EM (percent) of a predictions file with ``predicted`` and ``gold``
    fields (the ATOMR release's shape, or a run's ``predictions.jsonl``), overall and per
    ``question_type`` where records carry one, or as ``dataset`` (a name or file whose
    questions match the predictions') gives it."""
    from atomgraph.evaluation.datasets import DatasetError
    from atomgraph.evaluation.metrics import answer_scores, retrieval_scores

    p = Path(path)
    if p.is_dir():
        p = p / PREDICTIONS
        if not p.exists():
            raise ConfigError(f"{path} is a directory without {PREDICTIONS} (not a run directory)")
    if not p.exists():
        raise ConfigError(f"predictions file {path} does not exist")
    check_file(p, what="predictions file", error=ConfigError)
    skipped: Counter = Counter()
    records = read_records(p, validate="predictions", encoding=encoding, skips=skipped)  # duplicates: refused
    types: dict[str, str | None] = {}
    if dataset:
        from atomgraph.evaluation.datasets import load_dataset

        types = {" ".join(e.question.split()): e.question_type for e in load_dataset(dataset, encoding=encoding)}
    scored = []
    for i, r in enumerate(records, 1):
        if "predicted" not in r or "gold" not in r:
            raise DatasetError(f"{p}: record {i}: needs 'predicted' and 'gold' fields")
        metrics = answer_scores(r["predicted"], r["gold"])
        metrics["retrieval"] = retrieval_scores(r.get("retrieved_titles") or [], r.get("gold_titles") or [])
        qtype = r.get("question_type") or types.get(" ".join(str(r.get("question", "")).split()))
        scored.append({"question_type": qtype, "metrics": metrics})
    if not scored:
        raise DatasetError(f"{p} holds no predictions" + (f" (skipped: {_said(skipped)})" if skipped else ""))
    return {"file": str(p), **aggregate_scores(scored), "skipped": dict(skipped)}


def _said(counts: Counter) -> str:
    return ", ".join(f"{n} {why}" for why, n in counts.items())
