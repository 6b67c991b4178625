"""How the bundled base model (Gemma-3-270M, no chat template) is prompted and constrained,
measured on dev questions in one run (issue 26 items 2-3).

Parts (``--part``):

- ``plan``: ATOMR's plan stage on the first N HotpotQA dev questions (``hotpotqa_dev_100``,
  demonstration questions left out), general pack, output cap ``--cap``, in four settings:
  chat turns or completion-style text, times the stage's PlanSchema JSON-schema grammar (the
  earlier default for in-process models) or the root-pinned plan grammar (``plan_grammar``).
  Counted per setting: replies that parse, and *usable* plans (a plan whose root is the
  question asked, at least one node, every leaf an operator call or ``[DR]``).
- ``stages``: the answering stages (``direct_rag``, ``search``, ``relate``) on N HotpotQA
  questions with their gold passages as the retrieved knowledge, chat vs completion, in text
  mode (the stage's parser over the free reply) and structured mode (the AnswerSchema grammar):
  replies that parse and replies with an answer (not Unknown).

Each reply, its parse and its seconds are written to the JSONL next to the results JSON;
greedy decoding, the engine's KV-cache history is the same sequence of calls in every run.

    nice python -m benchmarks.bench_local_prompting --part plan --n 20
    nice python -m benchmarks.bench_local_prompting --part stages --n 8
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
HOTPOT_DEV = DATA / "atomr" / "questions" / "single_source" / "HotpotQA" / "hotpotqa_dev_100.jsonl"
HOTPOT_RETRIEVAL = DATA / "retrieval" / "hotpotqa"


def demo_questions() -> set[str]:
    """Every question the prompt packs demonstrate (left out of the measured questions)."""
    from atomgraph.prompts.atomr.packs import EXAMPLES, PACKS

    out = {" ".join(q.split()).lower() for p in PACKS.values() for q, _ in p.plan_examples}
    for exs in EXAMPLES.values():
        for ex in exs:
            for line in ex.splitlines():
                if line.startswith("Question:"):
                    out.add(" ".join(line[9:].split()).lower())
    return out


def dev_questions(n: int) -> list[dict]:
    path = HOTPOT_DEV if HOTPOT_DEV.is_file() else next(HOTPOT_DEV.parent.glob("*dev_100.jsonl"))
    skip = demo_questions()
    rows = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
    return [r for r in rows if " ".join(r["question"].split()).lower() not in skip][:n]


def usable(plans, question: str) -> tuple[bool, str]:
    """(usable, why not): a kept plan for ``question`` whose leaves are all operator calls or [DR]."""
    from atomgraph.nodes.atomr.plan import pick_plan

    tree, problem = pick_plan(plans, question)
    if tree is None:
        return False, problem or "no plan"
    if not tree.nodes:
        return False, "no nodes"
    bad = [n.question for n in tree.nodes.values() if not n.children and n.kind not in ("operator", "direct")]
    if bad:
        return False, f"{len(bad)} leaves without an operator call or [DR]"
    return True, ""


def run_plan(args, engine, log) -> dict:
    from atomgraph.local.chat import ChatLocalLlama
    from atomgraph.prompts.atomr.plan import PLAN_CLOSE_RESERVE, plan_grammar
    from atomgraph.prompts.atomr.stages import PLAN_STAGE, PLAN_STOP, PlanSchema, read_plans

    questions = dev_questions(args.n)
    settings = [(fmt, mode) for mode in ("schema", "grammar") for fmt in ("chat", "completion")
                if not args.only or f"{fmt}+{mode}" in args.only]
    out: dict = {}
    for fmt, mode in settings:
        model = ChatLocalLlama(prompt_format=fmt, max_tokens=args.cap)
        counts = {"n": 0, "parsed": 0, "usable": 0, "seconds": 0.0, "output_tokens": 0}
        for row in questions:
            q = " ".join(row["question"].split())
            msgs = PLAN_STAGE.messages({"question": q, "pack": "general"})
            if mode == "schema":
                bound = model.bind(json_schema=PlanSchema.model_json_schema())
            else:
                bound = model.bind(grammar=plan_grammar(q), close_reserve=PLAN_CLOSE_RESERVE, stop=list(PLAN_STOP))
            t0 = time.perf_counter()
            msg = bound.invoke(msgs)
            secs = time.perf_counter() - t0
            text = str(msg.content)
            plans, err = None, None
            try:
                plans = PLAN_STAGE.from_structured(PlanSchema.model_validate_json(text)) if mode == "schema" \
                    else read_plans(text)
            except Exception as exc:  # noqa: BLE001 - an unreadable reply is what we count
                err = f"{type(exc).__name__}: {str(exc)[:200]}"
            ok, why = usable(plans, q) if plans else (False, err or "no plan")
            counts["n"] += 1
            counts["parsed"] += plans is not None
            counts["usable"] += ok
            counts["seconds"] += secs
            counts["output_tokens"] += (msg.usage_metadata or {}).get("output_tokens", 0)
            log.write(json.dumps({"part": "plan", "format": fmt, "mode": mode, "question": q, "reply": text,
                                  "parsed": plans is not None, "usable": ok, "why": why, "seconds": round(secs, 2)},
                                 ensure_ascii=False) + "\n")
            log.flush()
            print(f"plan {fmt}/{mode}: usable={ok} {why[:80]!r} {secs:.1f}s", file=sys.stderr, flush=True)
        counts["seconds_per_question"] = round(counts["seconds"] / max(1, counts["n"]), 2)
        counts["seconds"] = round(counts["seconds"], 1)
        out[f"{fmt}+{mode}"] = counts
    return {"questions": len(questions), "cap": args.cap, "pack": "general", "settings": out}


def gold_passages(n: int) -> list[dict]:
    objects = {}
    for line in (HOTPOT_RETRIEVAL / "objects.jsonl").open(encoding="utf-8"):
        o = json.loads(line)
        objects[o["id"]] = o
    skip = demo_questions()
    rows = []
    for line in (HOTPOT_RETRIEVAL / "questions.jsonl").open(encoding="utf-8"):
        q = json.loads(line)
        if " ".join(q["question"].split()).lower() in skip:
            continue
        q["passages"] = [objects[i] for i in q["gold_ids"] if i in objects]
        rows.append(q)
    return rows[:n]


def knowledge_text(passages: list[dict]) -> str:
    return "Wikipedia Passages:\n" + "\n".join(f"[{i}] {p['title']} | {p['text']}" for i, p in enumerate(passages, 1))


def run_stages(args, engine, log) -> dict:
    from atomgraph.local.chat import ChatLocalLlama
    from atomgraph.prompts.atomr.stages import AnswerSchema, STAGES, answer_from_structured

    rows = gold_passages(args.n)
    out: dict = {}
    for stage_name in ("direct_rag", "search", "relate"):
        stage = STAGES[stage_name]
        for fmt in ("chat", "completion"):
            for mode in ("text", "structured"):
                model = ChatLocalLlama(prompt_format=fmt, max_tokens=args.cap)
                bound = model.bind(json_schema=AnswerSchema.model_json_schema()) if mode == "structured" \
                    else model.bind(stop=list(stage.stop))
                counts = {"n": 0, "parsed": 0, "answered": 0, "seconds": 0.0}
                for row in rows:
                    q = " ".join(row["question"].split())
                    if stage_name == "direct_rag":
                        inputs = {"question": q, "knowledge": knowledge_text(row["passages"])}
                    else:  # the operator stage on the question's first gold passage's title
                        title = row["passages"][0]["title"] if row["passages"] else q
                        inputs = {"question": q, "knowledge": knowledge_text(row["passages"]),
                                  "operator": f'Search("{title}")' if stage_name == "search"
                                  else f'Relate("{title}", "{q}")'}
                    try:
                        msgs = stage.messages(inputs)
                    except KeyError as exc:
                        return {"error": f"{stage_name} needs input {exc}"}
                    t0 = time.perf_counter()
                    msg = bound.invoke(msgs)
                    secs = time.perf_counter() - t0
                    text = str(msg.content)
                    value, err = None, None
                    try:
                        value = answer_from_structured(AnswerSchema.model_validate_json(text)) \
                            if mode == "structured" else stage.parse(text)
                    except Exception as exc:  # noqa: BLE001
                        err = f"{type(exc).__name__}: {str(exc)[:200]}"
                    counts["n"] += 1
                    counts["parsed"] += value is not None
                    counts["answered"] += bool(value is not None and not value.unknown and value.answers)
                    counts["seconds"] += secs
                    log.write(json.dumps({"part": "stages", "stage": stage_name, "format": fmt, "mode": mode,
                                          "question": q, "reply": text, "error": err,
                                          "answers": value.answers if value is not None else None,
                                          "seconds": round(secs, 2)}, ensure_ascii=False) + "\n")
                    log.flush()
                    print(f"{stage_name} {fmt}/{mode}: {err or (value.answers if value else '')!r:.80} {secs:.1f}s",
                          file=sys.stderr, flush=True)
                counts["seconds"] = round(counts["seconds"], 1)
                out[f"{stage_name}:{fmt}+{mode}"] = counts
    return {"questions": len(rows), "cap": args.cap, "settings": out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("plan", "stages"), required=True)
    ap.add_argument("--n", type=int, default=20, help="questions (default 20)")
    ap.add_argument("--cap", type=int, default=160, help="output tokens per call (default 160)")
    ap.add_argument("--only", nargs="*", default=None, help="plan settings to run, e.g. completion+grammar")
    ap.add_argument("--out", default=None, help="results JSON (default benchmarks/results/local_prompting_<part>.json)")
    args = ap.parse_args(argv)
    if not HOTPOT_DEV.parent.is_dir():
        print(f"skipped: {HOTPOT_DEV.parent} is absent", file=sys.stderr)
        return 0
    from atomgraph.local.engine import load_engine

    engine = load_engine()
    out = Path(args.out or REPO / "benchmarks" / "results" / f"local_prompting_{args.part}.json")
    t0 = time.perf_counter()
    with out.with_suffix(".jsonl").open("w", encoding="utf-8") as log:
        res = run_plan(args, engine, log) if args.part == "plan" else run_stages(args, engine, log)
    res.update({"model": engine.name, "chat_template": engine.is_chat_model, "wall_s": round(time.perf_counter() - t0, 1),
                "command": f"python -m benchmarks.bench_local_prompting --part {args.part} --n {args.n} --cap {args.cap}"
                           + (f" --only {' '.join(args.only)}" if args.only else "")})
    out.write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
