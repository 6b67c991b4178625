"""Chroma Wikipedia source: ingestion throughput vs the raw encoder, query latency, memory.

    python -m benchmarks.bench_chroma [--limit N] [--batch-size 256] [--queries 200] [--out FILE]

On ``2wikimultihopqa_corpus.json`` (6,119 paragraphs; ``--limit`` for quick runs), one run:

1. raw encoder throughput: the same model, the same texts ("Title | text" of every unique
   passage piece) and the same batches as ingestion, encoded and discarded;
2. ingestion throughput: ``atomgraph.tools.ingest.ingest`` into a fresh embedded collection
   (reading, splitting, hashing, id look-ups, embedding, writing), unique passages / s;
   the ratio ingestion / encoder is the share of pure encoding speed that indexing keeps;
3. query latency p50/p95 of ``ChromaWikipediaSource.search(q, k=3)`` (embedding the query
   included) over ~200 questions, right after indexing and again in a second pass;
4. peak resident memory (``ru_maxrss``).

Encoder and ingestion are timed in interleaved rounds over slices of the corpus (order
alternating per round), so that load from other processes on a shared machine affects both
sides alike; each slice is ingested by its own ``ingest`` call into one collection.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from atomgraph.embeddings import embedding_id, embedding_model  # noqa: E402
from atomgraph.settings import Settings  # noqa: E402
from atomgraph.tools.chroma_source import ChromaWikipediaSource  # noqa: E402
from atomgraph.tools.corpus_readers import read_passages  # noqa: E402
from atomgraph.tools.ingest import DEFAULT_MAX_TOKENS, embed_input, ingest, passage_id, split_text  # noqa: E402
from benchmarks.stats import percentile  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CORPUS = DATA / "hipporag" / "2wikimultihopqa_corpus.json"
QUESTIONS = DATA / "atomr" / "questions" / "single_source" / "2WikiMultiHop"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def rounds_of(limit: int | None, max_tokens: int, rounds: int) -> list[tuple[list[dict], list[str]]]:
    """The corpus in ``rounds`` slices: (records, "Title | text" of the pieces new in that slice)."""
    records = []
    for i, p in enumerate(read_passages(CORPUS)):
        if limit is not None and i >= limit:
            break
        records.append(p)
    size = -(-len(records) // max(1, rounds))
    seen: set[str] = set()
    out = []
    for start in range(0, len(records), size):
        chunk, texts = records[start : start + size], []
        for p in chunk:
            for piece in split_text(p.text, max_tokens):
                pid = passage_id(p.title, piece)
                if pid not in seen:
                    seen.add(pid)
                    texts.append(embed_input(p.title, piece))
        out.append(([{"title": p.title, "text": p.text} for p in chunk], texts))
    return out


def encode_seconds(emb, texts: list[str], batch_size: int) -> float:
    start = time.perf_counter()
    for i in range(0, len(texts), batch_size):
        emb.encode(texts[i : i + batch_size])
    return time.perf_counter() - start


def questions(n: int, fallback: list[str]) -> list[str]:
    out: list[str] = []
    for f in sorted(QUESTIONS.glob("*.jsonl")) if QUESTIONS.is_dir() else []:
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(json.loads(line)["question"])
    out = out or [t.split(" | ")[0] for t in fallback]
    return (out * (n // max(1, len(out)) + 1))[:n]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=None, help="first N corpus paragraphs (default: all 6,119)")
    ap.add_argument("--batch-size", type=int, default=256, help="ingestion batch (passages per write)")
    ap.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=6, help="interleaved encoder/ingestion rounds")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)
    if not CORPUS.is_file():
        print(f"skipped: corpus {CORPUS} is absent", file=sys.stderr)
        return 0

    settings = Settings()
    emb = embedding_model(settings)
    rounds = rounds_of(args.limit, args.max_tokens, args.rounds)
    encode_seconds(emb, rounds[0][1][:64], args.batch_size)  # load and warm up the model
    rss_model = peak_rss_mb()

    raw_s = ingest_s = 0.0
    n_raw = 0
    stats_all = []
    with tempfile.TemporaryDirectory(prefix="bench-chroma-") as tmp:
        run_settings = Settings(chroma_path=str(Path(tmp) / "db"))
        for r, (records, texts) in enumerate(rounds):
            part = Path(tmp) / f"round{r}.jsonl"
            part.write_text("".join(json.dumps(rec) + "\n" for rec in records), encoding="utf-8")

            def run_ingest() -> float:
                st = ingest([part], "bench", settings=run_settings, embeddings=emb, batch_size=args.batch_size,
                            max_tokens=args.max_tokens, progress=False)
                stats_all.append(st)
                return st.seconds

            # alternate the order so that neither side always runs first in a round
            if r % 2 == 0:
                raw_s += encode_seconds(emb, texts, args.batch_size)
                ingest_s += run_ingest()
            else:
                ingest_s += run_ingest()
                raw_s += encode_seconds(emb, texts, args.batch_size)
            n_raw += len(texts)
            print(f"round {r + 1}/{len(rounds)}: encoder {n_raw / raw_s:.1f}/s, "
                  f"ingestion {sum(s.added for s in stats_all) / ingest_s:.1f}/s", file=sys.stderr)
        rss_ingest = peak_rss_mb()
        added = sum(s.added for s in stats_all)
        raw = n_raw / raw_s
        ingest_rate = added / ingest_s

        source = ChromaWikipediaSource("bench", settings=run_settings, embeddings=emb)
        qs = questions(args.queries, rounds[0][1])
        source.search(qs[0], k=3)

        def timed_pass() -> list[float]:
            out = []
            for q in qs:
                t0 = time.perf_counter()
                source.search(q, k=3)
                out.append((time.perf_counter() - t0) * 1000)
            return out

        latencies = timed_pass()  # right after indexing (Chroma may still be compacting)
        latencies_again = timed_pass()  # the same queries once more
        count = source.count()

    results = {
        "corpus": str(CORPUS.name),
        "embedding_model": embedding_id(emb),
        "batch_size": args.batch_size,
        "encode_batch_size": getattr(emb, "batch_size", None),
        "torch_threads": _torch_threads(),
        "cpus": os.cpu_count(),
        "rounds": len(rounds),
        "records": sum(s.read for s in stats_all),
        "unique_passages": added,
        "collection_count": count,
        "ingest_seconds": round(ingest_s, 2),
        "encoder_seconds": round(raw_s, 2),
        "ingest_passages_per_s": round(ingest_rate, 1),
        "encoder_passages_per_s": round(raw, 1),
        "ingest_over_encoder": round(ingest_rate / raw, 3),
        "queries": len(latencies),
        "query_ms_p50": round(statistics.median(latencies), 2),
        "query_ms_p95": round(percentile(latencies, 95), 2),
        "query_ms_p50_second_pass": round(statistics.median(latencies_again), 2),
        "query_ms_p95_second_pass": round(percentile(latencies_again, 95), 2),
        "peak_rss_mb_after_model_load": round(rss_model, 1),
        "peak_rss_mb_after_ingest": round(rss_ingest, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    rows = [
        ("passages (unique)", f"{added} (collection holds {count})"),
        ("raw encoder", f"{raw:.1f} passages/s ({raw_s:.1f} s)"),
        ("ingestion", f"{ingest_rate:.1f} passages/s ({ingest_s:.1f} s)"),
        ("ingestion / encoder", f"{results['ingest_over_encoder']:.3f}"),
        ("query latency k=3", f"p50 {results['query_ms_p50']} ms, p95 {results['query_ms_p95']} ms ({len(latencies)} queries)"),
        ("  second pass", f"p50 {results['query_ms_p50_second_pass']} ms, p95 {results['query_ms_p95_second_pass']} ms"),
        ("peak RSS", f"{results['peak_rss_mb']:.0f} MiB (after model load {rss_model:.0f} MiB)"),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


def _torch_threads() -> int | None:
    try:
        import torch

        return torch.get_num_threads()
    except Exception:  # noqa: BLE001
        return None


if __name__ == "__main__":
    sys.exit(main())
