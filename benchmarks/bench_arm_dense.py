"""ARM's dense search at 10^4–10^6 chunk vectors: exact against ANN, on random and real embeddings.

    python -m benchmarks.bench_arm_dense [--sizes 10000,20000,50000,100000,1000000] [--data random,real] [--out F]

Vectors only (no n-grams, no BM25: ``bench_arm_scale`` measures the whole index), 384 float32
dimensions, unit length; a question is ``--batch`` dense queries (the question and one per keyword,
as :meth:`Scores.of` asks them). Two collections per size:

- ``random``: random unit vectors, queried by other random unit vectors — no structure at all, the
  hardest case for a graph or a clustering;
- ``real``: MiniLM (the project's embedding model) vectors of the shared corpora's passages
  (HotpotQA, MuSiQue, 2WikiMultiHopQA: 9,003 passages, ``title: text``), queried by the shared
  question sets' 3,024 questions. Beyond the real vectors a collection is augmented with
  ``normalise(v_i + 0.5 (v_j - v_k))`` for random real vectors ``i, j, k``: a real vector moved
  along a difference of two others, so the extra vectors stay in the span and spread of the real
  ones (cosine to ``v_i`` about 0.8) rather than adding isotropic noise.

Per size and collection (each in its own process, ``--threads`` BLAS/OpenMP threads, default 1):

- exact search, per query: one matrix-vector product per query and its top-10
  (``matvec``); the question's queries as one matrix product (``batched``: ``--batch`` × d @ d × n,
  then top-10 per row, time ÷ ``--batch``); faiss ``IndexFlatIP`` over the same batch;
- each ANN candidate (``--candidates``): build seconds (once; the file is kept in ``--cache`` and
  reused), its memory (the bytes faiss serialises, which is what it holds) per vector, and for each
  search setting recall@10 against exact search and the latency per query (the question's batch in
  one call); ``ratio``: ANN latency ÷ exact batched latency, below 1 where ANN is faster. ARM asks
  for ``ann_candidates`` (256) chunks, so it searches a shortlist (pqfs) or efSearch (HNSW) of 256 at least;
  an inverted file (``ivfpqfs``) also records, per nprobe, the recall@10 a check on 50 of the
  collection's own vectors sees (``own_recall_at_10``);
- for ``--memory`` (the index's own kind, ``pqfs192`` for 384 dimensions): :meth:`AnnIndex.check_recall`,
  the recall@10 the index checks on the collection's own vectors when it builds (``auto`` stays exact under 0.97),
  and the resident memory after a question's ANN queries, per vector, of the plain faiss index and
  of :class:`ArmIndex` over the same vectors and file, reopened (two fresh processes).

The crossover is the smallest size where an ANN setting with recall@10 ≥ 0.95 on both collections
is faster than exact batched search; :data:`atomgraph.tools.arm_index.EXACT_LIMIT` comes from it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DIM = 384
SEED = 49
K = 10
DATA = Path(os.environ.get("ATOMGRAPH_SHARED_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")))


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "atomgraph" / "bench-arm-dense"


# --- collections -----------------------------------------------------------------------------------

def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def real_texts() -> tuple[list[str], list[str]]:
    """The shared corpora's passages and sentences, and the shared questions (deduplicated, in order)."""
    passages: list[tuple[str, str]] = []
    for name in ("hotpotqa", "musique"):
        for line in (DATA / "retrieval" / name / "objects.jsonl").read_text().splitlines():
            o = json.loads(line)
            passages.append((o["title"], o["text"]))
    for o in json.loads((DATA / "hipporag" / "2wikimultihopqa_corpus.json").read_text()):
        passages.append((o["title"], o["text"]))
    texts = [f"{t}: {x}" for t, x in passages]
    questions: list[str] = []
    for name in ("hotpotqa", "musique", "spider"):
        questions += [json.loads(line)["question"] for line in (DATA / "retrieval" / name / "questions.jsonl").read_text().splitlines()]
    for f in sorted((DATA / "atomr" / "questions" / "single_source").rglob("*.jsonl")):
        questions += [json.loads(line)["question"] for line in f.read_text().splitlines() if line.strip()]
    return list(dict.fromkeys(texts)), list(dict.fromkeys(questions))


def real_vectors(cache: Path) -> tuple[np.ndarray, np.ndarray]:
    """MiniLM vectors of :func:`real_texts` (embedded once, kept in ``cache``)."""
    path = cache / "real-minilm.npz"
    if path.is_file():
        z = np.load(path)
        return z["texts"], z["questions"]
    from atomgraph.embeddings import embedding_model

    texts, questions = real_texts()
    emb = embedding_model()
    t = time.perf_counter()
    vt, vq = [], []
    for s in range(0, len(texts), 4096):
        vt.append(np.asarray(emb.encode(texts[s : s + 4096]), dtype=np.float32))
        print(f"embedded {s + len(vt[-1]):,}/{len(texts):,} texts ({time.perf_counter() - t:.0f} s)", flush=True)
    vq = np.asarray(emb.encode(questions), dtype=np.float32)
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, texts=_unit(np.concatenate(vt)), questions=_unit(vq))
    return real_vectors(cache)


def collection(kind: str, n: int, cache: Path) -> tuple[np.ndarray, np.ndarray]:
    """``n`` unit vectors of collection ``kind`` (memory-mapped from ``cache``) and its queries."""
    path = cache / f"{kind}-{n}.npy"
    rng = np.random.default_rng(SEED)
    if kind == "random":
        queries = _unit(rng.standard_normal((2000, DIM), dtype=np.float32))
    else:
        base, queries = real_vectors(cache)
        rng.shuffle(base)
    if not path.is_file():
        out = np.lib.format.open_memmap(path.with_suffix(".tmp.npy"), "w+", np.float32, (n, DIM))
        step = 100_000
        for s in range(0, n, step):
            m = min(step, n - s)
            if kind == "random":
                out[s : s + m] = _unit(rng.standard_normal((m, DIM), dtype=np.float32))
            else:
                real = max(0, min(m, len(base) - s))
                out[s : s + real] = base[s : s + real]
                i, j, k = (rng.integers(0, len(base), size=m - real) for _ in range(3))
                out[s + real : s + m] = _unit(base[i] + 0.5 * (base[j] - base[k]))
        out.flush()
        del out
        os.replace(path.with_suffix(".tmp.npy"), path)
    return np.load(path, mmap_mode="r"), queries


# --- exact search ----------------------------------------------------------------------------------

def top_rows(sims: np.ndarray, k: int = K) -> np.ndarray:
    """Per row of ``sims``, the columns of the ``k`` largest, best first."""
    part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(sims, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


def exact_top(vectors: np.ndarray, queries: np.ndarray, batch: int = 64) -> np.ndarray:
    return np.concatenate([top_rows(queries[s : s + batch] @ vectors.T) for s in range(0, len(queries), batch)])


def _per_query_ms(fn, questions: list[np.ndarray]) -> dict:
    """A question's time ÷ its queries, median over the questions (after one for warm-up): ``ms``
    the process's CPU time (one thread: the search's cost, without a shared machine's waits),
    ``wall_ms`` the elapsed time."""
    fn(questions[0])
    cpu, wall = [], []
    for q in questions[1:]:
        t, c = time.perf_counter(), time.process_time()
        fn(q)
        cpu.append(1000 * (time.process_time() - c) / len(q))
        wall.append(1000 * (time.perf_counter() - t) / len(q))
    return {"ms": round(statistics.median(cpu), 3), "wall_ms": round(statistics.median(wall), 3)}


def measure_exact(vectors: np.ndarray, questions: list[np.ndarray]) -> dict:
    import faiss

    flat = faiss.IndexFlatIP(DIM)
    flat.add(vectors)

    def matvec(q):
        for row in q:
            s = vectors @ row
            np.argpartition(-s, K - 1)[:K]

    return {"matvec": _per_query_ms(matvec, questions),
            "batched": _per_query_ms(lambda q: top_rows(q @ vectors.T), questions),
            "faiss_flat": _per_query_ms(lambda q: flat.search(q, K), questions)}


# --- ANN candidates --------------------------------------------------------------------------------

def _build(spec: str, vectors: np.ndarray):
    """An index from its spec: ``hnsw<M>-<efConstruction>`` (HNSW, inner product), ``ivf<nlist>``,
    ``pqfs<M>`` (a product quantiser of ``M`` 4-bit codes a vector, scanned with SIMD lookup tables,
    its shortlist re-ranked by exact inner products: faiss ``IndexPQFastScan`` in ``IndexRefineFlat``),
    or ``ivfpqfs<nlist>`` (the same codes, d/2 a vector, in ``nlist`` inverted lists of which a search
    scans ``nprobe``: ``IndexIVFPQFastScan`` in ``IndexRefineFlat``, re-ranking ARM's 256)."""
    import faiss

    n = len(vectors)
    if spec.startswith("hnsw"):
        m, efc = (int(x) for x in spec[4:].split("-"))
        index = faiss.IndexHNSWFlat(DIM, m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = efc
    elif spec.startswith(("pqfs", "ivfpqfs")):
        if spec.startswith("pqfs"):
            base = faiss.IndexPQFastScan(DIM, int(spec[4:]), 4, faiss.METRIC_INNER_PRODUCT)
        else:
            base = faiss.IndexIVFPQFastScan(faiss.IndexFlatIP(DIM), DIM, int(spec[7:]), DIM // 2, 4,
                                            faiss.METRIC_INNER_PRODUCT)
        index = faiss.IndexRefineFlat(base)
        sample = np.random.default_rng(SEED).choice(n, size=min(n, 65_536), replace=False)
        index.train(np.ascontiguousarray(vectors[np.sort(sample)]))
    elif spec.startswith("ivf"):
        nlist = int(spec[3:])
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(DIM), DIM, nlist, faiss.METRIC_INNER_PRODUCT)
        sample = np.random.default_rng(SEED).choice(n, size=min(n, 40 * nlist), replace=False)
        index.train(np.ascontiguousarray(vectors[np.sort(sample)]))
    else:
        raise SystemExit(f"unknown candidate {spec!r}")
    for s in range(0, n, 50_000):
        index.add(np.ascontiguousarray(vectors[s : s + 50_000]))
    return index


def _settings(spec: str) -> list[int]:
    """nprobe (IVF), the shortlist re-ranked (pqfs: at least the 256 chunks ARM asks for), or efSearch (HNSW)."""
    if spec.startswith("ivfpqfs"):
        nlist = int(spec[7:])
        return sorted({max(1, nlist // f) for f in (64, 32, 16, 8, 4, 2, 1)})
    if spec.startswith("ivf"):
        return [s for s in (16, 32, 64, 128, 256) if s <= int(spec[3:])]
    if spec.startswith("pqfs"):
        return [256, 512, 1024, 2048, 4096]
    return [64, 128, 256, 512, 1024, 2048, 4096]


def _params(spec: str, setting: int):
    import faiss

    from atomgraph.tools.arm_index import ANN_SHORTLIST

    if spec.startswith("ivfpqfs"):
        params = faiss.IndexRefineSearchParameters()
        params.k_factor = ANN_SHORTLIST / K
        params.base_index_params = params.ivf = faiss.SearchParametersIVF(nprobe=setting)  # kept alive with params
        return params
    if spec.startswith("ivf"):
        return faiss.SearchParametersIVF(nprobe=setting)
    if spec.startswith("pqfs"):
        params = faiss.IndexRefineSearchParameters()
        params.k_factor = setting / K
        return params
    return faiss.SearchParametersHNSW(efSearch=setting)


def measure_ann(spec: str, vectors: np.ndarray, queries: np.ndarray, truth: np.ndarray, questions: list[np.ndarray],
                exact_ms: float, where: Path) -> dict:
    import faiss

    from atomgraph.tools.arm_index import own_neighbours, own_recall

    built_s = None
    if where.is_file():
        index = faiss.read_index(str(where))
    else:
        t = time.perf_counter()
        index = _build(spec, vectors)
        built_s = time.perf_counter() - t
        faiss.write_index(index, str(where.with_suffix(".tmp")))
        os.replace(where.with_suffix(".tmp"), where)
        (where.with_suffix(".json")).write_text(json.dumps({"build_s": built_s}))
    built_s = json.loads(where.with_suffix(".json").read_text())["build_s"]
    out = {"build_s": round(built_s, 1), "bytes_per_vector": round(where.stat().st_size / len(vectors), 1), "search": {}}
    own = own_neighbours(vectors) if spec.startswith("ivfpqfs") else None
    for ef in _settings(spec):
        params = _params(spec, ef)
        _, got = index.search(queries, K, params=params)
        recall = float(np.mean([len(set(a) & set(b)) / K for a, b in zip(got.tolist(), truth.tolist())]))
        ms = _per_query_ms(lambda q: index.search(q, K, params=params), questions)
        out["search"][str(ef)] = {"recall_at_10": round(recall, 4), **ms, "ratio": round(ms["ms"] / exact_ms, 3)}
        if own is not None:  # what the index's recall check on the collection's own vectors would see here
            rows, q, near = own
            _, got = index.search(q, near.shape[1] + 1, params=params)
            out["search"][str(ef)]["own_recall_at_10"] = own_recall(got, rows, near)
    return out


def _rss() -> dict[str, int]:
    """This process's resident memory now, in bytes: anonymous (its own) and file-backed (mapped files)."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {k: int(fields[k].split()[0]) * 1024 for k in ("RssAnon", "RssFile")}


def measure_memory(how: str, kind: str, n: int, spec: str, cache: Path, batch: int) -> dict:
    """Resident memory a dense search holds after ``batch`` ANN queries: ``faiss`` (the candidate's
    file read by faiss, the plain index) or ``arm`` (:class:`ArmIndex` over the same vectors: their
    numpy file memory-mapped, the same faiss file as its ANN index, queries through
    :meth:`ArmIndex.dense_scores_many`)."""
    import tempfile

    import faiss

    from atomgraph.tools.arm_index import ANN_SHORTLIST, ArmIndex

    path = cache / f"{kind}-{n}-{spec}.faiss"
    queries = collection(kind, n, cache)[1][:batch]
    objects = [None] * n  # the objects an ArmIndex scores (their list: 8 bytes each, outside the measure)
    before = _rss()
    if how == "faiss":
        index = faiss.read_index(str(path))
        index.search(queries, 256, params=_params(spec, ANN_SHORTLIST))
    else:
        folder = Path(tempfile.mkdtemp(prefix="arm-dense-"))
        (folder / "ann_chunks.faiss").symlink_to(path)
        (folder / "ann_chunks.json").symlink_to(path.with_suffix(".check.json"))  # reopened: the check kept
        index = ArmIndex(objects, None, None, None, None, np.arange(n, dtype=np.int32),
                         np.load(cache / f"{kind}-{n}.npy", mmap_mode="r"), [], None, "vectors", dense_search="ann")
        index.cache_path = folder
        index.dense_scores_many(list(queries))
    after = _rss()
    if how != "faiss":
        shutil.rmtree(folder)
    return {k: round((after[k] - before[k]) / n, 1) for k in after}


def _candidates(specs: str, n: int) -> list[str]:
    """The candidates of ``--candidates`` measured at size ``n`` (``spec@N1+N2``: only at those sizes)."""
    out = []
    for spec in specs.split(","):
        name, _, at = spec.partition("@")
        if not at or n in {int(x) for x in at.split("+")}:
            out.append(name)
    return out


def run_size(kind: str, n: int, args, cache: Path) -> dict:
    t = time.perf_counter()
    vectors, queries = collection(kind, n, cache)
    made_s = time.perf_counter() - t
    vectors = np.ascontiguousarray(vectors)  # in RAM: searches time the search, not the disk
    queries = queries[: args.queries]
    rng = np.random.default_rng(SEED + 1)
    questions = [queries[rng.choice(len(queries), size=args.batch, replace=False)] for _ in range(args.questions + 1)]
    res: dict = {"collection_s": round(made_s, 1), "exact": measure_exact(vectors, questions)}
    truth = exact_top(vectors, queries)
    exact_ms = res["exact"]["batched"]["ms"]
    res["ann"] = {}
    for spec in _candidates(args.candidates, n):
        where = cache / f"{kind}-{n}-{spec}.faiss"
        res["ann"][spec] = measure_ann(spec, vectors, queries, truth, questions, exact_ms, where)
        if spec == args.memory:  # the index's own recall check, as ArmIndex runs it when it builds the graph
            import faiss

            from atomgraph.tools.arm_index import AnnIndex

            ann = AnnIndex(faiss.read_index(str(where)))
            ann.check_recall(vectors)
            check = {"recall_at_10": ann.recall, "shortlist": ann.shortlist, "faster": ann.faster}
            res["ann"][spec]["recall_check"] = check | {
                "questions_recall_at_10": res["ann"][spec]["search"].get(str(ann.shortlist), {}).get("recall_at_10")}
            where.with_suffix(".check.json").write_text(json.dumps(check))
        print(f"  {kind} {n:,} {spec}: {json.dumps(res['ann'][spec])}", flush=True)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,20000,50000,100000,1000000")
    ap.add_argument("--data", default="random,real")
    ap.add_argument("--candidates", default="pqfs192,pqfs96@100000+1000000,hnsw32-40@10000+20000+50000+100000,ivfpqfs1024@1000000",
                    help="pqfs<M>, ivfpqfs<nlist>, hnsw<M>-<efConstruction> or ivf<nlist>, comma-separated; spec@N1+N2: only at those sizes")
    ap.add_argument("--queries", type=int, default=300, help="queries for recall@10")
    ap.add_argument("--questions", type=int, default=40, help="timed questions of --batch queries each")
    ap.add_argument("--batch", type=int, default=5, help="dense queries per question (the question and its keywords)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cache", default=str(default_cache()))
    ap.add_argument("--out")
    ap.add_argument("--memory", default="default",
                    help="the candidate whose memory is measured plain and under ArmIndex ('default': the index's "
                         "own, pqfs<384 / ANN_CODE_DIMS>; '' to skip)")
    ap.add_argument("--resume", action="store_true", help="keep the sizes --out already holds; measure the rest")
    ap.add_argument("--table", metavar="RESULTS", help="print the docs' tables from a results file and stop")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--memory-of", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.memory == "default":
        from atomgraph.tools.arm_index import ANN_CODE_DIMS

        args.memory = f"pqfs{DIM // ANN_CODE_DIMS}"

    if args.table:
        print(table(json.loads(Path(args.table).read_text())))
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    if args.one:
        kind, n = args.one.split(":")
        print(json.dumps(run_size(kind, int(n), args, cache)), flush=True)
        return 0
    if args.memory_of:
        how, kind, n = args.memory_of.split(":")
        print(json.dumps(measure_memory(how, kind, int(n), args.memory, cache, args.batch)), flush=True)
        return 0
    if "real" in args.data:
        real_vectors(cache)  # once, before the measured processes
    results: dict = {"benchmark": "arm_dense", "dim": DIM, "cpus": os.cpu_count(), "threads": args.threads,
                     "batch": args.batch, "load_average_at_start": os.getloadavg(), "sizes": {}}
    if args.resume and args.out and Path(args.out).is_file():  # a run stopped (or split) keeps what it measured
        results = json.loads(Path(args.out).read_text())
    threads = str(args.threads)
    env = os.environ | {"OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    def child(*extra: str) -> dict:
        cmd = [sys.executable, "-m", "benchmarks.bench_arm_dense", "--cache", str(cache), "--candidates", args.candidates,
               "--queries", str(args.queries), "--questions", str(args.questions), "--batch", str(args.batch),
               "--memory", args.memory, *extra]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        sys.stderr.write(p.stderr)
        lines = p.stdout.strip().splitlines()
        if lines[:-1]:
            print("\n".join(lines[:-1]), flush=True)
        return json.loads(lines[-1]) if p.returncode == 0 and lines else {"error": p.returncode}

    for n in [int(x) for x in args.sizes.split(",")]:
        for kind in args.data.split(","):
            if "exact" in results["sizes"].get(str(n), {}).get(kind, {}):
                continue  # --resume: measured before
            res = results["sizes"].setdefault(str(n), {})[kind] = child("--one", f"{kind}:{n}")
            if args.memory and args.memory in _candidates(args.candidates, n):
                mem = {how: child("--memory-of", f"{how}:{kind}:{n}") for how in ("faiss", "arm")}
                total = {how: sum(v.values()) for how, v in mem.items() if "error" not in v}
                res["memory_bytes_per_vector"] = mem | (
                    {"ratio_arm_to_faiss": round(total["arm"] / total["faiss"], 3)} if len(total) == 2 else {})
            print(f"{kind} {n:,}: {json.dumps(summary(res))}", flush=True)
            if args.out:
                Path(args.out).write_text(json.dumps(results, indent=2))
    return 0


def _num(n: int) -> str:
    e = len(str(n)) - 1
    return f"10^{e}" if n == 10**e else f"{n // 10**e}·10^{e}"


def arm_uses(check: dict) -> bool:  # what dense_search=auto uses after the check
    from atomgraph.tools.arm_index import ANN_MIN_RECALL

    return check["recall_at_10"] >= ANN_MIN_RECALL and check.get("faster", True)


def _setting_name(spec: str) -> str:
    return "nprobe" if spec.startswith("ivf") else "shortlist" if spec.startswith("pqfs") else "efSearch"


def table(results: dict) -> str:
    """The docs' tables (markdown) from a results file: exact search per query, then per size,
    collection and candidate the build, memory and the fastest setting with recall@10 ≥ 0.95 (CPU ms)."""
    sizes = sorted(results["sizes"], key=int)
    lines = ["| vectors | collection | exact: matvec / batched / faiss flat | ANN: candidate, build, bytes per vector | "
             "fastest setting with recall@10 ≥ 0.95: recall, CPU ms, ÷ exact batched | recall@10 at setting 256; the "
             "index's recall check (ivfpqfs: the nprobe a check on the collection's own vectors picks) |",
             "|---|---|---|---|---|---|"]
    for n in sizes:
        for kind, res in results["sizes"][n].items():
            if "exact" not in res:
                continue
            e = res["exact"]
            exact = " / ".join(f"{e[k]['ms']:.3g}" for k in ("matvec", "batched", "faiss_flat")) + " ms"
            for spec, a in res["ann"].items():
                ok = [(ef, v) for ef, v in a["search"].items() if v["recall_at_10"] >= 0.95]
                best = min(ok, key=lambda x: x[1]["ms"]) if ok else None
                fast = (f"{_setting_name(spec)} {best[0]}: {best[1]['recall_at_10']:.3f}, "
                        f"{best[1]['ms']:.3g} ms, {best[1]['ratio']:.2f}" if best else
                        f"none (best {max(v['recall_at_10'] for v in a['search'].values()):.3f})")
                at256 = a["search"].get("256", {}).get("recall_at_10")
                c = a.get("recall_check")
                at = a["search"].get(str(c["shortlist"]), {}) if c else {}
                check = (f"; check: shortlist {c['shortlist']}, {c['recall_at_10']:.2f} (questions "
                         f"{c['questions_recall_at_10']:.3f}, {at.get('ms', float('nan')):.3g} ms): "
                         f"**{'ANN' if arm_uses(c) else 'exact'}**" if c else "")
                own = [(ef, v) for ef, v in a["search"].items() if v.get("own_recall_at_10", 0) >= 0.97]
                if own:  # an inverted file: the setting a check on the collection's own vectors would pick
                    ef, v = min(own, key=lambda x: int(x[0]))
                    check = (f"; own vectors reach 0.97 at nprobe {ef} ({v['own_recall_at_10']:.3f}): "
                             f"questions {v['recall_at_10']:.3f}")
                lines.append(f"| {_num(int(n))} | {kind} | {exact} | {spec}, {a['build_s']:,.0f} s, {a['bytes_per_vector']:,.0f} | "
                             f"{fast} | {'' if at256 is None else f'{at256:.3f}'}{check} |")
                exact = "″"
    mem = [(n, kind, r["memory_bytes_per_vector"]) for n in sizes for kind, r in results["sizes"][n].items()
           if "memory_bytes_per_vector" in r]
    if mem:
        lines += ["", "| vectors | collection | resident bytes per vector: plain faiss (anon + file) | ArmIndex (anon + file) "
                  "| ArmIndex ÷ faiss |", "|---|---|---|---|---|"]
        for n, kind, m in mem:
            f, a = m["faiss"], m["arm"]
            lines.append(f"| {_num(int(n))} | {kind} | {f['RssAnon']:,.0f} + {f['RssFile']:,.0f} | "
                         f"{a['RssAnon']:,.0f} + {a['RssFile']:,.0f} | {m.get('ratio_arm_to_faiss', '')} |")
    return "\n".join(lines)


def summary(res: dict) -> dict:
    """Exact batched latency, and per candidate the fastest setting with recall@10 ≥ 0.95."""
    if "exact" not in res:
        return res
    out: dict = {f"exact_{k}_ms": v["ms"] for k, v in res["exact"].items()}
    for spec, a in res["ann"].items():
        ok = [(ef, v) for ef, v in a["search"].items() if v["recall_at_10"] >= 0.95]
        best = min(ok, key=lambda x: x[1]["ms"]) if ok else None
        out[spec] = {"setting": best[0], **best[1]} if best else "recall@10 < 0.95"
    if "memory_bytes_per_vector" in res:
        out["memory_ratio_arm_to_faiss"] = res["memory_bytes_per_vector"].get("ratio_arm_to_faiss")
    return out


if __name__ == "__main__":
    sys.exit(main())
