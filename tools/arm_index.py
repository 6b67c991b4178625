"""The ARM index over a set of objects (§3.1 and Appendix A of the ARM paper).

Three views of the same objects, built once and cached on disk:

- **corpus n-grams** (n = 1..3 over normalised lower-case tokens, never crossing a field
  boundary such as title/text or one column name and the next) in a ``marisa_trie.Trie``:
  n-gram → key id, with postings (key id → object indices) in two CSR numpy arrays. The trie
  answers exact membership (the alignment invariant) and prefix lookups (shortlists);
- **BM25** over each object's tokens, with ``bm25s`` (Lucene variant);
- **embeddings** of each object's serialised chunks with the project's embedding model
  (:func:`atomgraph.embeddings.embedding_model`), L2-normalised in a numpy matrix; an
  object's dense score is its best chunk's cosine similarity (Appendix D.2). Dense search
  is exact (one matrix product over every chunk for all of a question's queries) or, for
  large collections, asks an ANN index (a product-quantised scan of the same unit vectors
  whose shortlist is re-ranked exactly, :class:`AnnIndex`) for the best ``ann_candidates``
  chunks, a :class:`SparseScores` per query (``dense_search``: ``auto`` = exact up to
  :data:`EXACT_LIMIT` chunks, ANN above where the index's recall check passes; ``exact``; ``ann``).

Tables are indexed by title, description, column names (``snake_case``/``camelCase``
split into words) and cell values when rows exist. The index also records *title
mentions*: which objects mention another passage's title (the entity links of §3.2.2).

The cache directory holds one sub-folder per content key: a hash of the objects, the
embedding model id and the index version, so a changed file or model never reads stale
vectors. Each part is persisted there (trie, postings, BM25, vectors, mentions, the ANN
index once built), so reopening an index rebuilds nothing; a damaged part is rebuilt with a
warning.

Objects longer than ``max_object_chars`` characters (default :data:`MAX_OBJECT_CHARS`,
1,000,000: title, text, column names and cells together) are *refused* — left out of the
index with a warning and counted in the build summary — since one 50 MB object alone means
tens of thousands of chunks to embed; split such an object into several, or raise the
limit. Builds report progress (the ``atomgraph.progress`` logger) once they have run a few
seconds (quiet for small collections) and keep a summary (:attr:`ArmIndex.build_summary`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
import unicodedata
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence, TextIO

import numpy as np

from atomgraph.environment import env_value
from atomgraph.errors import AtomgraphError
from atomgraph.extras import require
from atomgraph.files import atomic_dir
from atomgraph.progress import say
from atomgraph.tools.objects import Chunk, DataObject, chunk_object, split_identifier

log = logging.getLogger(__name__)

INDEX_VERSION = 1
MAX_N = 3
DENSE_SEARCH = ("auto", "exact", "ann")
# Measured by benchmarks/bench_arm_dense.py (384-dimensional vectors, MiniLM and random, CPU time per query, one
# thread): the ANN index below costs 0.2x exact search at 10^4 chunks and 0.04x at 10^6, at recall@10 0.97-1.00;
# exact search loses no neighbour and costs under 0.6 ms a query up to 2*10^4 chunks, so it stays up to here.
EXACT_LIMIT = 20_000  # chunks: ``dense_search="auto"`` is exact up to this many, ANN above
ANN_CANDIDATES = 256  # chunks the ANN returns per dense query; the rest count as not retrieved
ANN_CODE_DIMS = 2  # dimensions per 4-bit code of the product quantiser (d/2 codes: 96 bytes a 384-d vector;
#                    4 dimensions a code loses recall on random vectors: bench_arm_dense, pqfs96)
ANN_SHORTLIST = 256  # vectors re-ranked exactly per query, at least (raised to the number asked for); up to 16x
#                      where the recall check needs it
ANN_TRAIN_MAX = 65_536  # vectors the quantiser learns its codes from (a random sample)
ANN_TRAIN_MIN = 624  # faiss's k-means wants 39 vectors per centroid (16 a code): a smaller collection is repeated
# The recall check's bar on the collection's own vectors (they can overstate questions' recall@10 by a few
# hundredths), so 0.97 keeps questions at 0.95 or more. ``auto`` searches exactly where no shortlist reaches it, or
# where the ANN is slower there.
ANN_MIN_RECALL = 0.97
ANN_CHECK_QUERIES = 50  # of the collection's own vectors, for that check
MAX_OBJECT_CHARS = 1_000_000
EMBED_BATCH = 1024  # chunks per embedding call once a build has more (progress between calls)
_ANN_FILES = {"chunks": "ann_chunks.faiss", "objects": "ann_objects.faiss"}
_TOKEN = re.compile(r"[^\W_]+")
_PAREN = re.compile(r"\s*\([^)]*\)\s*$")


# --- tokens and n-grams ----------------------------------------------------------------------

def raw_tokens(text: str) -> list[str]:
    """Word tokens of ``text`` (Unicode NFKC, case kept; underscores split words)."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text or ""))


def tokens(text: str) -> list[str]:
    """Normalised tokens: NFKC, case-folded, words and numbers (``_`` and punctuation split)."""
    return [t.casefold() for t in raw_tokens(text)]


def normalize_ngram(text: str) -> str:
    """The canonical n-gram string of ``text``: its normalised tokens joined by one space."""
    return " ".join(tokens(text))


def ngrams(toks: Sequence[str], max_n: int = MAX_N) -> Iterable[str]:
    """All n-grams (1 ≤ n ≤ ``max_n``) of one token sequence, as space-joined strings."""
    for n in range(1, max_n + 1):
        for i in range(len(toks) - n + 1):
            yield " ".join(toks[i : i + n])


def object_fields(obj: DataObject) -> list[str]:
    """The separately tokenised fields of an object: n-grams never cross two of them."""
    if not obj.is_table:
        return [obj.title, obj.text]
    fields = [split_identifier(obj.title), obj.text]
    fields.extend(split_identifier(c) for c in obj.columns)
    for row in obj.rows:
        fields.extend(row)
    return fields


def object_tokens(obj: DataObject) -> list[str]:
    """All normalised tokens of an object (its BM25 document)."""
    return [t for f in object_fields(obj) for t in tokens(f)]


def title_key(title: str) -> str:
    """A title as a mention key: a trailing "(disambiguation)" dropped, normalised tokens."""
    return normalize_ngram(_PAREN.sub("", title))


def title_mentions(objects: Sequence[DataObject], stopwords: frozenset[str], max_len: int = 8) -> list[list[int]]:
    """For each object, the other passages whose title it mentions (§3.2.2 entity links).

    A mention is a token span equal to the passage's title key, starting with a capital
    letter or a digit in the original text (so "hell" the word does not link to "Hell");
    titles made only of stopwords, or longer than ``max_len`` tokens, are not linked.
    """
    by_title: dict[str, list[int]] = {}
    for j, o in enumerate(objects):
        if o.is_table:
            continue
        key = title_key(o.title)
        toks = key.split()
        if not toks or len(toks) > max_len or all(t in stopwords for t in toks):
            continue
        by_title.setdefault(key, []).append(j)
    if not by_title:
        return [[] for _ in objects]
    longest = max(len(k.split()) for k in by_title)
    out: list[list[int]] = []
    for i, o in enumerate(objects):
        found: set[int] = set()
        texts = [o.text] if not o.is_table else [c for r in o.rows for c in r]
        for text in texts:
            raw = raw_tokens(text)
            low = [t.casefold() for t in raw]
            for p in range(len(raw)):
                if not (raw[p][:1].isupper() or raw[p][:1].isdigit()):
                    continue
                for L in range(min(longest, len(raw) - p), 0, -1):
                    hit = by_title.get(" ".join(low[p : p + L]))
                    if hit:
                        found.update(j for j in hit if j != i)
                        break
        out.append(sorted(found))
    return out


# --- build progress, size limit --------------------------------------------------------------

def object_chars(obj: DataObject) -> int:
    """An object's size for ``max_object_chars``: characters of its title, text, column names
    and cells."""
    return (len(obj.title) + len(obj.text) + sum(len(c) for c in obj.columns)
            + sum(len(c) for r in obj.rows for c in r))


class BuildProgress:
    """Progress lines of one index build, to ``stream`` (default: the ``atomgraph.progress``
    logger at INFO, which the command line shows on stderr; :func:`atomgraph.progress.say`).

    ``mode`` None (auto): silent until the build has run ``quiet_s`` seconds, then a line per
    stage and at most one every ``every_s`` seconds within a stage — small builds print
    nothing; True: every stage; False: nothing. Stage times go to :attr:`seconds`."""

    def __init__(self, mode: bool | None = None, stream: TextIO | None = None, *, quiet_s: float = 5.0,
                 every_s: float = 10.0, prefix: str = "ARM index"):
        self.mode, self.stream, self.quiet_s, self.every_s, self.prefix = mode, stream, quiet_s, every_s, prefix
        self.t0 = time.perf_counter()
        self.seconds: dict[str, float] = {}
        self.lines = 0
        self._stage: str | None = None
        self._stage_t = self._last = self.t0
        self._total: int | None = None
        self._unit = ""

    @property
    def active(self) -> bool:
        if self.mode is False:
            return False
        return self.mode is True or self.lines > 0 or time.perf_counter() - self.t0 >= self.quiet_s

    def say(self, text: str) -> None:
        if self.mode is False:
            return
        say(f"{self.prefix}: {text}", self.stream)
        self.lines += 1
        self._last = time.perf_counter()

    def stage(self, name: str, total: int | None = None, unit: str = "objects") -> None:
        """Start stage ``name`` (ending the one before)."""
        self.end()
        self._stage, self._total, self._unit = name, total, unit
        self._stage_t = time.perf_counter()
        if self.active:
            self.say(f"{name}" + (f" ({total:,} {unit})" if total is not None else "") + " ...")

    def tick(self, done: int) -> None:
        """``done`` of the stage's total so far (prints at most every ``every_s`` seconds)."""
        now = time.perf_counter()
        if self.mode is False or now - self._last < self.every_s or not self.active:
            return
        from atomgraph.progress import duration

        of = f"/{self._total:,}" if self._total else ""
        pct = f" {100 * done / self._total:.0f}%" if self._total else ""
        took = now - self._stage_t
        rate = done / took if took > 0 else 0.0
        eta = f", ETA {duration((self._total - done) / rate)}" if self._total and rate > 0 and done < self._total else ""
        self.say(f"{self._stage} {done:,}{of} {self._unit}{pct}, {rate:.3g} {self._unit}/s{eta} ({took:.0f} s)")

    def iterate(self, items: Sequence, every: int = 1024) -> Iterator:
        for i, x in enumerate(items):
            if i % every == 0 and i:
                self.tick(i)
            yield x

    def end(self) -> None:
        if self._stage is None:
            return
        took = time.perf_counter() - self._stage_t
        self.seconds[self._stage] = round(self.seconds.get(self._stage, 0.0) + took, 4)
        if self.active and self.lines:
            self.say(f"{self._stage} done in {took:.1f} s")
        self._stage = None


# --- the ANN index ---------------------------------------------------------------------------

def _faiss():
    return require("faiss", "faiss", f"ANN dense searches (dense_search='ann', or 'auto' over {EXACT_LIMIT:,} chunks)",
                   "or set dense_search='exact'")


def own_neighbours(vectors: np.ndarray, queries: int = ANN_CHECK_QUERIES,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What an ANN recall check searches for: ``queries`` of the collection's ``vectors`` drawn at
    random (their rows, ascending, and the vectors) and each one's 10 nearest others (fewer in a
    smaller collection) by exact inner product (one matrix product over every vector)."""
    n = len(vectors)
    k = min(10, n - 1)
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(queries, n), replace=False))
    q = np.asarray(vectors[rows], dtype=np.float32)
    sims = q @ np.asarray(vectors).T
    sims[np.arange(len(rows)), rows] = -np.inf
    return rows, q, np.argpartition(-sims, k - 1, axis=1)[:, :k]


def own_recall(found: np.ndarray, rows: np.ndarray, exact: np.ndarray) -> float:
    """Recall@k of ``found`` (per query of :func:`own_neighbours`, the ids of at least k + 1
    neighbours, its own row among them) against ``exact``, to 4 decimals."""
    k = exact.shape[1]
    hits = [len(set(e.tolist()) & set(f[f != r].tolist()[:k])) for e, f, r in zip(exact, np.asarray(found), rows)]
    return round(float(np.mean(hits)) / k, 4)


class AnnIndex:
    """Approximate nearest neighbours over unit vectors by inner product: each vector held as d/2
    4-bit codes of a product quantiser, all of them scanned per query with SIMD lookup tables
    (faiss ``IndexPQFastScan``: 96 bytes a 384-dimensional vector), and the scan's best
    :attr:`shortlist` re-ranked by their exact inner products (``IndexRefineFlat``: on unit vectors
    the cosine similarity, exact for every neighbour returned). Persisted as one faiss file;
    :meth:`load` checks it against the vectors it must index. It holds the only in-memory copy of
    the vectors an ANN search needs (the index's own numpy file stays memory-mapped and untouched
    by searches)."""

    def __init__(self, index, recall: float | None = None, shortlist: int = ANN_SHORTLIST, faster: bool = True):
        self.index = index
        self.recall = recall  # recall@10 on the indexed vectors' own neighbours at ``shortlist`` (:meth:`check_recall`)
        self.shortlist = shortlist  # vectors re-ranked exactly per query (at least the number asked for)
        self.faster = faster  # than exact search, at ``shortlist`` (:meth:`check_recall`)

    @property
    def useful(self) -> bool:
        """Whether the check found recall@10 ≥ :data:`ANN_MIN_RECALL` faster than exact search."""
        return self.recall is not None and self.recall >= ANN_MIN_RECALL and self.faster

    def __len__(self) -> int:
        return int(self.index.ntotal)

    @classmethod
    def build(cls, vectors: np.ndarray, progress: BuildProgress | None = None, *, code_dims: int = ANN_CODE_DIMS,
              batch: int = 50_000, seed: int = 0) -> "AnnIndex":
        """The quantiser learnt from up to :data:`ANN_TRAIN_MAX` of ``vectors`` drawn at random, then
        every vector coded and kept (``batch`` at a time, ticking ``progress``)."""
        faiss = _faiss()

        n, d = vectors.shape
        if d == 0:
            raise AtomgraphError("the index has no dense vectors (built with dense=False): no ANN search")
        codes = d // code_dims if d % code_dims == 0 else d
        index = faiss.IndexRefineFlat(faiss.IndexPQFastScan(int(d), int(codes), 4, faiss.METRIC_INNER_PRODUCT))
        rows = np.sort(np.random.default_rng(seed).choice(n, size=min(n, ANN_TRAIN_MAX), replace=False))
        sample = np.asarray(vectors[rows], dtype=np.float32)
        if len(sample) < ANN_TRAIN_MIN:
            sample = np.resize(sample, (ANN_TRAIN_MIN, d))
        index.train(np.ascontiguousarray(sample))
        for s in range(0, n, batch):
            index.add(np.ascontiguousarray(vectors[s : s + batch], dtype=np.float32))
            if progress is not None:
                progress.tick(min(n, s + batch))
        return cls(index)

    def search(self, queries: np.ndarray, k: int, shortlist: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """For each row of ``queries`` (one vector or a matrix), the rows of the (up to) ``k``
        vectors nearest it and their inner products, nearest first, re-ranking ``shortlist``
        (default :attr:`shortlist`) at least; a row faiss leaves unfilled is -1 (score -inf)."""
        faiss = _faiss()

        k = max(1, min(int(k), len(self)))
        params = faiss.IndexRefineSearchParameters()
        params.k_factor = max(int(self.shortlist if shortlist is None else shortlist), k) / k
        q = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        sims, ids = self.index.search(q, k, params=params)
        return ids, np.where(ids >= 0, sims, -np.inf).astype(np.float32)

    def check_recall(self, vectors: np.ndarray, queries: int = ANN_CHECK_QUERIES, seed: int = 0) -> float:
        """The shortlist: the smallest of :data:`ANN_SHORTLIST` times 1, 2, 4, 8 and 16 whose
        recall@10 against exact search reaches :data:`ANN_MIN_RECALL`, for ``queries`` of the
        indexed ``vectors`` drawn at random, each one's 10 nearest others (one matrix product over
        every vector); kept in :attr:`shortlist` and :attr:`recall` (the largest shortlist's recall
        where none reaches it). :attr:`faster`: whether a search of 5 of those queries with that
        shortlist takes less CPU time than their exact search (a question's 5 dense queries in one
        matrix product)."""
        self.shortlist, self.faster = ANN_SHORTLIST, True
        if len(vectors) < 2:
            self.recall = 1.0
            return self.recall
        rows, q, exact = own_neighbours(vectors, queries, seed)
        for shortlist in (ANN_SHORTLIST * f for f in (1, 2, 4, 8, 16)):
            self.shortlist = shortlist
            found, _ = self.search(q, exact.shape[1] + 1)
            self.recall = own_recall(found, rows, exact)
            if self.recall >= ANN_MIN_RECALL:
                break
        t = time.process_time()
        np.max(q[:5] @ np.asarray(vectors).T, axis=1)
        exact_s = time.process_time() - t
        t = time.process_time()
        self.search(q[:5], ANN_CANDIDATES)
        self.faster = time.process_time() - t < exact_s
        return self.recall

    def save(self, path: Path) -> None:
        """Write to ``path`` (a temporary file renamed over it: never half-written), and
        :attr:`recall` beside it (``.json``)."""
        faiss = _faiss()

        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            faiss.write_index(self.index, str(tmp))
            os.replace(tmp, path)
            tmp.write_text(json.dumps({"recall_at_10": self.recall, "shortlist": self.shortlist, "faster": self.faster}))
            os.replace(tmp, path.with_suffix(".json"))
        finally:
            if tmp.exists():
                tmp.unlink()

    @classmethod
    def load(cls, path: Path, n: int, d: int) -> "AnnIndex":
        """The ANN index in ``path``; ValueError when it is not a re-ranked quantiser scan (an
        index file of another kind, such as an earlier version's HNSW graph) of ``n`` vectors of
        ``d`` dimensions by inner product, RuntimeError (faiss) when the file is unreadable."""
        faiss = _faiss()

        index = faiss.read_index(str(path))
        if not isinstance(index, faiss.IndexRefineFlat):
            raise ValueError(f"{path.name} holds a faiss {type(index).__name__}, not a quantiser scan with exact re-ranking")
        if int(index.ntotal) != n or int(index.d) != d:
            raise ValueError(f"{path.name} indexes {index.ntotal} vectors of {index.d} dimensions, not {n} of {d}")
        if index.metric_type != faiss.METRIC_INNER_PRODUCT:
            raise ValueError(f"{path.name} ranks by L2 distance, not inner product")
        try:
            check = json.loads(path.with_suffix(".json").read_text())
            recall, shortlist, faster = float(check["recall_at_10"]), int(check["shortlist"]), bool(check["faster"])
        except (OSError, ValueError, KeyError, TypeError):
            recall, shortlist, faster = None, ANN_SHORTLIST, True  # checked again
        return cls(index, recall, shortlist, faster)


BM25_DENSE_SHARE = 64  # a BM25 query with postings past 1/64 of the objects is scored as a full array


@dataclass(frozen=True)
class SparseScores:
    """A query's scores without a value per object: the objects among its candidates (an ANN
    search's, a BM25 query's postings; ``positions``, ascending) with their ``values``, every other
    one of the ``n`` objects at ``floor`` (not retrieved; at most every value). It reads as the
    length-``n`` array it stands for — ``scores[p]``, ``scores[positions]``, :meth:`top`,
    :meth:`minmax` — at a cost in the number of candidates, not of objects; :meth:`toarray`
    builds the full array."""

    positions: np.ndarray
    values: np.ndarray
    floor: float
    n: int

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, p):
        ps = np.asarray(p)
        at = np.minimum(np.searchsorted(self.positions, ps), max(len(self.positions) - 1, 0))
        hit = (self.positions[at] == ps) if len(self.positions) else np.zeros(ps.shape, bool)
        out = np.where(hit, self.values[at] if len(self.values) else self.floor, np.float32(self.floor))
        return out.astype(np.float32) if out.ndim else np.float32(out)

    def top(self, k: int) -> list[int]:
        """The ``k`` best positions, best first, ties by position: the order a stable sort of
        :meth:`toarray` gives (the objects at ``floor`` follow in position order)."""
        order = np.argsort(-self.values, kind="stable")
        above = self.positions[order][self.values[order] > self.floor][:k].tolist()
        taken = set(above)
        rest = (p for p in range(self.n) if p not in taken)
        return above + [p for _, p in zip(range(min(k, self.n) - len(above)), rest)]

    def minmax(self) -> "SparseScores":
        """Min-max normalised over all ``n`` objects (zeros when every score is the same)."""
        lo = float(self.floor) if len(self.positions) < self.n else float(self.values.min())
        hi = float(self.values.max()) if len(self.values) else lo
        if hi - lo < 1e-12:
            return SparseScores(self.positions, np.zeros_like(self.values), 0.0, self.n)
        return SparseScores(self.positions, (self.values - lo) / (hi - lo), (self.floor - lo) / (hi - lo), self.n)

    def toarray(self) -> np.ndarray:
        out = np.full(self.n, self.floor, dtype=np.float32)
        out[self.positions] = self.values
        return out


# --- the index ---------------------------------------------------------------------------------

def content_key(objects: Sequence[DataObject], model_id: str, *, rows_per_chunk: int, passage_chars: int,
                progress: BuildProgress | None = None) -> str:
    """The cache key: a hash of the objects, the embedding model and the index settings."""
    h = hashlib.sha256()
    h.update(json.dumps({"v": INDEX_VERSION, "model": model_id, "rows": rows_per_chunk, "chars": passage_chars}).encode())
    for o in (progress.iterate(objects, 8192) if progress is not None else objects):
        h.update(json.dumps(o.to_json(), sort_keys=True, ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:24]


def default_cache_dir() -> Path:
    """``$ATOMGRAPH_ARM_CACHE``, else ``$XDG_CACHE_HOME/atomgraph/arm-index`` (``~/.cache``)."""
    env = env_value("ATOMGRAPH_ARM_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "atomgraph" / "arm-index"


def _env_default(name: str, default, convert):
    raw = env_value(name)
    if raw is None:
        return default
    try:
        return convert(raw.strip())
    except ValueError:
        raise AtomgraphError(f"{name}={raw!r} is not valid") from None


def _check_dense_search(mode: str) -> str:
    if mode not in DENSE_SEARCH:
        raise AtomgraphError(f"dense_search {mode!r}: expected one of {', '.join(DENSE_SEARCH)}")
    return mode


def _within_limit(objects: list[DataObject], limit: int | None) -> tuple[list[DataObject], list[tuple[str, int]]]:
    """The objects within ``limit`` characters, and (id, size) of those refused."""
    if not limit or limit <= 0:
        return objects, []
    kept, refused = [], []
    for o in objects:
        size = object_chars(o)
        if size > limit:
            refused.append((o.id, size))
        else:
            kept.append(o)
    return kept, refused


def _object_ngrams(o: DataObject) -> set[str]:
    seen: set[str] = set()
    for f in object_fields(o):
        seen.update(ngrams(tokens(f)))
    return seen


def ngram_tables(objects: Sequence[DataObject], progress: BuildProgress | None = None):
    """The n-gram trie and its postings (CSR: ``indptr``, ``indices``; an n-gram's objects in
    ascending order), built without a Python dict of every n-gram: the trie is fed the
    n-grams object by object, then each object's n-grams are looked up and the (key,
    object) pairs sorted by key."""
    import marisa_trie

    progress = progress or BuildProgress(False)
    progress.stage("n-gram trie", len(objects))
    # marisa sums the weights of repeated keys, which changes its layout (ids, iteration
    # order): a first trie removes repeats, the second is built from unique keys as if from a set
    trie = marisa_trie.Trie(g for o in progress.iterate(objects) for g in _object_ngrams(o))
    trie = marisa_trie.Trie(trie.iterkeys())
    progress.stage("n-gram postings", len(objects))
    keys, owners = array("i"), array("i")
    for i, o in enumerate(progress.iterate(objects)):
        ids = [trie[g] for g in _object_ngrams(o)]
        keys.extend(ids)
        owners.extend([i] * len(ids))
    k = np.frombuffer(keys, dtype=np.int32) if len(keys) else np.empty(0, np.int32)
    order = np.argsort(k, kind="stable")
    indices = (np.frombuffer(owners, dtype=np.int32)[order] if len(owners) else np.empty(0, np.int32)).astype(np.int32)
    indptr = np.zeros(len(trie) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum(np.bincount(k, minlength=len(trie)))
    del keys, owners, k, order
    return trie, indptr, indices


def bm25_index(objects: Sequence[DataObject], progress: BuildProgress | None = None):
    """BM25 (bm25s, Lucene variant) over each object's tokens; an empty object is the one
    token ``""``. Token ids are assigned here, so the corpus is held as shared ints."""
    import bm25s

    progress = progress or BuildProgress(False)
    progress.stage("BM25 tokens", len(objects))
    vocab: dict[str, int] = {}
    docs = [[vocab.setdefault(t, len(vocab)) for t in (object_tokens(o) or [""])] for o in progress.iterate(objects)]
    progress.stage("BM25 index", len(objects))
    bm25 = bm25s.BM25()
    bm25.index((docs, vocab), show_progress=False)
    return bm25


@dataclass
class ArmIndex:
    """N-gram trie + postings, BM25 and chunk embeddings over ``objects`` (see module doc)."""

    objects: list[DataObject]
    trie: "object"  # marisa_trie.Trie
    post_indptr: np.ndarray
    post_indices: np.ndarray
    bm25: "object"  # bm25s.BM25
    chunk_objects: np.ndarray  # chunk row -> object index
    chunk_vectors: np.ndarray  # (chunks, dim), L2-normalised
    mentions: list[list[int]]  # object -> passages whose title it mentions
    embeddings: "object"  # langchain Embeddings, for queries
    model_id: str
    key: str = ""
    dense_search: str = "auto"  # "auto" | "exact" | "ann" (module doc)
    ann_candidates: int = ANN_CANDIDATES
    build_summary: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_dense_search(self.dense_search)
        if self.ann_candidates < 1:
            raise AtomgraphError("ann_candidates must be at least 1")

    # -- construction --------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        objects: Sequence[DataObject],
        *,
        embeddings=None,
        cache_dir: str | Path | None = None,
        rows_per_chunk: int = 20,
        passage_chars: int = 2000,
        use_cache: bool = True,
        dense: bool = True,
        dense_search: str | None = None,
        ann_candidates: int = ANN_CANDIDATES,
        max_object_chars: int | None = None,
        progress: bool | None = None,
        stream: TextIO | None = None,
    ) -> "ArmIndex":
        """Build the index, or load it from ``cache_dir`` (default :func:`default_cache_dir`)
        when the same objects were indexed with the same embedding model before.
        ``dense=False``: no embedding model and no chunk vectors (BM25 and n-grams only; what
        ``retrieve --method bm25`` needs). ``dense_search`` (default ``$ATOMGRAPH_ARM_DENSE_SEARCH``
        or ``auto``): exact or ANN dense search (module doc); the ANN index is built here when
        it is used, or read from the cache. ``max_object_chars`` (default
        ``$ATOMGRAPH_ARM_MAX_OBJECT_CHARS`` or 1,000,000; 0 = no limit): larger objects are
        refused with a warning. ``progress``: None = progress lines once the build runs past
        a few seconds, True = always, False = never; to ``stream``, else the
        ``atomgraph.progress`` logger."""
        from atomgraph.embeddings import embedding_id, embedding_model

        dense_search = _check_dense_search(dense_search or _env_default("ATOMGRAPH_ARM_DENSE_SEARCH", "auto", str))
        if max_object_chars is None:
            max_object_chars = _env_default("ATOMGRAPH_ARM_MAX_OBJECT_CHARS", MAX_OBJECT_CHARS, int)
        prog = BuildProgress(progress, stream)
        given = list(objects)
        if not given:
            raise AtomgraphError("cannot index an empty set of objects")
        objects, refused = _within_limit(given, max_object_chars)
        if refused:
            big = max(refused, key=lambda r: r[1])
            log.warning("ARM index: refused %d object(s) over max_object_chars=%s characters (largest: %r, %s "
                        "characters); split them into several objects or raise the limit",
                        len(refused), f"{max_object_chars:,}", big[0], f"{big[1]:,}")
        if not objects:
            raise AtomgraphError(f"every object is over max_object_chars={max_object_chars:,} characters; "
                                 "split them into several objects or raise the limit")
        emb = embedding_model(embeddings) if dense else None
        model_id = embedding_id(emb) if dense else "none (no dense vectors)"
        prog.stage("content key", len(objects))
        key = content_key(objects, model_id, rows_per_chunk=rows_per_chunk, passage_chars=passage_chars, progress=prog)
        folder = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        where = folder / key
        index = None
        if use_cache and (where / "meta.json").is_file():
            try:
                prog.stage("loading", len(objects))
                index = cls._load(where, objects, emb, model_id, key)
                index.cache_path = where
            except Exception as exc:  # noqa: BLE001 - a damaged cache is rebuilt, never fatal
                log.warning("ARM index cache %s unreadable (%s); rebuilding", where, exc)
                index = None
        loaded = index is not None
        if index is None:
            index = cls._build(objects, emb, model_id, key, rows_per_chunk, passage_chars, prog)
        index.dense_search, index.ann_candidates = dense_search, ann_candidates
        index.__post_init__()
        if use_cache and not loaded:
            try:
                prog.stage("saving", len(objects))
                index._save(where)
                index.cache_path = where
                if index.chunk_vectors.shape[1] > 0:  # read from the file from now on, as an opened index does:
                    # the vectors leave memory (an ANN index below holds its own copy)
                    index.chunk_vectors = np.load(where / "chunk_vectors.npy", mmap_mode="r")
            except OSError as exc:
                log.warning("cannot write the ARM index cache to %s (%s)", where, exc)
        if index.dense_mode == "ann":
            index._ann_for("chunks", prog)  # read from the cache, else built (and written there)
        prog.end()
        index.build_summary = {
            "objects": len(index.objects), "given": len(given), "refused": len(refused),
            "refused_ids": [r[0] for r in refused[:20]], "max_object_chars": max_object_chars,
            "chunks": int(len(index.chunk_objects)), "ngrams": len(index.trie), "loaded": loaded,
            "dense_search": index.dense_mode if dense else "none", "seconds": dict(prog.seconds),
            "ann_recall_at_10": getattr(index.__dict__.get("_anns", {}).get("chunks"), "recall", None),
            "ann_shortlist": getattr(index.__dict__.get("_anns", {}).get("chunks"), "shortlist", None),
            "ann_faster": getattr(index.__dict__.get("_anns", {}).get("chunks"), "faster", None),
            "total_seconds": round(time.perf_counter() - prog.t0, 3),
        }
        if prog.active or refused:
            s = index.build_summary
            prog.say(f"{'opened' if loaded else 'built'} {s['objects']:,} objects ({s['refused']:,} refused over "
                     f"{max_object_chars:,} characters), {s['chunks']:,} chunks, {s['ngrams']:,} n-grams, dense search "
                     f"{s['dense_search']}, in {s['total_seconds']:.1f} s")
        return index

    @classmethod
    def _build(cls, objects, emb, model_id, key, rows_per_chunk, passage_chars, prog=None) -> "ArmIndex":
        prog = prog or BuildProgress(False)
        trie, indptr, indices = ngram_tables(objects, prog)
        bm25 = bm25_index(objects, prog)

        prog.stage("chunks", len(objects))
        chunks: list[Chunk] = [c for o in prog.iterate(objects)
                               for c in chunk_object(o, rows_per_chunk=rows_per_chunk, passage_chars=passage_chars)]
        pos = {o.id: i for i, o in enumerate(objects)}
        chunk_objects = np.array([pos[c.object_id] for c in chunks], dtype=np.int32)
        del pos
        if emb is not None:
            prog.stage("embeddings", len(chunks), "chunks")
            texts = [c.text for c in chunks]
            del chunks
            vectors = embed_batches(emb, texts, prog)
            del texts
        else:
            vectors = np.zeros((len(chunks), 0), np.float32)
            del chunks
        prog.stage("title mentions", len(objects))
        mentions = title_mentions(objects, stopwords())
        prog.end()
        return cls(list(objects), trie, indptr, indices, bm25, chunk_objects, vectors, mentions, emb, model_id, key)

    def _save(self, where: Path) -> None:
        with atomic_dir(where) as tmp:
            self.trie.save(str(tmp / "ngrams.marisa"))
            np.savez(tmp / "arrays.npz", indptr=self.post_indptr, indices=self.post_indices,
                     chunk_objects=self.chunk_objects)
            np.save(tmp / "chunk_vectors.npy", np.asarray(self.chunk_vectors))
            self.bm25.save(str(tmp / "bm25"), show_progress=False)
            (tmp / "mentions.json").write_text(json.dumps(self.mentions))
            for kind, ann in self.__dict__.get("_anns", {}).items():
                ann.save(tmp / _ANN_FILES[kind])
            (tmp / "meta.json").write_text(json.dumps({"version": INDEX_VERSION, "model": self.model_id,
                                                       "objects": len(self.objects), "key": self.key}))

    @classmethod
    def _load(cls, where: Path, objects, emb, model_id, key) -> "ArmIndex":
        import bm25s
        import marisa_trie

        meta = json.loads((where / "meta.json").read_text())
        if meta.get("version") != INDEX_VERSION or meta.get("model") != model_id or meta.get("objects") != len(objects):
            raise ValueError("cache metadata does not match")
        trie = marisa_trie.Trie()
        trie.load(str(where / "ngrams.marisa"))
        arrays = np.load(where / "arrays.npz")
        if (where / "chunk_vectors.npy").is_file():
            vectors = np.load(where / "chunk_vectors.npy", mmap_mode="r")  # read as used (exact search, ANN build)
        else:
            vectors = arrays["chunk_vectors"]  # an index saved before vectors had their own file
        chunk_objects = arrays["chunk_objects"]
        if len(vectors) != len(chunk_objects):
            raise ValueError("chunk vectors and chunk owners differ in length")
        bm25 = bm25s.BM25.load(str(where / "bm25"), show_progress=False)
        mentions = json.loads((where / "mentions.json").read_text())
        return cls(list(objects), trie, arrays["indptr"], arrays["indices"], bm25, chunk_objects,
                   vectors, mentions, emb, model_id, key)

    # -- dense search -----------------------------------------------------------------------

    @property
    def dense_mode(self) -> str:
        """``exact`` or ``ann``: what ``dense_search`` means for this collection."""
        mode = _check_dense_search(self.dense_search)
        if mode == "auto":
            big = len(self.chunk_vectors) > EXACT_LIMIT and self.chunk_vectors.shape[1] > 0
            checked = self.__dict__.get("_anns", {}).get("chunks")  # exact where the ANN misses neighbours or is slower
            return "ann" if big and (checked is None or checked.useful) else "exact"
        return mode

    @property
    def one_chunk_per_object(self) -> bool:
        if not hasattr(self, "_one_chunk"):
            n = len(self.objects)
            self._one_chunk = len(self.chunk_objects) == n and bool(np.array_equal(self.chunk_objects, np.arange(n)))
        return self._one_chunk

    def _ann_for(self, kind: str, progress: BuildProgress | None = None) -> AnnIndex:
        """The ANN index over chunk vectors (``chunks``) or mean object vectors (``objects``,
        only where an object has several chunks): in memory, else read from the cache
        folder, else built (and written there). A damaged or mismatched file is rebuilt."""
        anns = self.__dict__.setdefault("_anns", {})
        if kind in anns:
            return anns[kind]
        lock = self.__dict__.setdefault("_ann_lock", threading.Lock())
        with lock:
            if kind in anns:
                return anns[kind]
            _faiss()  # a missing extra is its own error, not a damaged file
            vectors = self.chunk_vectors if kind == "chunks" else self.object_vectors
            n, d = vectors.shape
            where = getattr(self, "cache_path", None)
            path = where / _ANN_FILES[kind] if where is not None else None
            ann = None
            if path is not None and path.is_file():
                try:
                    ann = AnnIndex.load(path, n, d)
                except Exception as exc:  # noqa: BLE001 - a damaged ANN file is rebuilt, never fatal
                    log.warning("ARM index: ANN file %s unreadable (%s); rebuilding it", path, exc)
            if ann is None or ann.recall is None:
                prog = progress or BuildProgress(None)
                if ann is None:
                    prog.stage(f"ANN index ({kind})", n, "vectors")
                    ann = AnnIndex.build(vectors, prog)
                prog.stage(f"ANN recall check ({kind})", min(n, ANN_CHECK_QUERIES), "queries")
                ann.check_recall(vectors)
                prog.end()
                if path is not None:
                    try:
                        ann.save(path)
                    except (OSError, RuntimeError) as exc:
                        log.warning("cannot write the ANN index to %s (%s)", path, exc)
            anns[kind] = ann
            if not ann.useful:
                log.warning("ARM index: the ANN index finds %.0f%% of the 10 nearest %s at shortlist %d (recall@10 on %d of "
                            "the collection's own vectors; %.2f needed), %s than exact search%s", 100 * ann.recall, kind,
                            ann.shortlist, min(n, ANN_CHECK_QUERIES), ANN_MIN_RECALL, "faster" if ann.faster else "slower",
                            "; dense_search=auto searches exactly" if self.dense_search == "auto" else "")
            return ann

    def ann_index(self) -> AnnIndex:
        """The ANN index over the chunk vectors (built or read on first use)."""
        return self._ann_for("chunks")

    # -- n-grams ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.objects)

    @property
    def ids(self) -> list[str]:
        return [o.id for o in self.objects]

    def position(self, object_id: str) -> int:
        if not hasattr(self, "_pos"):
            self._pos = {o.id: i for i, o in enumerate(self.objects)}
        return self._pos[object_id]

    def has_ngram(self, ngram: str) -> bool:
        """Whether ``ngram`` (already canonical: :func:`normalize_ngram`) is a corpus n-gram."""
        return isinstance(ngram, str) and bool(ngram) and ngram in self.trie

    def document_frequency(self, ngram: str) -> int:
        if not self.has_ngram(ngram):
            return 0
        k = self.trie[ngram]
        return int(self.post_indptr[k + 1] - self.post_indptr[k])

    def with_prefix(self, prefix: str, limit: int = 200) -> list[str]:
        """Up to ``limit`` corpus n-grams starting with ``prefix`` (a trie prefix lookup)."""
        out = []
        for g in self.trie.iterkeys(prefix):
            out.append(g)
            if len(out) >= limit:
                break
        return out

    @property
    def unigrams(self) -> list[str]:
        """The corpus vocabulary (1-grams), for fuzzy matching."""
        if not hasattr(self, "_unigrams"):
            self._unigrams = [g for g in self.trie.iterkeys() if " " not in g]
        return self._unigrams

    # -- scores -----------------------------------------------------------------------------

    def bm25_scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every object for a bag of query tokens (zeros for an empty query)."""
        toks = [t for t in query_tokens if t]
        if not toks:
            return np.zeros(len(self.objects), dtype=np.float32)
        return np.asarray(self.bm25.get_scores(toks), dtype=np.float32)[: len(self.objects)]

    def bm25_sparse(self, query_tokens: Sequence[str]) -> "SparseScores | np.ndarray":
        """:meth:`bm25_scores` at a cost in the query tokens' postings, not in the objects: a
        :class:`SparseScores` of the objects that hold a query token, with the same values (each
        token's precomputed scores added in query order, in float32, as ``bm25s`` adds them), every
        other object at 0. Where the postings pass 1/:data:`BM25_DENSE_SHARE` of the collection (a
        common word) the full array is returned instead: there it is the cheaper form, for this
        step and for every step after it."""
        n = len(self.objects)
        toks = [t for t in query_tokens if t]
        ids = self.bm25.get_tokens_ids(toks) if toks else []
        sc = self.bm25.scores
        spans = [(int(sc["indptr"][i]), int(sc["indptr"][i + 1])) for i in ids]
        if getattr(self.bm25, "nonoccurrence_array", None) is not None or \
                sum(b - a for a, b in spans) > n // BM25_DENSE_SHARE:  # a variant scoring every object, or common words
            return self.bm25_scores(toks)
        if not spans:
            return SparseScores(np.empty(0, np.int64), np.empty(0, np.float32), 0.0, n)
        docs = np.concatenate([sc["indices"][a:b] for a, b in spans])
        positions, slot = np.unique(docs, return_inverse=True)
        values = np.zeros(len(positions), dtype=np.float32)
        np.add.at(values, slot, np.concatenate([sc["data"][a:b] for a, b in spans]).astype(np.float32))
        keep = positions < n
        return SparseScores(positions[keep].astype(np.int64), values[keep], 0.0, n)

    def embed_query(self, text: str) -> np.ndarray:
        """The normalised query vector (cached per text; :meth:`prime_queries` fills it in batch)."""
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> list[np.ndarray]:
        """:meth:`embed_query` of each text: those not cached are embedded together, in one batch
        (a question and its keywords), and cached while the cache holds under 100,000 texts."""
        cache = self.__dict__.setdefault("_query_cache", {})
        missing = [t for t in dict.fromkeys(texts) if t not in cache]
        fresh = dict(zip(missing, _embed(self.embeddings, [t or " " for t in missing], query=True))) if missing else {}
        for t, v in fresh.items():
            if len(cache) < 100_000:
                cache[t] = v
        return [fresh[t] if t in fresh else cache[t] for t in texts]

    def prime_queries(self, texts: Sequence[str], progress: "bool | None | BuildProgress" = None) -> None:
        """Embed many query texts in batches (evaluation runs), filling the query cache;
        ``progress`` as for :meth:`build` (lines between batches), or the reporter to use."""
        cache = self.__dict__.setdefault("_query_cache", {})
        todo = [t for t in dict.fromkeys(texts) if t not in cache]
        if todo:
            prog = progress if isinstance(progress, BuildProgress) else BuildProgress(progress, prefix="ARM")
            prog.stage("query embeddings", len(todo), "questions")
            for t, v in zip(todo, embed_batches(self.embeddings, [t or " " for t in todo], prog, query=True)):
                cache[t] = v
            prog.end()

    def dense_scores(self, text_or_vector) -> "np.ndarray | SparseScores":
        """Cosine similarity of every object to a query: the best of its chunks (Appendix D.2);
        one query of :meth:`dense_scores_many`."""
        return self.dense_scores_many([text_or_vector])[0]

    def dense_scores_many(self, queries: Sequence) -> "list[np.ndarray | SparseScores]":
        """:meth:`dense_scores` of each query (a text or a vector), searched together.

        ``dense_mode == "exact"``: every chunk scored, all queries in one matrix product, a
        length-n array per query. ``"ann"``: the ``ann_candidates`` chunks the ANN index returns
        per query, as :class:`SparseScores` — every other object is *not retrieved* and scores
        about the collection's lowest similarity to the query (the farthest chunk the ANN finds:
        the nearest to the negated query), so min-max normalisation sees about the range exact
        search sees; past the index's scan of its codes (96 bytes a chunk), no step costs O(objects)."""
        if not len(queries):
            return []
        vectors = iter(self.embed_queries([x for x in queries if isinstance(x, str)]))
        q = np.stack([next(vectors) if isinstance(x, str) else np.asarray(x, dtype=np.float32).ravel()
                      for x in queries]).astype(np.float32)
        n = len(self.objects)
        if self.dense_mode == "ann":
            ann = self.ann_index()
            rows, sims = ann.search(q, self.ann_candidates)
            _, far = ann.search(-q, 1, shortlist=32)
            out = []
            for r, s, f in zip(rows, sims, far[:, 0]):
                keep = r >= 0
                owners = self.chunk_objects[r[keep]]
                order = np.lexsort((-s[keep], owners))  # by object, its best chunk first
                owners, best = owners[order], s[keep][order]
                first = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]]) if len(owners) else np.empty(0, int)
                low = -float(f) if np.isfinite(f) else -1.0
                floor = min(low, float(best.min())) if len(best) else low
                out.append(SparseScores(owners[first].astype(np.int64), best[first], floor, n))
            return out
        sims = np.asarray(q @ np.asarray(self.chunk_vectors).T, dtype=np.float32)
        if self.one_chunk_per_object:
            return list(np.maximum(sims, np.float32(-1.0)))
        out = np.full((len(q), n), -1.0, dtype=np.float32)
        for o, s in zip(out, sims):
            np.maximum.at(o, self.chunk_objects, s)
        return list(out)

    def database_members(self, database: str) -> list[int]:
        """Positions of the tables of ``database``."""
        if not hasattr(self, "_by_db"):
            by: dict[str, list[int]] = {}
            for i, o in enumerate(self.objects):
                if o.is_table and o.database is not None:
                    by.setdefault(o.database, []).append(i)
            self._by_db = by
        return self._by_db.get(database, [])

    def nearest_objects(self, p: int, n: int) -> list[int]:
        """The ``n`` objects whose (mean-chunk) vectors are closest to object ``p``'s (by the
        ANN index when ``dense_mode == "ann"``: over the chunks where each object has one
        chunk, else over the object vectors)."""
        if self.dense_mode == "ann":
            if self.one_chunk_per_object:
                vectors, ann = self.chunk_vectors, self._ann_for("chunks")
            else:
                vectors, ann = self.object_vectors, self._ann_for("objects")
            rows, sims = ann.search(np.asarray(vectors[p], dtype=np.float32), n + 1)
            keep = rows[0] >= 0
            rows, sims = rows[0][keep], sims[0][keep]
            order = np.lexsort((rows, -sims))[:n]  # best first, ties by position
            return [int(rows[i]) for i in order]
        sims = self.object_vectors @ self.object_vectors[p]
        n = min(n, len(sims))
        top = np.argpartition(-sims, n - 1)[:n] if n < len(sims) else np.arange(len(sims))
        return [int(i) for i in top[np.argsort(-sims[top], kind="stable")]]

    @property
    def object_vectors(self) -> np.ndarray:
        """One normalised vector per object (mean of its chunks), for semantic compatibility."""
        if not hasattr(self, "_obj_vecs"):
            dim = self.chunk_vectors.shape[1]
            acc = np.zeros((len(self.objects), dim), dtype=np.float32)
            np.add.at(acc, self.chunk_objects, self.chunk_vectors)
            norms = np.linalg.norm(acc, axis=1, keepdims=True)
            self._obj_vecs = acc / np.where(norms == 0, 1, norms)
        return self._obj_vecs


def embed_batches(emb, texts: list[str], prog: BuildProgress, *, query: bool = False) -> np.ndarray:
    """:func:`_embed` of ``texts`` in batches of :data:`EMBED_BATCH` into one array (no second
    copy), with ``prog.tick`` between batches: a long embedding stage reports progress within it."""
    batch = EMBED_BATCH
    if len(texts) <= batch:
        return _embed(emb, texts, query=query)
    vectors = None
    for s in range(0, len(texts), batch):
        part = _embed(emb, texts[s : s + batch], query=query)
        if vectors is None:
            vectors = np.empty((len(texts), part.shape[1]), dtype=np.float32)
        vectors[s : s + len(part)] = part
        prog.tick(s + len(part))
    return vectors


def _embed(emb, texts: list[str], *, query: bool = False) -> np.ndarray:
    """Normalised float32 vectors of ``texts`` (sentence-transformers fast path when present)."""
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    encode = getattr(emb, "encode", None)
    if callable(encode):
        vecs = np.asarray(encode(texts), dtype=np.float32)
    elif query:
        vecs = np.asarray([emb.embed_query(t) for t in texts], dtype=np.float32)
    else:
        vecs = np.asarray(emb.embed_documents(texts), dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms == 0, 1, norms)


def stopwords() -> frozenset[str]:
    """English stopwords (bm25s' list) plus question words, case-folded."""
    from bm25s.stopwords import STOPWORDS_EN

    extra = {"what", "which", "who", "whom", "whose", "when", "where", "why", "how", "many", "much", "did", "does",
             "do", "is", "was", "were", "are", "has", "have", "had", "show", "find", "give",
             "return", "also", "both", "same", "s", "from", "than", "each", "all", "any", "its", "his", "her",
             "their", "whom", "i", "we", "you", "me", "us", "our", "can", "could", "would", "should", "been", "being"}
    return frozenset({w.casefold() for w in STOPWORDS_EN} | extra)
