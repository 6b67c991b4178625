"""KAR³: atomizing throughput with concurrency vs sequential, framework overhead per loop
round, atom-collection query latency.

    python -m benchmarks.bench_kar3 [--chunks 1890] [--latency 0.1] [--queries 200] [--out FILE]

On the 1,890-paragraph MuSiQue corpus (``hipporag/musique_train_corpus.json``), one run:

1. atomizing throughput at a fixed simulated model latency (scripted atomizer, ``--latency``
   s per call), through the real pipeline (``atomize_chunks``: LLM call, batched embedding,
   Chroma writes) on the same 48 chunks: sequential (concurrency 1) vs concurrency 8 and 16,
   each into a fresh index; the speedup is the ratio of the two in this run;
2. the full corpus atomized with ~10 synthetic atoms per chunk (scripted atomizer, no
   latency) at concurrency 16 — its throughput is the framework + embedding + Chroma cost;
3. atom-collection query latency p50/p95 (one proposal, embedding included; a round of 4
   proposals in one batched query; chunk retrieval scored by best atom) over the dataset's
   questions;
4. framework overhead per loop round: ``kar3`` graph runs with a zero-latency scripted model,
   wall time per round minus the recorded LLM and retriever time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from atomgraph.nodes.runtime import MethodRuntime  # noqa: E402
from atomgraph.nodes.kar3.index import atomize_chunks  # noqa: E402
from atomgraph.settings import Settings  # noqa: E402
from atomgraph.state.kar3 import Kar3IndexContext  # noqa: E402
from atomgraph.testing import kar3_scripted_model, passage_of, synthetic_atoms  # noqa: E402
from atomgraph.tools.atom_index import AtomIndex, Chunk  # noqa: E402
from atomgraph.tools.ingest import passage_id  # noqa: E402
from benchmarks.stats import percentile  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hipporag"


def ms(xs: list[float]) -> dict:
    return {"p50_ms": round(1000 * percentile(xs, 50), 2), "p95_ms": round(1000 * percentile(xs, 95), 2), "n": len(xs)}


def load_chunks(limit: int | None) -> list[Chunk]:
    rows = json.loads((DATA / "musique_train_corpus.json").read_text(encoding="utf-8"))
    seen, out = set(), []
    for r in rows[:limit]:
        cid = passage_id(r["title"], r["text"])
        if cid not in seen:
            seen.add(cid)
            out.append(Chunk(cid, r["title"], r["text"]))
    return out


def ten_atoms(prompt: str) -> str:
    title, text = passage_of(prompt)
    return "\n".join(synthetic_atoms(title, text, 10))


class NullIndex:
    """Writes nothing: the atomizing loop alone (model calls, parsing, concurrency)."""

    name = "null"

    def write(self, done) -> int:
        return sum(len(q) for _, q in done)


async def atomize(folder: Path, name: str, chunks: list[Chunk], concurrency: int, latency: float,
                  store: bool = True) -> dict:
    settings = Settings(cache=False, chroma_path=str(folder))
    rt = MethodRuntime.for_method("kar3_index", kar3_scripted_model(atomize=ten_atoms, latency_s=latency), [], settings)
    index = AtomIndex(name, settings=settings) if store else NullIndex()
    if store:
        index.open(create=True)
    stats, _ = await atomize_chunks(rt, index, chunks, Kar3IndexContext(atomizer_concurrency=concurrency))
    return {"concurrency": concurrency, "chunks": len(chunks), "atoms": stats["atoms"], "seconds": stats["seconds"],
            "chunks_per_s": stats["chunks_per_s"]}


def questions(n: int) -> list[str]:
    rows = json.loads((DATA / "musique_train.json").read_text(encoding="utf-8"))
    qs = [r["question"] for r in rows]
    return (qs * (n // len(qs) + 1))[:n]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=None, help="corpus chunks for the query benchmark (default: all 1,890)")
    ap.add_argument("--latency", type=float, default=0.1, help="simulated atomizer latency, seconds per call")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--questions", type=int, default=20, help="kar3 graph runs for the overhead measurement")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if not (DATA / "musique_train_corpus.json").exists():
        print(f"skipped: {DATA} is absent")
        return 0
    result: dict = {"latency_s": args.latency}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus = load_chunks(args.chunks)
        sample = corpus[:48]
        AtomIndex("warm", settings=Settings(cache=False, chroma_path=str(folder))).open(create=True)  # model load
        for store in (False, True):
            runs = [asyncio.run(atomize(folder, f"thr{c}{'s' if store else ''}", sample, c, args.latency, store))
                    for c in (1, 8, 16)]
            seq = runs[0]["seconds"]
            for r in runs:
                r["speedup_vs_sequential"] = round(seq / r["seconds"], 2)
                r["ideal_speedup"] = r["concurrency"]
            label = "with embedding + Chroma writes" if store else "model calls only (writes discarded)"
            result[f"atomizing_throughput_{'stored' if store else 'calls_only'}"] = runs
            print(f"atomizing at {args.latency:.2f}s/call, {label}: " + "; ".join(
                f"concurrency {r['concurrency']}: {r['chunks_per_s']} chunks/s (x{r['speedup_vs_sequential']})" for r in runs))

        full = asyncio.run(atomize(folder, "musique", corpus, 16, 0.0))
        result["full_corpus_atomizing"] = full
        print(f"full corpus: {full['chunks']} chunks, {full['atoms']} atoms ({full['atoms'] / full['chunks']:.1f}/chunk) "
              f"in {full['seconds']:.1f}s = {full['chunks_per_s']} chunks/s (no model latency)")

        settings = Settings(cache=False, chroma_path=str(folder))
        index = AtomIndex("musique", settings=settings)
        index.open()
        qs = questions(args.queries)
        index.search_atoms([qs[0]], 4, 0.5)  # warm
        one, four, chunk = [], [], []
        for q in qs:
            t = time.perf_counter(); index.search_atoms([q], 4, 0.5); one.append(time.perf_counter() - t)
            t = time.perf_counter(); index.search_atoms([q, q + " ?", "Who is " + q, "When " + q], 4, 0.5); four.append(time.perf_counter() - t)
            t = time.perf_counter(); index.search_chunks(q, 4); chunk.append(time.perf_counter() - t)
        result["query_latency"] = {"atoms": index.counts()["atoms"], "one_proposal": ms(one),
                                   "round_of_4_proposals": ms(four), "chunk_backup": ms(chunk)}
        print(f"query latency over {result['query_latency']['atoms']} atoms: one proposal {ms(one)}, "
              f"4 proposals batched {ms(four)}, chunk backup {ms(chunk)}")

        from atomgraph.graphs.kar3 import build_kar3_graph
        from atomgraph.tools.atom_source import AtomSource

        plans = lambda p: json.dumps({"thinking": "", "sub_questions": ["Who founded it?", "Where is it?"]})  # noqa: E731
        model = kar3_scripted_model(plans, answer="x")
        graph = build_kar3_graph(model=model, sources=[AtomSource(index, settings=settings)], settings=settings)
        per_round, overhead = [], []
        for q in questions(args.questions):
            t = time.perf_counter()
            out = graph.invoke({"question": q})
            wall = time.perf_counter() - t
            n = len(out["trace"]["rounds"])
            spent = sum(c["latency_s"] for c in out["llm_calls"]) + sum(c["latency_s"] for c in out["retriever_calls"])
            per_round.append(wall / n)
            overhead.append((wall - spent) / n)
        result["loop_round"] = {"rounds_per_question": n, "wall_per_round": ms(per_round),
                                "framework_overhead_per_round": ms(overhead)}
        print(f"loop round (zero-latency model, real retrieval): wall {ms(per_round)}, "
              f"framework overhead {ms(overhead)}")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
