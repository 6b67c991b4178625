"""ATOMR's plan grammar against the plans the comparison recorded: which of them today's grammar
still accepts, and which it now forbids.

Greedy decoding under a grammar writes, at each step, the likeliest token the grammar allows. A
grammar that allows a subset of what it allowed before therefore changes a reply only where the
reply held something now forbidden: a recorded plan that today's grammar accepts is the plan it
would write, with the same model and history. This benchmark reads the ATOMR cells of the
comparison (``bench_instruct_comparison``), checks each recorded plan (the reply when no plan
could be read; the tree read from it otherwise) with a real grammar engine (llguidance, vLLM's
``guidance`` backend), and counts per model and dataset the plans accepted, the plans it forbids
(with the reference that breaks rule 4: a question's own number or a later one) and the plans
read only after a repair (the reply itself is not kept, so they count as not checked).
``--apply`` moves the records of the forbidden plans to ``superseded.jsonl`` beside the cell
(``--apply-unchecked``: those not checked too); the comparison's next run answers those questions
again, and ``--summary`` then sets the superseded answers beside the new. Each run also checks
the authors' released trees (``../shared/data/atomr/released``): a plan GPT-4 wrote in the
paper's setting that today's grammar would not let a model write is listed.

    python -m benchmarks.bench_plan_grammar [--apply]
    python -m benchmarks.bench_instruct_comparison --model local:qwen2.5-1.5b --methods atomr
    python -m benchmarks.bench_plan_grammar --summary
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from benchmarks.bench_instruct_comparison import WORK
from benchmarks.stats import write_result

REPO = Path(__file__).resolve().parents[1]
REF = re.compile(r"\[(\d+)\]")
OUT = REPO / "benchmarks" / "results" / "plan_grammar.json"
RELEASED = REPO.parent / "shared" / "data" / "atomr" / "released"


def matcher_factory():
    """A function (question, text) → accepted by today's plan grammar, at token level over the
    bundled model's vocabulary (acceptance does not depend on the tokenizer)."""
    from atomgraph.prompts.atomr.plan import plan_grammar
    from tests.grammar_engine import BundledTokenizer, accepts as grammar_accepts

    engine = BundledTokenizer()
    return lambda question, text: grammar_accepts(engine.tok, plan_grammar(question), text)


def _label(key: str) -> int | None:
    """A numbered question's label (the tree parser's ``LABEL_RE``), None for the root."""
    from atomgraph.prompts.atomr.tree_parser import LABEL_RE

    m = LABEL_RE.match(str(key))
    return int(m.group(1)) if m else None


def forbidden_references(plan: str) -> list[str]:
    """The references in ``plan`` (flat planner JSON text) to a question's own number or a later
    one, as ``"k → [j]"``."""
    try:
        obj = json.loads(plan)
    except ValueError:
        return []
    out = []
    for key, value in obj.items() if isinstance(obj, dict) else []:
        k = _label(key)
        if k is None:
            continue
        text = str(key) + (value if isinstance(value, str) else "")
        out += [f"{k} → [{j}]" for j in map(int, REF.findall(text)) if j >= k]
    return out


def check_cell(cell: Path, accepts) -> dict:
    """Each recorded plan of an ATOMR cell: accepted, forbidden (and why) or not checked."""
    from atomgraph.evaluation.records import read_records

    rows = []
    for r in read_records(cell / "predictions.jsonl"):
        trace = r.get("trace") or {}
        question = " ".join(str(r["question"]).split())
        if trace.get("plan") is not None:
            if trace.get("repairs"):
                rows.append({"id": r["id"], "verdict": "not checked", "why": "read after a repair; the reply is not kept"})
                continue
            text = json.dumps(trace["plan"], ensure_ascii=False)
        else:
            text = (trace.get("raw_plan") or "").strip()
            if not text:
                rows.append({"id": r["id"], "verdict": "not checked", "why": "no plan reply recorded"})
                continue
        if accepts(question, text):
            rows.append({"id": r["id"], "verdict": "accepted"})
        else:
            refs = forbidden_references(text)
            rows.append({"id": r["id"], "verdict": "forbidden", "readable": trace.get("plan") is not None,
                         "why": ("references " + ", ".join(refs)) if refs else "outside the grammar",
                         "plan": text})
    return {"n": len(rows), **{v: sum(x["verdict"] == v for x in rows) for v in ("accepted", "forbidden", "not checked")},
            "rows": rows}


def earlier_only(tree: dict) -> dict:
    """``tree`` with each reference to a question's own number or a later one made ``[1]`` (in the
    question, where it is listed, and in its call): a tree refused for those references alone is
    accepted once they are."""
    def fix(text: str, k: int | None) -> str:
        return REF.sub(lambda m: "[1]" if k and k > 1 and int(m.group(1)) >= k else m.group(0), text)

    renamed = {key: fix(key, _label(key)) for key in tree}
    return {renamed[key]: [renamed.get(v, fix(v, _label(v))) for v in value] if isinstance(value, list)
            else fix(value, _label(key)) if isinstance(value, str) else value for key, value in tree.items()}


def check_released(folder: Path, accepts) -> dict:
    """The authors' released trees (``*_trees.jsonl``) against today's grammar: accepted, refused
    for a reference to a question's own number or a later one (listed), refused otherwise
    (characters the grammar leaves out: a quote in a question, a parenthesis in a name, a
    reasoning sentence as a leaf)."""
    out: dict = {"trees": 0, "accepted": 0, "references": [], "other": 0}
    for path in sorted(folder.glob("*_trees.jsonl")):
        for line in path.open(encoding="utf-8"):
            row = json.loads(line)
            tree = row.get("reasoning_tree")
            if not isinstance(tree, dict) or not tree:
                continue
            out["trees"] += 1
            question, text = next(iter(tree)), json.dumps(tree, ensure_ascii=False)
            if accepts(question, text):
                out["accepted"] += 1
            elif refs := forbidden_references(text):
                out["references"].append({"file": path.name, "index": row.get("index"), "why": refs,
                                          "alone": accepts(question, json.dumps(earlier_only(tree), ensure_ascii=False))})
            else:
                out["other"] += 1
    return out


def supersede(cell: Path, ids: set[str]) -> int:
    """Move the records of ``ids`` from the cell's predictions to its ``superseded.jsonl``."""
    if not ids:
        return 0
    path = cell / "predictions.jsonl"
    keep, moved = [], []
    for line in path.open(encoding="utf-8"):
        (moved if json.loads(line)["id"] in ids else keep).append(line)
    with (cell / "superseded.jsonl").open("a", encoding="utf-8") as f:
        f.writelines(moved)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(keep), encoding="utf-8")
    tmp.replace(path)
    return len(moved)


def answered_again(cell: Path) -> dict | None:
    """The superseded records beside their new ones: plans read and F1, before and now."""
    old_path = cell / "superseded.jsonl"
    if not old_path.exists():
        return None
    from atomgraph.evaluation.records import read_records

    old = {r["id"]: r for r in read_records(old_path)}
    new = {r["id"]: r for r in read_records(cell / "predictions.jsonl") if r["id"] in old}

    def read(r: dict) -> bool:
        return (r.get("trace") or {}).get("plan") is not None

    both = [i for i in old if i in new]
    return {"superseded": len(old), "answered_again": len(both),
            "plans_read_before": sum(read(old[i]) for i in both), "plans_read_now": sum(read(new[i]) for i in both),
            "f1_sum_before": round(100 * sum(old[i]["metrics"]["f1"] for i in both), 1),
            "f1_sum_now": round(100 * sum(new[i]["metrics"]["f1"] for i in both), 1)}


def table(cells: dict) -> str:
    lines = ["| model | dataset | plans | accepted | forbidden (readable before) | not checked | answered again: plans read, F1 sum before → now |",
             "|---|---|---|---|---|---|---|"]
    for name, c in cells.items():
        model, dataset = name.split("/")
        readable = sum(1 for x in c["rows"] if x["verdict"] == "forbidden" and x["readable"])
        again = c.get("again")
        shown = (f"{again['answered_again']}/{again['superseded']}: {again['plans_read_before']} → {again['plans_read_now']}, "
                 f"{again['f1_sum_before']} → {again['f1_sum_now']}") if again else "—"
        lines.append(f"| {model} | {dataset} | {c['n']} | {c['accepted']} | {c['forbidden']} ({readable}) | "
                     f"{c['not checked']} | {shown} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default=str(WORK), help="the comparison's records")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--models", default=None,
                    help="comma-separated run folders to check (e.g. local-qwen2.5-1.5b; default: every model's)")
    ap.add_argument("--apply", action="store_true",
                    help="move the forbidden plans' records aside, for the comparison to answer again")
    ap.add_argument("--apply-unchecked", action="store_true", help="with --apply: the unchecked plans' records too")
    ap.add_argument("--summary", action="store_true",
                    help="the checked cells again, with the questions answered again since --apply")
    args = ap.parse_args(argv)
    models = {m.strip() for m in args.models.split(",")} if args.models else None
    cells_dirs = [c for c in sorted(Path(args.work).glob("runs/*/*/atomr")) if models is None or c.parent.parent.name in models]
    accepts = matcher_factory()  # the bundled vocabulary, read once
    if args.summary:
        result = json.loads(Path(args.out).read_text(encoding="utf-8"))
        for name, c in result["cells"].items():
            c["again"] = answered_again(Path(args.work) / "runs" / name / "atomr")
    else:
        cells = {}
        for cell in cells_dirs:
            name = f"{cell.parent.parent.name}/{cell.parent.name}"
            cells[name] = check_cell(cell, accepts)
            if args.apply:
                moved = ("forbidden", "not checked") if args.apply_unchecked else ("forbidden",)
                ids = {x["id"] for x in cells[name]["rows"] if x["verdict"] in moved}
                cells[name]["superseded"] = supersede(cell, ids)
            print(f"{name}: {cells[name]['accepted']} accepted, {cells[name]['forbidden']} forbidden, "
                  f"{cells[name]['not checked']} not checked", file=sys.stderr, flush=True)
        result = {"benchmark": "plan_grammar", "work": str(args.work), "cells": cells}
    if RELEASED.is_dir():  # the authors' trees: independent of the records, checked each time
        result["released_trees"] = check_released(RELEASED, accepts)
    result["table"] = table(result["cells"])
    write_result(result, args.out, show=False)
    print(result["table"])
    released = result.get("released_trees")
    if released:
        alone = [r for r in released["references"] if r["alone"]]
        print(f"released trees: {released['accepted']} of {released['trees']} accepted; refused with a reference to a "
              f"question's own number or a later one {len(released['references'])}, for that alone {len(alone)} "
              f"({'; '.join(str(r['file']) + ' #' + str(r['index']) + ': ' + ', '.join(r['why']) for r in alone)}); "
              f"refused otherwise {released['other']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
