"""Answers that are not answers, counted over ``eval run`` directories (issue 18's check).

For each run directory (one method each): examples completed, answered, failed by kind, how many
had an answer refused under the answer contract (as the error or a fallback), the refusals by
reason, contract violations among the answers given (``check_answer``, and
``check_answer_to`` against the question: must be 0), answers that are a demonstration's own
answer (not the gold), and F1.

    python -m benchmarks.contract_table runs/standard runs/cot ... [--json] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

from atomgraph.evaluation.records import read_records
from atomgraph.evaluation.runner import fallbacks_of, outcomes
from atomgraph.prompts.stage import AnswerRefused, check_answer, check_answer_to

from benchmarks.check_local_contract import demonstration_answers


def _norm(text: str) -> str:
    return " ".join(str(text).casefold().split())


def table_row(run_dir: str | Path) -> dict:
    path = Path(run_dir)
    records = read_records(path / "predictions.jsonl" if path.is_dir() else path)
    demos = demonstration_answers()
    o = outcomes(records)
    refused: Counter = Counter()
    violations: list[str] = []
    copied = 0
    for r in records:
        texts = [r.get("error") or ""] + [f.get("reason") or "" for f in r.get("fallbacks") or fallbacks_of(r.get("trace") or {})]
        for t in texts:
            for reason in re.findall(r"answer refused \(([a-z_]+)\)", str(t)):
                refused[reason] += 1
        answer = str(r.get("predicted") or "")
        if answer.strip():
            try:
                check_answer(answer)
                check_answer_to(answer, r.get("question"))
            except AnswerRefused as exc:
                violations.append(f"{r.get('id')}: {answer[:80]!r}: {exc}")
            if _norm(answer) in demos and _norm(answer) not in {_norm(g) for g in r.get("gold") or []}:
                copied += 1
    f1 = sum(float((r.get("metrics") or {}).get("f1") or 0) for r in records) / len(records) * 100 if records else 0.0
    method = records[0].get("method") if records else path.name
    return {"method": method, "completed": len(records), "answered": o["answered"], "errors": o["errors"],
            "with_refused_answer": o["refused"], "refused_by_reason": dict(refused.most_common()),
            "violations": len(violations), "violation_examples": violations[:5], "copied_demo_answers": copied,
            "f1": round(f1, 2)}


def markdown(rows: list[dict]) -> str:
    out = ["| method | completed | answered | failed (by kind) | refused answers (by reason) | contract violations | "
           "demo answer copied | F1 |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fails = ", ".join(f"{k} {v}" for k, v in r["errors"].items()) or "–"
        refused = ", ".join(f"{k} {v}" for k, v in r["refused_by_reason"].items()) or "–"
        out.append(f"| {r['method']} | {r['completed']} | {r['answered']} | {fails} | {refused} | {r['violations']} | "
                   f"{r['copied_demo_answers']} | {r['f1']:.1f} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = [table_row(d) for d in args.runs]
    print(json.dumps(rows, indent=1) if args.json else markdown(rows))
    return 1 if any(r["violations"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
