"""The bundled local model (Gemma-3-270M, in process) through every registered method: no answer
may break the answer contract (``prompts/stage.py``).

Each method answers the first N demo questions (``atomgraph/demo/questions.jsonl``) over the
demo knowledge pack: an in-memory ``wikipedia`` source of its 97 passages for the retrieval
methods, an ARM index of the same passages for ARM, and for KAR³ an atom index of them built by
the scripted sentence atomizer (atomizing with the 270M model would take longer than the runs).
Per method and question it records the wall time, the answer, the error, the answers refused by
reason (``answer refused (<reason>)`` in a call's parse error or the run's error), every
contract violation (a non-empty answer, or item of ``answers``, that ``check_answer`` refuses;
one makes the exit status 1), and answers that are a demonstration's own answer and not the
question's gold (``copied_demonstration_answers``: the contract refuses a demonstration's
answer that nothing in the question, the stage's inputs or the model's own reasoning supports,
``check_not_copied``; one it let through, with support, is counted here, not failed).

    python -m benchmarks.check_local_contract [--questions 5] [--methods rag,atomr] [--caps small]
        [--out benchmarks/results/local_contract.json]

``--caps small`` runs every stage under a small output cap (``SMALL_CAPS``), ``--caps tiny``
under half of those (the test suite's setting), ``--caps default`` under the stages' own caps
(as ``ATOMGRAPH_MODEL=local`` runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from atomgraph.prompts.stage import AnswerRefused, check_answer, check_debris, refusal_reason  # noqa: E402

# Small caps for every stage: enough for a short answer or a small plan, so a question costs
# seconds rather than minutes on a CPU. A stage not named keeps its own cap.
SMALL_CAPS = {
    # ATOMR (the demo's caps for the local model)
    "plan": 128, "source_selection": 24, "search": 64, "relate": 64, "filter": 64, "child_reasoning": 64,
    "sibling_reasoning": 64, "direct_rag": 64, "closed_book": 64, "kg_program": 64,
    # baselines and comparison methods
    "standard": 48, "cot": 96, "rag": 64, "self_ask_step": 64, "self_ask_answer": 64, "self_ask_final": 48, "ircot_step": 48, "ircot_read": 64,
    "iter_retgen": 96, "decomposed_rag_plan": 96, "decomposed_rag_answer": 64, "react": 96,
    # KAR³ and ARM
    "propose": 96, "select": 64, "select_paragraph": 64, "answer": 64,
    "arm_decompose": 64, "arm_align": 32, "arm_align_list": 48, "arm_draft": 96, "arm_verify": 96, "arm_answer": 64,
}

# The test suite's size (tests/test_local_contract.py): half the small caps, at least 24 tokens.
TINY_CAPS = {k: max(24, v // 2) for k, v in SMALL_CAPS.items()}
CAPS = {"small": SMALL_CAPS, "tiny": TINY_CAPS, "default": {}}


def demo_sources(method: str, work: Path):
    """The knowledge sources ``method`` runs over: the demo pack's passages."""
    from atomgraph.demo_pack import PASSAGES_FILE, load_passages, pack_dir
    from atomgraph.tools.memory_source import InMemorySource

    wiki = InMemorySource(load_passages(), name="wikipedia", description="Encyclopedia passages.")
    if method == "arm":
        from atomgraph.tools.arm_index import ArmIndex
        from atomgraph.tools.objects import DataObject

        objects = [DataObject(p["id"], "passage", p["title"], p["text"]) for p in load_passages()]
        return ArmIndex.build(objects, cache_dir=work / "arm")
    if method == "kar3":
        from atomgraph.graphs.kar3_index import build_kar3_index_graph
        from atomgraph.settings import Settings
        from atomgraph.testing import kar3_scripted_model
        from atomgraph.tools.atom_source import AtomSource

        settings = Settings(cache=False, chroma_path=str(work / "atoms"))
        if not (work / "atoms").exists():
            out = build_kar3_index_graph(model=kar3_scripted_model(), settings=settings).invoke(
                {"inputs": [str(pack_dir() / PASSAGES_FILE)], "collection": "demo"})
            if out.get("error"):
                raise RuntimeError(f"building the demo atom index failed: {out['error']}")
        return [AtomSource("demo", settings=settings), wiki]
    return [wiki]


def violations(out: dict, question: str = "") -> list[str]:
    """Every answer text of a run's output that breaks the answer contract, with why (debris
    against ``question`` included: :func:`check_debris`)."""
    found = []
    texts = [out.get("answer") or ""] + [a for a in out.get("answers") or []]
    for text in texts:
        if not str(text).strip():
            continue
        try:
            check_answer(str(text))
            check_debris(str(text), question)
        except AnswerRefused as exc:
            found.append(f"{str(text)[:120]!r}: {exc}")
    return found


def demonstration_answers() -> set[str]:
    """The answers of the prompts' own demonstrations (baselines, Self-Ask, IRCoT), normalised."""
    from atomgraph.prompts.baselines import DEMONSTRATION_PAIRS
    from atomgraph.prompts.compare import ircot, self_ask

    pairs = [*DEMONSTRATION_PAIRS, *self_ask.EXAMPLE_PAIRS, *ircot.EXAMPLE_PAIRS]
    return {" ".join(str(a).casefold().split()) for _q, a in pairs}


def copied_demonstration(out: dict, gold: list[str], demos: set[str]) -> bool:
    """An answer that is a demonstration's own answer (and not this question's gold), which
    :func:`check_answer` alone cannot see (a demonstration's answer is a fine answer to another
    question); ``rt.ask`` refuses one with no support (``check_not_copied``)."""
    norm = " ".join(str(out.get("answer") or "").casefold().split())
    return bool(norm) and norm in demos and norm not in {" ".join(g.casefold().split()) for g in gold}


def refusals(out: dict) -> Counter:
    """Answers refused in a run, by reason (from the calls' parse errors, or the run's error)."""
    got = Counter(refusal_reason(c.get("parse_error")) for c in out.get("llm_calls") or [])
    got.pop(None, None)
    if not got and refusal_reason(out.get("error")):
        got[refusal_reason(out.get("error"))] += 1
    return got


async def check(methods: list[str], n: int, caps: str, work: Path) -> dict:
    from atomgraph.demo_pack import load_questions
    from atomgraph.graphs.registry import build_method
    from atomgraph.local.chat import ChatLocalLlama
    from atomgraph.settings import Settings

    t0 = time.perf_counter()
    model = ChatLocalLlama()
    model.invoke("Hi", max_tokens=1)  # load the weights outside the timed runs
    load_s = time.perf_counter() - t0
    settings = Settings(model="local", cache=False, chroma_path=str(work / "chroma"),
                        stage_max_tokens=CAPS[caps])
    questions = load_questions()[:n]
    demos = demonstration_answers()
    report: dict = {"model": "local (Gemma-3-270M Q4_K_M, in-process)", "questions": n, "caps": caps,
                    "load_s": round(load_s, 1), "methods": {}}
    for method in methods:
        sources = await asyncio.to_thread(demo_sources, method, work)
        graph = build_method(method, model=model, settings=settings, sources=sources)
        rows = []
        for q in questions:
            t = time.perf_counter()
            try:
                out = await graph.ainvoke({"question": q["question"]})
            except Exception as exc:  # a crash is a finding too: recorded, the check goes on
                out = {"answer": "", "error": f"crashed: {type(exc).__name__}: {exc}"[:300], "llm_calls": []}
            rows.append({"id": q["id"], "seconds": round(time.perf_counter() - t, 1), "answer": out.get("answer") or "",
                         "gold": q["answers"][0], "error": (out.get("error") or None) and str(out["error"])[:300],
                         "llm_calls": len(out.get("llm_calls") or []), "refused": dict(refusals(out)),
                         "violations": violations(out, q["question"]),
                         "copied_demonstration_answer": copied_demonstration(out, q["answers"], demos)})
            print(json.dumps({"method": method, **rows[-1]}, ensure_ascii=False), flush=True)
        refused = Counter()
        for r in rows:
            refused.update(r["refused"])
        report["methods"][method] = {
            "questions": len(rows), "answered": sum(1 for r in rows if r["answer"]),
            "errors": sum(1 for r in rows if r["error"]), "crashed": sum(1 for r in rows if str(r["error"]).startswith("crashed")),
            "refused_by_reason": dict(refused), "violations": sum(len(r["violations"]) for r in rows),
            "copied_demonstration_answers": sum(1 for r in rows if r["copied_demonstration_answer"]),
            "seconds_total": round(sum(r["seconds"] for r in rows), 1), "per_question": rows}
    report["seconds_total"] = round(time.perf_counter() - t0, 1)
    return report


def main(argv: list[str] | None = None) -> int:
    from atomgraph.graphs.registry import method_names

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", type=int, default=5)
    p.add_argument("--methods", default=",".join(sorted(method_names())))
    p.add_argument("--caps", choices=tuple(CAPS), default="small")
    p.add_argument("--out", default="benchmarks/results/local_contract.json")
    args = p.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(methods) - set(method_names()))
    if unknown:
        p.error(f"unknown methods: {', '.join(unknown)}")
    with tempfile.TemporaryDirectory(prefix="atomgraph-contract-") as tmp:
        report = asyncio.run(check(methods, args.questions, args.caps, Path(tmp)))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    bad = {m: r["violations"] for m, r in report["methods"].items() if r["violations"]}
    print(f"{'method':16} answered errors  refused (by reason)                        violations  demo-answer  seconds")
    for m, r in report["methods"].items():
        refused = ", ".join(f"{k} {v}" for k, v in sorted(r["refused_by_reason"].items())) or "-"
        print(f"{m:16} {r['answered']:>4}/{r['questions']:<3} {r['errors']:>5}  {refused:42} {r['violations']:>10}  "
              f"{r['copied_demonstration_answers']:>11}  {r['seconds_total']:>7}")
    print(f"total {report['seconds_total']} s; report in {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
