"""Object-retrieval evaluation (§4.2 of the ARM paper): precision, recall, F1 and perfect
recall (all gold objects retrieved), in percent, overall and by question group.

Groups: ``all``; ``single_gold`` and ``multi_gold``; and multi-gold questions by the kind
of their gold objects (``multi_table``, ``multi_passage``, ``multi_mixed``), so Spider's
multi-table questions are reported on their own.

Scores compare object ids exactly (:func:`atomgraph.evaluation.metrics.retrieval_scores`
with ``key=str``; its default compares *titles*, case-folded with ``_`` as space, which would
merge ids such as ``db#sep#Singer`` and ``db#sep#singer``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from atomgraph.evaluation.metrics import RETRIEVAL_KEYS, retrieval_scores
from atomgraph.tools.objects import DataObject, Question


def id_scores(retrieved: Sequence[str], gold: Iterable[str]) -> dict[str, float]:
    """Precision, recall, F1 and perfect recall (0/1) of retrieved ids against gold ids
    (all zero without gold ids)."""
    return retrieval_scores(retrieved, gold, key=str) or dict.fromkeys(RETRIEVAL_KEYS, 0.0)


def question_groups(q: Question, kinds: dict[str, str]) -> list[str]:
    """The groups a question is reported in (see module doc)."""
    groups = ["all"]
    if len(q.gold_ids) <= 1:
        return groups + ["single_gold"]
    gk = {kinds.get(g, "passage") for g in q.gold_ids}
    return groups + ["multi_gold", "multi_table" if gk == {"table"} else "multi_passage" if gk == {"passage"} else "multi_mixed"]


def summarize(records: Sequence[dict]) -> dict[str, dict]:
    """Mean scores in percent per group, with question counts and mean objects retrieved."""
    out: dict[str, dict] = {}
    for r in records:
        for g in r["groups"]:
            acc = out.setdefault(g, {"questions": 0, "objects": 0.0, **{k: 0.0 for k in RETRIEVAL_KEYS}})
            acc["questions"] += 1
            acc["objects"] += len(r["retrieved"])
            for k in RETRIEVAL_KEYS:
                acc[k] += r["scores"][k]
    for acc in out.values():
        n = acc["questions"]
        acc["objects"] = round(acc["objects"] / n, 3)
        for k in RETRIEVAL_KEYS:
            acc[k] = round(100 * acc[k] / n, 2)
    return out


@dataclass
class EvalRun:
    method: str
    k: int
    summary: dict[str, dict]
    records: list[dict]


def evaluate(
    retrieve: Callable[[Question], object],
    questions: Sequence[Question],
    objects: Sequence[DataObject],
    *,
    method: str,
    k: int,
    out_dir: str | Path | None = None,
    keep_trace: bool = True,
    progress: bool = False,
) -> EvalRun:
    """Score ``retrieve`` (question → :class:`~atomgraph.nodes.arm.pipeline.RetrievalResult`)
    on every question; with ``out_dir``, write ``results.jsonl`` (one line per question) and
    ``summary.json``. A question whose retrieval raises is scored as retrieving nothing, with
    the error recorded. ``progress``: a bar on a terminal, periodic lines with rate and ETA
    elsewhere (:mod:`atomgraph.progress`)."""
    from atomgraph.progress import progress as progress_reporter

    kinds = {o.id: o.kind for o in objects}
    records: list[dict] = []
    fh = None
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        fh = open(Path(out_dir) / "results.jsonl", "w", encoding="utf-8")
    bar = progress_reporter(len(questions), f"retrieve {method}", "questions", enabled=progress)
    try:
        for q in questions:
            error = None
            try:
                res = retrieve(q)
                ids, scores, trace = list(res.ids), list(res.scores), res.trace
            except Exception as exc:  # noqa: BLE001 - a failure is data in the results
                ids, scores, trace, error = [], [], {}, f"{type(exc).__name__}: {exc}"
            rec = {
                "id": q.id,
                "question": q.question,
                "gold_ids": list(q.gold_ids),
                "retrieved": ids,
                "retrieved_scores": [round(s, 6) for s in scores],
                "scores": id_scores(ids, q.gold_ids),
                "groups": question_groups(q, kinds),
            }
            if error:
                rec["error"] = error
            if keep_trace and trace:
                rec["trace"] = trace
            records.append(rec)
            if fh:
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            bar.update(1)
            if error:
                bar.set_postfix_str(f"{sum(1 for r in records if 'error' in r)} errors", refresh=False)
    finally:
        bar.close()
        if fh:
            fh.close()
    summary = summarize(records)
    if out_dir is not None:
        (Path(out_dir) / "summary.json").write_text(json.dumps({"method": method, "k": k, "groups": summary,
                                                               "counts": run_counts(records)}, indent=2))
    return EvalRun(method, k, summary, records)


def run_counts(records: Sequence[dict]) -> dict:
    """What a run did besides its scores, counted from its records: failed questions, questions
    whose trace records problems and, for ARM, the distinct drafts per question, the MIPs (how
    many stopped at CBC's time limit) and the verifications (unreadable, kept nothing, cut by
    ``connected_selection``). The summary's closing lines, ``summary.json``'s and
    ``retrieve --json``'s ``counts``."""
    traces = [r["trace"] for r in records if isinstance(r.get("trace"), dict)]
    out: dict = {"errors": sum(1 for r in records if "error" in r),
                 "problems": sum(1 for t in traces if t.get("problems"))}
    drafts = [t["distinct_drafts"] for t in traces if isinstance(t.get("distinct_drafts"), int)]
    if drafts:
        out["distinct_drafts"] = {"mean": round(sum(drafts) / len(drafts), 4),
                                  "histogram": {n: drafts.count(n) for n in sorted(set(drafts))}}
    mips = [d.get("mip") or {} for t in traces for d in t.get("drafts") or [] if isinstance(d, dict)]
    if mips:
        out["mips"] = {"solved": len(mips), "stopped": sum(1 for m in mips if m.get("status") not in (None, "optimal")),
                       "time_limit_s": max((m.get("time_limit_s") or 0 for m in mips), default=0)}
    verdicts = [v for t in traces for v in t.get("verdicts") or [] if isinstance(v, dict)]
    if verdicts:
        cut = [v for v in verdicts if v.get("unconnected")]
        out["verifications"] = {"read": len(verdicts), "unreadable": sum(1 for v in verdicts if v.get("selected") is None),
                                "kept_nothing": sum(1 for v in verdicts if v.get("selected") == []),
                                "cut": len(cut), "cut_objects": sum(len(v["unconnected"]) for v in cut)}
    return out


def format_summary(run: EvalRun) -> str:
    """A plain-text table: one row per group."""
    cols = ["group", "questions", "objects", "P", "R", "F1", "PR"]
    rows = [[g, str(s["questions"]), f"{s['objects']:.2f}", *(f"{s[k]:.1f}" for k in RETRIEVAL_KEYS)]
            for g, s in run.summary.items()]
    cells = [cols, *rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cols))]
    lines = [f"method {run.method}, k = {run.k} (percent; PR = perfect recall)"]
    lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in cells]
    c = run_counts(run.records)
    if c["errors"]:
        lines.append(f"{c['errors']} question(s) failed; see 'error' in the results")
    if "distinct_drafts" in c:  # ARM: how many drafts chose a different set of objects (§3.2.2's three drafts)
        d = c["distinct_drafts"]
        hist = ", ".join(f"{n}: {m}" for n, m in d["histogram"].items())
        lines.append(f"distinct drafts per question: mean {d['mean']:.2f} ({hist})")
    if "mips" in c:  # ARM: a MIP stopped by CBC's time limit gives its best feasible (or the greedy) solution
        m = c["mips"]
        lines.append(f"MIPs: {m['solved']} solved, {m['stopped']} stopped at the time limit ({m['time_limit_s']:g} s; "
                     f"mip_time_limit_s){': best feasible solution used' if m['stopped'] else ''}")
    if "verifications" in c:  # ARM with a model: what the verifier did with each draft (§3.3)
        v = c["verifications"]
        lines.append(f"verifications: {v['read']}, {v['unreadable']} unreadable (left out of the vote), {v['kept_nothing']} "
                     f"kept no object" + (f", {v['cut']} cut to their connected part ({v['cut_objects']} objects; "
                                          f"connected_selection)" if v["cut"] else ""))
    if c["problems"]:
        lines.append(f"{c['problems']} question(s) recorded problems; see 'problems' in each trace")
    return "\n".join(lines)
