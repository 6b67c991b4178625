"""One JSON reader for model output: ours against LangChain's, on the model replies the repository records.

Should the project's reader (``atomgraph/text.py``: ``read_json``) give way to LangChain's
``parse_json_markdown`` (what ``JsonOutputParser`` calls) or json-repair? This script gathers
every recorded model reply under ``benchmarks/results/`` (earlier runs of the bundled local model), grouped by
the stage its record names, and reads each with

(a) ``atomgraph.text.read_json`` (default ``want=(dict, list)``, no ``accept``: the reader alone, without a
    stage's own check),
(b) ``langchain_core.utils.json.parse_json_markdown``,
(c) ``json_repair.loads`` — only when json-repair is already installed (it is not a dependency).

A reader "reads" a reply when it returns a JSON object or array (a bare string or number is counted apart as
``scalar``: no stage asks for one). Two readers "disagree" on a reply when one reads it and the other does not,
or both read it to different values. A stage with no recorded replies is listed as such.

``--generate N`` first asks the bundled local model (Gemma-3-270M, greedy) for fresh replies on the KAR³
stages that no earlier run recorded (propose, select, answer), N questions each, both free (no constraint) and
under the stage's JSON schema, and records them to ``benchmarks/results/json_reader_replies.jsonl`` (stage names
``kar3_<stage>_<free|schema>``, the file rewritten); later runs read that file like any other record.

    python -m benchmarks.bench_json_reader                # writes benchmarks/results/json_reader.json
    python -m benchmarks.bench_json_reader --generate 6   # + fresh KAR³ replies (about 3 minutes on CPU)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from langchain_core.utils.json import parse_json_markdown

from atomgraph.text import read_json

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
# Stages the methods read JSON in; the ones with no recorded reply are reported as such.
STAGES = ["plan", "kg_program", "answer", "answer_list_tail", "arm_decompose", "arm_verify"]
GENERATED = RESULTS / "json_reader_replies.jsonl"
DERIVED = {"answer_list_tail"}  # the answer replies again, cut after "Answer List:": left out of the total


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def gather() -> list[dict]:
    """``{stage, source, reply}`` for each recorded model reply."""
    out: list[dict] = []
    p = RESULTS / "local_prompting_plan.jsonl"
    if p.exists():
        for r in _jsonl(p):
            if isinstance(r.get("reply"), str):
                out.append({"stage": r.get("part", "plan"), "source": f"{p.name} ({r.get('format')}/{r.get('mode')})",
                            "reply": r["reply"]})
    p = RESULTS / "atomr_kg_program.json"
    if p.exists():
        for r in json.loads(p.read_text(encoding="utf-8")).get("rows", []):
            if isinstance(r.get("reply"), str):
                out.append({"stage": "kg_program", "source": p.name, "reply": r["reply"]})
    p = RESULTS / "local_grounded.jsonl"
    if p.exists():
        for r in _jsonl(p):
            if isinstance(r.get("reply"), str):
                out.append({"stage": "answer", "source": f"{p.name} ({r.get('mode')})", "reply": r["reply"]})
                # The answer stage itself reads only what follows "Answer List:" (prompts/atomr/stages.py, parse_answer):
                # the same replies cut there give LangChain's reader the text it is built for.
                tail = r["reply"].rpartition("Answer List:")
                if tail[1]:
                    out.append({"stage": "answer_list_tail", "source": f"{p.name} ({r.get('mode')})",
                                "reply": tail[2]})
    p = GENERATED
    if p.exists():
        for r in _jsonl(p):
            out.append({"stage": r["stage"], "source": p.name, "reply": r["reply"]})
    return out


# Context for the generated KAR³ replies: short paragraphs in our own words (what matters is the reply's form).
_PARAGRAPHS = [
    ("Albert Einstein", "Albert Einstein was born in Ulm, in the Kingdom of Württemberg, in March 1879.",
     "Where was Albert Einstein born?"),
    ("Ulm Minster", "Ulm Minster is a Lutheran church in Ulm; its steeple is the tallest of any church.",
     "Which church stands in Ulm?"),
    ("Marie Curie", "Marie Curie was born in Warsaw and shared the 1903 Nobel Prize in Physics.",
     "Where was Marie Curie born?"),
]


def generate(n: int) -> int:
    """Ask the bundled local model for ``n`` replies per KAR³ stage and mode; append them to GENERATED."""
    from types import SimpleNamespace  # noqa: PLC0415

    from atomgraph.local.chat import ChatLocalLlama  # noqa: PLC0415
    from atomgraph.prompts.kar3.stages import ANSWER_STAGE, PROPOSE_STAGE, SELECT_STAGE  # noqa: PLC0415

    chunks = [SimpleNamespace(chunk_id=f"c{i}", title=t, text=x, atom=a) for i, (t, x, a) in enumerate(_PARAGRAPHS)]
    questions = []
    for name in ("local_grounded.jsonl", "local_prompting_plan.jsonl"):
        if (RESULTS / name).exists():
            questions += [r["question"] for r in _jsonl(RESULTS / name) if r.get("question")]
    questions = list(dict.fromkeys(questions))[:n]
    model = ChatLocalLlama(max_tokens=200)
    rows = []
    for q in questions:
        for stage, inputs in ((PROPOSE_STAGE, {"question": q, "chosen": chunks[:1]}),
                              (SELECT_STAGE, {"question": q, "chosen": [], "candidates": chunks}),
                              (ANSWER_STAGE, {"question": q, "chosen": chunks})):
            msgs = stage.prompt.format_messages(**stage.variables(inputs))
            for mode in ("free", "schema"):
                kw = {"json_schema": stage.schema} if mode == "schema" and stage.schema is not None else {}
                t = time.perf_counter()
                reply = model.invoke(msgs, **kw).content
                rows.append({"stage": f"kar3_{stage.name}_{mode}", "question": q, "reply": reply,
                             "seconds": round(time.perf_counter() - t, 2)})
    with GENERATED.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return len(rows)


def _ours(text: str) -> Any:
    return read_json(text)


def _langchain(text: str) -> Any:
    return parse_json_markdown(text)


def _planner(text: str) -> Any:
    from atomgraph.prompts.atomr.tree_parser import extract_json_object  # noqa: PLC0415
    return extract_json_object(text, [])


# A stage that reads its JSON with a reader of its own (not atomgraph/text.py) gets it as one more column.
STAGE_READERS: dict[str, tuple[str, Callable[[str], Any]]] = {"plan": ("planner_json", _planner)}


def _readers() -> dict[str, Callable[[str], Any]]:
    readers: dict[str, Callable[[str], Any]] = {"read_json": _ours, "parse_json_markdown": _langchain}
    if importlib.util.find_spec("json_repair") is not None:
        import json_repair  # noqa: PLC0415 — only when already installed; not a dependency
        readers["json_repair"] = json_repair.loads
    return readers


def _read(fn: Callable[[str], Any], text: str) -> tuple[str, Any]:
    """``("read", value)``, ``("scalar", value)`` or ``("none", error)``."""
    try:
        value = fn(text)
    except Exception as exc:  # noqa: BLE001 — a reader's failure is the measurement
        return "none", f"{type(exc).__name__}"
    if isinstance(value, (dict, list)) and value != [] or isinstance(value, dict):
        return "read", value
    if value is None:
        return "none", None
    return "scalar", value


def measure(examples: int = 3) -> dict:
    readers = _readers()
    replies = gather()
    names = list(readers)
    for extra, fn in STAGE_READERS.values():
        readers[extra] = fn
    by_stage: dict[str, dict] = {}
    grouped: dict[str, list[dict]] = defaultdict(list)
    for r in replies:
        grouped[r["stage"]].append(r)
    seconds = {n: 0.0 for n in names}
    for stage in [*STAGES, *sorted(set(grouped) - set(STAGES))]:
        rows = grouped.get(stage, [])
        if not rows and stage not in STAGES:
            continue
        own = [STAGE_READERS[stage][0]] if stage in STAGE_READERS else []
        cols = [*names, *own]
        stat = {"replies": len(rows), "sources": sorted({r["source"] for r in rows}),
                "read": {n: 0 for n in cols}, "scalar": {n: 0 for n in cols}, "disagree": {}, "examples": []}
        for r in rows:
            got = {}
            for n in cols:
                t = time.perf_counter()
                got[n] = _read(readers[n], r["reply"])
                seconds[n] = seconds.get(n, 0.0) + time.perf_counter() - t
                if got[n][0] == "read":
                    stat["read"][n] += 1
                elif got[n][0] == "scalar":
                    stat["scalar"][n] += 1
            for other in cols[1:]:
                a, b = got["read_json"], got[other]
                same = (a[0] == b[0] == "read" and a[1] == b[1]) or (a[0] != "read" and b[0] != "read")
                if not same:
                    key = f"read_json vs {other}"
                    stat["disagree"][key] = stat["disagree"].get(key, 0) + 1
                    if len(stat["examples"]) < examples:
                        stat["examples"].append({
                            "reply": r["reply"][:300] + ("…" if len(r["reply"]) > 300 else ""),
                            **{n: (repr(v[1])[:200] if v[0] != "none" else f"not read ({v[1]})") for n, v in got.items()}})
        by_stage[stage] = stat
    counted = {k: s for k, s in by_stage.items() if k not in DERIVED}
    total = {"replies": sum(s["replies"] for s in counted.values()),
             "read": {n: sum(s["read"][n] for s in counted.values()) for n in names},
             "disagree": {}, "excludes": sorted(DERIVED)}
    for s in counted.values():
        for k, v in s["disagree"].items():
            total["disagree"][k] = total["disagree"].get(k, 0) + v
    return {"readers": names, "stage_readers": {k: v[0] for k, v in STAGE_READERS.items()},
            "json_repair": "installed" if "json_repair" in names else "not installed (not a dependency): not measured",
            "counting": "read = returns a JSON object or non-empty array; scalar = returns a bare string/number; "
                        "read_json runs with want=(dict, list) and no stage accept",
            "seconds_total": {n: round(v, 4) for n, v in seconds.items()},
            "total": total, "stages": by_stage}


def table(res: dict) -> str:
    names = res["readers"]
    head = "| stage | replies | " + " | ".join(f"read by {n}" for n in names) + " | disagree (read_json vs other) |"
    lines = [head, "|" + "---|" * (3 + len(names))]
    for stage, s in res["stages"].items():
        dis = ", ".join(f"{k.split(' vs ')[1]}: {v}" for k, v in s["disagree"].items()) or "0"
        own = "".join(f" ({n}: {v})" for n, v in s["read"].items() if n not in names)
        lines.append(f"| {stage} | {s['replies']} | " + " | ".join(str(s["read"][n]) for n in names)
                     + own + f" | {dis} |")
    t = res["total"]
    dis = ", ".join(f"{k.split(' vs ')[1]}: {v}" for k, v in t["disagree"].items()) or "0"
    lines.append(f"| **all** (without {', '.join(t['excludes'])}) | {t['replies']} | " + " | ".join(str(t["read"][n]) for n in names) + f" | {dis} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=RESULTS / "json_reader.json")
    ap.add_argument("--generate", type=int, default=0, metavar="N",
                    help="first record N fresh local-model replies per KAR³ stage and mode")
    ap.add_argument("--examples", type=int, default=3, help="disagreeing replies kept per stage")
    args = ap.parse_args(argv)
    if args.generate:
        print(f"generated {generate(args.generate)} replies -> {GENERATED.relative_to(ROOT)}")
    res = measure(args.examples)
    args.out.write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(table(res))
    print(f"json-repair: {res['json_repair']}; written {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
