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
        (Path(out_dir) / "summary.json").write_text(json.dumps({"method": method, "k": k, "groups": summary}, indent=2))
    return EvalRun(method, k, summary, records)


def format_summary(run: EvalRun) -> str:
    """A plain-text table: one row per group."""
    cols = ["group", "questions", "objects", "P", "R", "F1", "PR"]
    rows = [[g, str(s["questions"]), f"{s['objects']:.2f}", *(f"{s[k]:.1f}" for k in RETRIEVAL_KEYS)]
            for g, s in run.summary.items()]
    cells = [cols, *rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cols))]
    lines = [f"method {run.method}, k = {run.k} (percent; PR = perfect recall)"]
    lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in cells]
    errors = sum(1 for r in run.records if "error" in r)
    if errors:
        lines.append(f"{errors} question(s) failed; see 'error' in the results")
    drafts = [r["trace"]["distinct_drafts"] for r in run.records
              if isinstance(r.get("trace"), dict) and isinstance(r["trace"].get("distinct_drafts"), int)]
    if drafts:  # ARM: how many drafts chose a different set of objects (§3.2.2's three drafts)
        hist = ", ".join(f"{n}: {drafts.count(n)}" for n in sorted(set(drafts)))
        lines.append(f"distinct drafts per question: mean {sum(drafts) / len(drafts):.2f} ({hist})")
    mips = [d.get("mip") or {} for r in run.records if isinstance(r.get("trace"), dict)
            for d in r["trace"].get("drafts") or [] if isinstance(d, dict)]
    if mips:  # ARM: a MIP stopped by CBC's time limit gives its best feasible (or the greedy) solution
        limited = [m for m in mips if m.get("status") not in (None, "optimal")]
        limit = max((m.get("time_limit_s") or 0 for m in mips), default=0)
        lines.append(f"MIPs: {len(mips)} solved, {len(limited)} stopped at the time limit ({limit:g} s; "
                     f"mip_time_limit_s){': best feasible solution used' if limited else ''}")
    verdicts = [v for r in run.records if isinstance(r.get("trace"), dict)
                for v in r["trace"].get("verdicts") or [] if isinstance(v, dict)]
    if verdicts:  # ARM with a model: what the verifier did with each draft (§3.3)
        unreadable = sum(1 for v in verdicts if v.get("selected") is None)
        empty = sum(1 for v in verdicts if v.get("selected") == [])
        cut = [v for v in verdicts if v.get("unconnected")]
        lines.append(f"verifications: {len(verdicts)}, {unreadable} unreadable (left out of the vote), {empty} kept "
                     f"no object" + (f", {len(cut)} cut to their connected part ({sum(len(v['unconnected']) for v in cut)} "
                                     f"objects; connected_selection)" if cut else ""))
    problems = sum(1 for r in run.records if isinstance(r.get("trace"), dict) and r["trace"].get("problems"))
    if problems:
        lines.append(f"{problems} question(s) recorded problems; see 'problems' in each trace")
    return "\n".join(lines)
