"""KAR³ with the bundled local model (Gemma-3-270M, in-process) on MuSiQue: the authors'
behaviour (the defaults) against the project's variants (the switches on), per question:
rounds, chunks chosen, exits by reason, supporting-paragraph recall, LLM calls and tokens
(the paper reports 8,820 tokens per question with GPT-4, Table 11).

    python -m benchmarks.bench_kar3_local [--questions 20] [--model local] [--out FILE]

The atom index holds the paragraphs of the questions run, atomized by the scripted sentence
atomizer (each sentence as a question; atomizing with the 270M model on this machine's CPUs
would take longer than the loop itself); the QA loop — proposer, selector, answerer — runs
on the model. A tiny model: the numbers show how the loop behaves, not accuracy.
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
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from atomgraph.settings import Settings  # noqa: E402
from atomgraph.tools.atom_source import AtomSource  # noqa: E402
from atomgraph.tools.ingest import passage_id  # noqa: E402
from benchmarks.bench_kar3_delta import DATA, build_proxy_index  # noqa: E402

OURS_BEFORE = {"max_proposals": 8, "delta_metric": "cosine", "single_query_top_k": 4, "chunk_top_k": 4}
CONFIGS = {"authors": {}, "ours_before": OURS_BEFORE}


def supporting(item: dict) -> set[str]:
    return {passage_id(p["title"], p["paragraph_text"]) for p in item["paragraphs"] if p.get("is_supporting")}


async def run_config(graph, items: list[dict], context: dict) -> dict:
    per: list[dict] = []
    for item in items:
        t0 = time.perf_counter()
        out = await graph.ainvoke({"question": item["question"]}, context=context)
        trace = out.get("trace") or {}
        usage = trace.get("usage") or {}
        gold = supporting(item)
        got = set(out.get("retrieved_ids") or [])
        per.append({"id": item["id"], "rounds": len(trace.get("rounds") or []), "chosen": len(got),
                    "exit": trace.get("exit"), "recall": len(gold & got) / len(gold) if gold else 0.0,
                    "tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0),
                    "llm_calls": usage.get("llm_calls", 0), "unreadable": usage.get("unreadable", 0),
                    "paragraph_backups": sum(1 for r in trace.get("rounds") or [] if r.get("paragraphs_offered")),
                    "answer": out.get("answer"), "gold": item["answer"], "seconds": round(time.perf_counter() - t0, 1)})
        print(json.dumps(per[-1]), flush=True)
    n = len(per)
    mean = lambda k: round(sum(p[k] for p in per) / n, 3)  # noqa: E731
    return {"questions": n, "rounds_per_question": mean("rounds"), "chunks_per_question": mean("chosen"),
            "exits": dict(Counter(p["exit"] for p in per)), "support_recall": mean("recall"),
            "tokens_per_question": mean("tokens"), "llm_calls_per_question": mean("llm_calls"),
            "unreadable_per_question": mean("unreadable"), "paragraph_backups_per_question": mean("paragraph_backups"),
            "seconds_per_question": mean("seconds"), "per_question": per}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--skip", type=int, default=0, help="start after this many questions")
    ap.add_argument("--model", default="local")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    path = DATA / "musique_train.json"
    if not path.exists():
        print(f"skipped: {path} is absent", file=sys.stderr)
        return 0
    from atomgraph.graphs.kar3 import build_kar3_graph

    items = json.loads(path.read_text(encoding="utf-8"))[args.skip: args.skip + args.questions]
    result: dict = {"model": args.model, "questions": len(items), "paper_tokens_per_question": 8820, "configs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(cache=False, chroma_path=tmp, model=args.model)
        index = build_proxy_index(items, tmp, settings.embedding_model)
        graph = build_kar3_graph(model=None, sources=[AtomSource(index, settings=settings)], settings=settings)
        for name in args.configs.split(","):
            r = asyncio.run(run_config(graph, items, CONFIGS[name]))
            result["configs"][name] = r
            print(name, json.dumps({k: v for k, v in r.items() if k != "per_question"}), flush=True)
            if args.out:
                Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
