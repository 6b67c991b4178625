"""ARM's index at scale: synthetic objects at 10^4, 10^5 and 10^6.

    python -m benchmarks.bench_arm_scale [--sizes 10000,100000,1000000] [--queries 200] [--out F]

Objects are short synthetic passages (a 2-word capitalised title, 12-30 words of text drawn
from a Zipf-distributed 50,000-word vocabulary; a fifth of the texts mention another object's
title). Embeddings are stood in for by random unit vectors (384 dimensions, MiniLM's: a hash of
the text seeds each), so the *embedding* stage is excluded from every rate below; random
vectors are also the hardest case for an ANN index (no structure to quantise), so its recall
here is a lower bound for real embeddings.

Each size runs in two fresh processes (``--threads``, default 1: BLAS and OpenMP threads):

- ``build``: :meth:`ArmIndex.build` with ``dense_search="ann"`` into a temporary cache; the
  build summary's stage times give a rate (objects/s) per component — n-gram tables (trie +
  postings), BM25 (tokens + index), ANN (quantiser scan), title mentions, the content hash, saving —
  plus peak RSS and the bytes per object of each persisted part;
- ``open``: the same objects reopened from that cache (nothing rebuilt): the time to open,
  the RSS the open index adds (bytes per object), then query latency (median / p95): the
  LLM-free candidate search (:class:`Scores` + :func:`base_pool`: dense ANN per keyword and
  for the question, BM25 per keyword and over all n-grams) with ANN and with exact dense
  search, dense top-10 recall of ANN against exact, and full LLM-free :func:`arm_retrieve`
  (alignment, drafts, graded compatibility, MIP, vote) with replayed keywords.

A size whose projected memory (bytes per object measured at the size before, times the size)
exceeds ``--max-gb`` is skipped and says so. Targets: candidate search ≤ 100 ms at
10^5 objects; memory linear in the collection (bytes per object roughly constant across sizes).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

from benchmarks.stats import percentile

DIM = 384
VOCAB = 50_000
SEED = 15


def _rss() -> int:
    """Resident set size of this process now, in bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _words(rng: np.random.Generator) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    out: dict[str, None] = {}
    while len(out) < VOCAB:
        for n in rng.integers(3, 10, size=VOCAB):
            out.setdefault("".join(rng.choice(letters, size=n)))
            if len(out) >= VOCAB:
                break
    return list(out)


def synthetic_objects(n: int):
    """``n`` short passages (module doc), the same for the same ``n``."""
    from atomgraph.tools.objects import DataObject

    rng = np.random.default_rng(SEED)
    words = _words(rng)
    p = 1.0 / np.arange(1, VOCAB + 1) ** 1.05
    p /= p.sum()
    lengths = rng.integers(12, 31, size=n)
    draws = rng.choice(VOCAB, size=int(lengths.sum()), p=p)
    title_words = rng.integers(1000, VOCAB, size=(n, 2))  # rarer words
    mention = rng.random(n) < 0.2
    other = rng.integers(0, n, size=n)
    titles = [f"{words[a].capitalize()} {words[b].capitalize()}" for a, b in title_words]
    objects, at = [], 0
    for i in range(n):
        toks = [words[t] for t in draws[at : at + lengths[i]]]
        at += lengths[i]
        if mention[i]:
            toks.insert(len(toks) // 2, titles[other[i]])
        objects.append(DataObject(f"o{i}", "passage", titles[i], " ".join(toks) + "."))
    return objects


def random_embeddings():
    """Embeddings whose vector of a text is a random unit vector seeded by its hash."""
    from langchain_core.embeddings import Embeddings

    class RandomUnitVectors(Embeddings):
        model_id = f"random-unit-vectors-{DIM}"

        def encode(self, texts):
            out = np.empty((len(texts), DIM), dtype=np.float32)
            for i, t in enumerate(texts):
                out[i] = np.random.default_rng(zlib.crc32(t.encode())).standard_normal(DIM, dtype=np.float32)
            return out / np.linalg.norm(out, axis=1, keepdims=True)

        def embed_documents(self, texts):
            return self.encode(texts).tolist()

        def embed_query(self, text):
            return self.encode([text])[0].tolist()

    return RandomUnitVectors()


def _disk(folder: Path) -> dict[str, int]:
    parts: dict[str, int] = {}
    for f in folder.rglob("*"):
        if f.is_file():
            top = f.relative_to(folder).parts[0]
            parts[top] = parts.get(top, 0) + f.stat().st_size
    return parts


def phase_build(n: int, cache: Path) -> dict:
    from atomgraph.tools.arm_index import ArmIndex

    r0 = _rss()
    t = time.perf_counter()
    objects = synthetic_objects(n)
    gen_s = time.perf_counter() - t
    r1 = _rss()
    index = ArmIndex.build(objects, embeddings=random_embeddings(), cache_dir=cache, dense_search="ann", progress=True)
    r2 = _rss()
    s = index.build_summary
    sec = s["seconds"]
    comp = {
        "ngram_tables": sec.get("n-gram trie", 0) + sec.get("n-gram postings", 0),
        "bm25": sec.get("BM25 tokens", 0) + sec.get("BM25 index", 0),
        "ann": sec.get("ANN index (chunks)", 0),
        "title_mentions": sec.get("title mentions", 0),
        "content_key": sec.get("content key", 0),
        "chunks": sec.get("chunks", 0),
        "saving": sec.get("saving", 0),
    }
    where = index.cache_path
    disk = _disk(where)
    excl = sum(comp.values())
    return {
        "objects": n, "generate_s": round(gen_s, 1), "chunks": s["chunks"], "ngrams": s["ngrams"],
        "stage_seconds": sec,
        # the ANN index's own recall check: recall@10 on 50 of its vectors, the shortlist it searches with
        "ann_check": {"recall_at_10": s["ann_recall_at_10"], "shortlist": s["ann_shortlist"], "faster": s["ann_faster"]},
        "embedding_stand_in_s": sec.get("embeddings", 0),
        "build_s_excluding_embedding": round(excl, 1),
        "build_rate_objects_per_s": {k: round(n / v) if v else None for k, v in comp.items()}
        | {"all_but_embedding": round(n / excl) if excl else None},
        "rss_objects_mb": round((r1 - r0) / 2**20, 1),
        "rss_after_build_mb": round((r2 - r1) / 2**20, 1),
        "peak_rss_mb": round(_peak() / 2**20, 1),
        "disk_bytes": disk,
        "disk_bytes_per_object": {k: round(v / n, 1) for k, v in disk.items()},
        "cache": str(where),
    }


def _queries(objects, count: int, rng: np.random.Generator):
    """Questions made of 3 keywords (a word or two) of one object's text each."""
    out = []
    for j in rng.integers(0, len(objects), size=count):
        words = [w.strip(".") for w in objects[j].text.split()]
        kws = []
        for s in rng.integers(0, max(1, len(words) - 1), size=3):
            kws.append(" ".join(words[s : s + int(rng.integers(1, 3))]).lower())
        out.append((f"which {' '.join(kws)} ?", kws))
    return out


def _lat(ms: list[float]) -> dict:
    return {"median_ms": round(statistics.median(ms), 2), "p95_ms": round(percentile(ms, 95), 2), "n": len(ms)}


def phase_open(n: int, cache: Path, queries: int, full_queries: int, exact_queries: int) -> dict:
    from atomgraph.nodes.arm.information_alignment import Scores, _top, base_pool
    from atomgraph.graphs.arm import arm_retrieve
    from atomgraph.state.arm import ArmContext
    from atomgraph.tools.arm_index import ArmIndex, normalize_ngram

    objects = synthetic_objects(n)
    emb = random_embeddings()
    gc.collect()
    r1 = _rss()
    t = time.perf_counter()
    index = ArmIndex.build(objects, embeddings=emb, cache_dir=cache, dense_search="ann", progress=False)
    open_s = time.perf_counter() - t
    if not index.build_summary["loaded"]:
        raise SystemExit("the index was rebuilt instead of opened")
    r2 = _rss()
    ctx = ArmContext()
    qs = _queries(objects, queries, np.random.default_rng(SEED + 1))
    index.prime_queries([q for q, _ in qs] + [", ".join([normalize_ngram(k)]) for _, ks in qs for k in ks])

    split: dict[str, list[float]] = {"scores": [], "base_pool": []}

    def candidates(q, kws):
        groups = [[normalize_ngram(k)] for k in kws]
        t = time.perf_counter()
        scores = Scores.of(index, q, groups, ctx.keyword_bm25_weight)
        t1 = time.perf_counter()
        base_pool(index, scores, ctx)
        t2 = time.perf_counter()
        split["scores"].append(1000 * (t1 - t))
        split["base_pool"].append(1000 * (t2 - t1))
        return 1000 * (t2 - t)

    for q, kws in qs[:5]:  # warm-up
        candidates(q, kws)
    split = {"scores": [], "base_pool": []}
    ann_ms = [candidates(q, kws) for q, kws in qs]
    ann_split = {k: round(statistics.median(v), 2) for k, v in split.items()}
    r3 = _rss()
    recall = []
    index.dense_search = "exact"
    exact_ms = [candidates(q, kws) for q, kws in qs[:exact_queries]]
    for q, _ in qs[:exact_queries]:
        index.dense_search = "exact"
        e = set(_top(index.dense_scores(q), 10))
        index.dense_search = "ann"
        a = set(_top(index.dense_scores(q), 10))
        recall.append(len(a & e) / 10)
    index.dense_search = "ann"
    full_ms = []
    for q, kws in qs[:full_queries]:
        t = time.perf_counter()
        arm_retrieve(q, index, ctx, keywords=kws)
        full_ms.append(1000 * (time.perf_counter() - t))
    return {
        "open_s": round(open_s, 2),
        "rss_open_index_mb": round((r2 - r1) / 2**20, 1),
        "rss_open_bytes_per_object": round((r2 - r1) / n, 1),
        "rss_after_queries_mb": round((r3 - r1) / 2**20, 1),
        "candidate_search_ann": _lat(ann_ms),
        "candidate_search_ann_median_split_ms": ann_split,  # Scores.of (BM25 + dense per keyword) vs base_pool (top-n)
        "candidate_search_exact": _lat(exact_ms),
        "dense_top10_recall_ann_vs_exact": round(statistics.mean(recall), 4),
        "arm_retrieve_llm_free": _lat(full_ms),
        "ann_candidates": index.ann_candidates,
    }


def _child(phase: str, n: int, args, cache: Path) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".json", delete=False) as f:
        out = Path(f.name)
    cmd = [sys.executable, "-m", "benchmarks.bench_arm_scale", "--phase", phase, "--size", str(n), "--cache", str(cache),
           "--queries", str(args.queries), "--full-queries", str(args.full_queries),
           "--exact-queries", str(args.exact_queries), "--out", str(out)]
    threads = str(args.threads)
    env = os.environ | {"OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    t = time.perf_counter()
    rc = subprocess.call(cmd, env=env)
    try:
        if rc != 0:
            return {"error": f"{phase} process exited {rc}"}
        res = json.loads(out.read_text())
        res["wall_s"] = round(time.perf_counter() - t, 1)
        return res
    finally:
        out.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=200, help="questions for the candidate-search latency")
    ap.add_argument("--exact-queries", type=int, default=50, help="of those, timed with exact dense search too")
    ap.add_argument("--full-queries", type=int, default=20, help="of those, run through arm_retrieve")
    ap.add_argument("--max-gb", type=float, default=8.0, help="skip a size projected to need more memory")
    ap.add_argument("--threads", type=int, default=1,
                    help="BLAS/OpenMP threads of the measured processes (1: a shared machine's multithreaded "
                         "BLAS runs a 2,000x384 product 20x slower than one thread)")
    ap.add_argument("--out")
    ap.add_argument("--phase", choices=["build", "open"], help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.phase:
        cache = Path(args.cache)
        res = (phase_build(args.size, cache) if args.phase == "build"
               else phase_open(args.size, cache, args.queries, args.full_queries, args.exact_queries))
        Path(args.out).write_text(json.dumps(res, indent=2))
        return 0

    results: dict = {"benchmark": "arm_scale", "dim": DIM, "vocabulary": VOCAB, "cpus": os.cpu_count(), "threads": args.threads,
                     "load_average_at_start": os.getloadavg(), "sizes": {}}
    per_object = None
    for n in [int(x) for x in args.sizes.split(",")]:
        if per_object is not None and per_object * n > args.max_gb * 2**30:
            results["sizes"][str(n)] = {"skipped": f"projected peak {per_object * n / 2**30:.1f} GB > --max-gb {args.max_gb}"}
            print(f"{n:>9,} objects: skipped ({results['sizes'][str(n)]['skipped']})", flush=True)
            continue
        cache = Path(tempfile.mkdtemp(prefix=f"arm-scale-{n}-"))
        try:
            print(f"{n:>9,} objects: building ...", flush=True)
            build = _child("build", n, args, cache)
            opened = _child("open", n, args, cache) if "error" not in build else {}
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        results["sizes"][str(n)] = {"build": build, "open": opened}
        if "error" in build:
            print(f"{n:>9,} objects: {build['error']}", flush=True)
            continue
        if args.out:  # after every size: a run stopped later keeps what it measured
            Path(args.out).write_text(json.dumps(results, indent=2))
        per_object = build["peak_rss_mb"] * 2**20 / n
        rates = build["build_rate_objects_per_s"]
        print(f"{n:>9,} objects: build (no embedding) {build['build_s_excluding_embedding']} s; objects/s: "
              + ", ".join(f"{k} {v:,}" for k, v in rates.items() if v) + f"; peak RSS {build['peak_rss_mb']:,} MB", flush=True)
        if opened and "error" not in opened:
            c, e, f = opened["candidate_search_ann"], opened["candidate_search_exact"], opened["arm_retrieve_llm_free"]
            print(f"{'':>9s}          open {opened['open_s']} s, +{opened['rss_open_index_mb']:,} MB "
                  f"({opened['rss_open_bytes_per_object']:,} B/object); candidate search ANN median {c['median_ms']} ms "
                  f"p95 {c['p95_ms']} ms, exact median {e['median_ms']} ms; ANN top-10 recall "
                  f"{opened['dense_top10_recall_ann_vs_exact']}; arm_retrieve median {f['median_ms']} ms p95 {f['p95_ms']} ms",
                  flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
