"""Object–object compatibility C_ij (§3.2.2, Appendix B of the ARM paper): every C in one module.

:func:`compatibility_for` is the run's C over a set of search objects (``compatibility="graded"``,
the paper's, by default; ``"rules"`` a switch); :func:`neighbours` an object's most compatible
objects, which §3.2.2's expansion adds.

Graded C (Appendix B):

"Compatibility … is computed based on both semantic similarity (cosine similarity of
embeddings) and exact-value similarity between contents from both objects":

- table–table: the best pair of columns, each scored ``w × cos(header_a, header_b) +
  (1 − w) × Jaccard(values_a, values_b)`` (one joinable column pair connects two tables).
  A column's header is written with its table's name (``column_headers="table_column"``:
  ``superhero.gender_id`` → "superhero gender id", ``gender.id`` → "gender id"), as the
  authors' join-aware retrieval code (JAR, whose MIP ARM follows) serialises a column; the
  bare column name is ``column_headers="column"``. Tables without rows (schemas only) have
  no values: their exact-value part is the Jaccard of the two headers' words, so
  ``gender.id`` and ``superhero.gender_id`` share "gender id" while ``gender.id`` and
  ``superpower.id`` share only "id" (with bare names both pairs scored 1);
- table–passage: the best (cell, sentence) pair, ``w × cos + (1 − w) × overlap coefficient``
  of their word sets;
- passage–passage: the best (sentence, sentence) pair, scored the same way.

A passage's units are its sentences and its title (the title is how another passage
mentions it); a table's are its column headers (for table–table) and its distinct cells
(for table–passage). Word sets drop stopwords; the overlap coefficient is
``|A ∩ B| / min(|A|, |B|)``. Tables of two different ``database`` values score 0 (a join
never crosses databases).

Units (embeddings and word sets) are computed once per object, lazily, in batches, and kept
on the index (:class:`UnitCache`); :func:`graded_matrix` is vectorised over the candidate
pool only (one matrix product, then a block maximum per object pair).
"""

from __future__ import annotations

import itertools
import re
import threading
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from rapidfuzz import fuzz

from atomgraph.state.arm import ArmContext
from atomgraph.tools.arm_index import ArmIndex, _embed, stopwords, tokens
from atomgraph.tools.objects import DataObject, split_identifier

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
MAX_SENTENCES = 40
MAX_CELLS = 200
COLUMN_HEADERS = ("table_column", "column")


@dataclass
class ObjectUnits:
    """One object's comparable units: text units (sentences or cells) and columns."""

    texts: list[str]
    text_vectors: np.ndarray  # (len(texts), dim)
    text_words: list[frozenset[str]]
    headers: list[str]
    header_vectors: np.ndarray  # (len(headers), dim)
    values: list[frozenset[str]]  # per column: its distinct casefolded cell values, or the header's words


def sentences(text: str) -> list[str]:
    """The sentences of a passage (a light splitter: end punctuation then a capital/digit)."""
    return [s.strip() for s in _SENTENCE.split(text or "") if s.strip()]


def _words(text: str, stop: frozenset[str]) -> frozenset[str]:
    return frozenset(t for t in tokens(text) if t not in stop)


class UnitCache:
    """Units per object position, embedded in batches on first use (thread-safe); one cache
    per index and ``column_headers`` mode."""

    def __init__(self, index: ArmIndex, column_headers: str = "table_column"):
        if column_headers not in COLUMN_HEADERS:
            raise ValueError(f"unknown column_headers {column_headers!r}; expected one of {', '.join(COLUMN_HEADERS)}")
        self.index = index
        self.column_headers = column_headers
        self._units: dict[int, ObjectUnits] = {}
        self._lock = threading.Lock()
        self._stop = stopwords()

    @classmethod
    def of(cls, index: ArmIndex, column_headers: str = "table_column") -> "UnitCache":
        key = f"_unit_cache_{column_headers}"
        cache = index.__dict__.get(key)
        if cache is None:
            cache = index.__dict__.setdefault(key, cls(index, column_headers))
        return cache

    @property
    def file_name(self) -> str:
        return "units.npz" if self.column_headers == "table_column" else f"units-{self.column_headers}.npz"

    def _raw(self, p: int) -> tuple[list[str], list[str], list[frozenset[str]]]:
        o = self.index.objects[p]
        if o.is_table:
            cells = list(dict.fromkeys(c.strip() for r in o.rows for c in r if c and c.strip()))[:MAX_CELLS]
            headers = [split_identifier(c) or c for c in o.columns]
            if self.column_headers == "table_column":
                table = split_identifier(o.title.split(".")[-1]) if o.title else ""
                headers = [f"{table} {h}".strip() for h in headers]
            if o.rows:
                values = [frozenset(r[i].strip().casefold() for r in o.rows if i < len(r) and r[i].strip())
                          for i in range(len(o.columns))]
            else:
                values = [frozenset(h.casefold().split()) for h in headers]
            return cells, headers, values
        texts = [o.title] + sentences(o.text)[:MAX_SENTENCES]
        return [t for t in texts if t.strip()], [], []

    def prime_all(self) -> None:
        """Units of every object: read from the index's cache folder (:attr:`file_name`:
        ``units.npz``, ``units-column.npz`` for bare headers) when there, else embedded in one
        batch and written there (evaluation runs)."""
        n = len(self.index.objects)
        where = getattr(self.index, "cache_path", None)
        f = where / self.file_name if where is not None else None
        if f is not None and f.is_file():
            try:
                data = np.load(f)
                raws = [self._raw(p) for p in range(n)]
                tn = np.array([len(r[0]) for r in raws]); hn = np.array([len(r[1]) for r in raws])
                tv, hv = data["text"].astype(np.float32), data["header"].astype(np.float32)
                same = "units" in data.files and str(data["units"]) == _fingerprint(raws)
                if same and len(tv) == tn.sum() and len(hv) == hn.sum():
                    ta, ha = np.r_[0, np.cumsum(tn)], np.r_[0, np.cumsum(hn)]
                    with self._lock:
                        for p, r in enumerate(raws):
                            self._units.setdefault(p, ObjectUnits(r[0], tv[ta[p]:ta[p + 1]], [_words(t, self._stop) for t in r[0]],
                                                                  r[1], hv[ha[p]:ha[p + 1]], r[2]))
                    return
            except Exception:  # noqa: BLE001 - a damaged cache is recomputed
                pass
        units = self.get(list(range(n)))
        if f is not None:
            try:
                dim = self.index.chunk_vectors.shape[1]
                text = np.concatenate([u.text_vectors for u in units] or [np.zeros((0, dim))]).astype(np.float16)
                header = np.concatenate([u.header_vectors for u in units] or [np.zeros((0, dim))]).astype(np.float16)
                np.savez(f, text=text, header=header, units=np.array(_fingerprint([(u.texts, u.headers, u.values) for u in units])))
            except OSError:
                pass

    def get(self, positions: Sequence[int]) -> list[ObjectUnits]:
        todo = [p for p in dict.fromkeys(positions) if p not in self._units]
        if todo:
            raws = {p: self._raw(p) for p in todo}
            flat = [t for p in todo for t in raws[p][0]] + [h for p in todo for h in raws[p][1]]
            vecs = _embed(self.index.embeddings, flat) if flat else np.zeros((0, 1), dtype=np.float32)
            dim = self.index.chunk_vectors.shape[1]
            at = 0
            built: dict[int, ObjectUnits] = {}
            for p in todo:
                texts = raws[p][0]
                tv = vecs[at : at + len(texts)] if texts else np.zeros((0, dim), dtype=np.float32)
                at += len(texts)
                built[p] = ObjectUnits(texts, tv, [_words(t, self._stop) for t in texts], raws[p][1],
                                       np.zeros((0, dim), dtype=np.float32), raws[p][2])
            for p in todo:
                hs = raws[p][1]
                built[p].header_vectors = vecs[at : at + len(hs)] if hs else np.zeros((0, dim), dtype=np.float32)
                at += len(hs)
            with self._lock:
                for p, u in built.items():
                    self._units.setdefault(p, u)
        return [self._units[p] for p in positions]


def _fingerprint(raws) -> str:
    """What the cached unit embeddings were computed from (texts and headers), so a cache
    written for other units (another version's headers) is recomputed, not misread."""
    import hashlib

    h = hashlib.sha256()
    for texts, headers, _ in raws:
        for t in [*texts, "\x1e", *headers, "\x1d"]:
            h.update(t.encode("utf-8", "surrogatepass") + b"\x1f")
    return h.hexdigest()


def _set_matrix(sets: list[frozenset[str]]):
    """A sparse 0/1 matrix (sets × vocabulary) and the set sizes."""
    from scipy.sparse import csr_matrix

    vocab: dict[str, int] = {}
    rows, cols = [], []
    for i, s in enumerate(sets):
        for w in s:
            rows.append(i)
            cols.append(vocab.setdefault(w, len(vocab)))
    X = csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(len(sets), max(1, len(vocab))))
    return X, np.array([len(s) for s in sets], dtype=np.float32)


def _block_max(S: np.ndarray, owner_a: np.ndarray, owner_b: np.ndarray, n: int) -> np.ndarray:
    """``M[i, j]`` = max of ``S`` over the units of object ``i`` (rows) × object ``j`` (columns)."""
    out = np.zeros((n, n), dtype=np.float32)
    if S.size == 0:
        return out
    # owners are sorted (units are stacked object by object)
    ra = np.flatnonzero(np.r_[True, owner_a[1:] != owner_a[:-1]])
    rb = np.flatnonzero(np.r_[True, owner_b[1:] != owner_b[:-1]])
    M = np.maximum.reduceat(np.maximum.reduceat(S, ra, axis=0), rb, axis=1)
    out[np.ix_(owner_a[ra], owner_b[rb])] = M
    return out


def graded_matrix(index: ArmIndex, positions: Sequence[int], *, weight: float = 0.5,
                  column_headers: str = "table_column") -> np.ndarray:
    """C_ij over the objects at ``positions`` (Appendix B; module doc), symmetric, zero diagonal.

    ``weight`` is w, the share of semantic similarity (1 − w: exact-value similarity);
    ``column_headers``: how a column's header is written (module doc)."""
    ps = list(positions)
    n = len(ps)
    C = np.zeros((n, n), dtype=np.float32)
    if n < 2:
        return C.astype(float)
    units = UnitCache.of(index, column_headers).get(ps)
    objs = [index.objects[p] for p in ps]
    is_table = np.array([o.is_table for o in objs])

    # sentences and cells: passage–passage and table–passage
    owner = np.array([i for i, u in enumerate(units) for _ in u.texts], dtype=np.int64)
    if len(owner):
        V = np.concatenate([u.text_vectors for u in units if len(u.texts)], axis=0)
        words = [w for u in units for w in u.text_words]
        X, size = _set_matrix(words)
        inter = np.asarray((X @ X.T).todense(), dtype=np.float32)
        low = np.minimum.outer(size, size)
        overlap = np.divide(inter, low, out=np.zeros_like(inter), where=low > 0)
        S = weight * (V @ V.T) + (1 - weight) * overlap
        T = _block_max(S, owner, owner, n)
        both_tables = np.logical_and.outer(is_table, is_table)
        T[both_tables] = 0.0  # tables are compared by their columns
        C = np.maximum(C, T)

    # columns: table–table
    col_owner = np.array([i for i, u in enumerate(units) for _ in u.headers], dtype=np.int64)
    if len(col_owner):
        H = np.concatenate([u.header_vectors for u in units if len(u.headers)], axis=0)
        values = [v for u in units for v in u.values]
        Y, size = _set_matrix(values)
        inter = np.asarray((Y @ Y.T).todense(), dtype=np.float32)
        union = np.add.outer(size, size) - inter
        jac = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
        S = weight * (H @ H.T) + (1 - weight) * jac
        T = _block_max(S, col_owner, col_owner, n)
        dbs = [o.database for o in objs]
        for a in range(n):
            for b in range(n):
                if dbs[a] is not None and dbs[b] is not None and dbs[a] != dbs[b]:
                    T[a, b] = 0.0
        C = np.maximum(C, T)
    C = np.clip(C, 0.0, None)
    np.fill_diagonal(C, 0.0)
    return np.maximum(C, C.T).astype(float)


def neighbour_candidates(index: ArmIndex, p: int, limit: int) -> list[int]:
    """Objects that may be among ``p``'s most compatible: its ``limit`` nearest objects by
    embedding, the passages it mentions or that mention it, and its database's tables."""
    out: dict[int, None] = {}
    for q in list(index.mentions[p]) + _mentioned_by(index)[p]:
        out.setdefault(q)
    o = index.objects[p]
    if o.is_table and o.database is not None:
        for q in index.database_members(o.database):
            out.setdefault(q)
    for q in index.nearest_objects(p, limit + 1):
        out.setdefault(q)
    out.pop(p, None)
    return list(out)


# --- rules compatibility (compatibility="rules", a switch) ----------------------------------

_KEYLIKE = ("id", "code", "key", "no", "number", "num")
_GENERIC = {"id", "name", "description", "date", "type", "title", "details", "year", "age", "other details"}


def _singular(w: str) -> str:
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        return w[:-1]
    return w


def _table_name(obj: DataObject) -> str:
    name = obj.title.split(".")[-1] if obj.database and obj.title.startswith(obj.database + ".") else obj.title
    return " ".join(_singular(w) for w in split_identifier(name).split())


def column_compatibility(a: DataObject, x: str, b: DataObject, y: str, *, value_weight: float = 0.5) -> float:
    """Join-ability of column ``x`` of table ``a`` with column ``y`` of table ``b`` in [0, 1]:
    same key-like name (``singer_id`` = ``singer_id``), a foreign-key pattern (``singer_id`` in
    one, ``id`` in a table named singer), a close name, and value overlap (Jaccard) when both
    tables have rows."""
    wx, wy = split_identifier(x), split_identifier(y)
    name = 0.0
    if wx == wy:
        last = wx.split()[-1] if wx else ""
        if wx == "id":
            name = 0.2
        elif last in _KEYLIKE:
            name = 1.0
        elif wx in _GENERIC:
            name = 0.3
        else:
            name = 0.6
    else:
        ta, tb = _table_name(a), _table_name(b)
        if (wy in ("id", f"{tb} id") and wx in (f"{tb} id", f"{tb} code")) or (
            wx in ("id", f"{ta} id") and wy in (f"{ta} id", f"{ta} code")
        ):
            name = 1.0
        elif wx.split()[-1:] == wy.split()[-1:] and wx.split()[-1:] and wx.split()[-1] in _KEYLIKE[:3]:
            r = fuzz.ratio(wx, wy) / 100
            name = 0.5 * r if r >= 0.8 else 0.0
    if a.rows and b.rows and value_weight > 0:
        ix, iy = a.columns.index(x), b.columns.index(y)
        vx = {r[ix].strip().casefold() for r in a.rows if r[ix].strip()}
        vy = {r[iy].strip().casefold() for r in b.rows if r[iy].strip()}
        jac = len(vx & vy) / len(vx | vy) if vx and vy else 0.0
        return (1 - value_weight) * name + value_weight * jac
    return name


def table_compatibility(a: DataObject, b: DataObject) -> float:
    """The best column pair's join-ability; 0 across two different databases."""
    if a.database is not None and b.database is not None and a.database != b.database:
        return 0.0
    return max((column_compatibility(a, x, b, y) for x in a.columns for y in b.columns), default=0.0)


def compatibility_matrix(
    index: ArmIndex,
    positions: Sequence[int],
    *,
    link_weight: float = 1.0,
    join_weight: float = 1.0,
    semantic_weight: float = 0.0,
    semantic_floor: float = 0.5,
) -> np.ndarray:
    """C_ij over the candidates at ``positions`` (object indices of ``index``).

    passage/passage and table/passage: ``link_weight`` when one mentions the other's title;
    table/table: ``join_weight`` × the best column join-ability; every pair also gets
    ``semantic_weight`` × (cosine − ``semantic_floor``)₊ of their embeddings.
    """
    pos = list(positions)
    n = len(pos)
    C = np.zeros((n, n))
    objs = [index.objects[p] for p in pos]
    where = {p: a for a, p in enumerate(pos)}
    if link_weight:
        for a, p in enumerate(pos):
            for q in index.mentions[p]:
                b = where.get(q)
                if b is not None and b != a:
                    C[a, b] = C[b, a] = max(C[a, b], link_weight)
    if join_weight:
        for a, b in itertools.combinations(range(n), 2):
            if objs[a].is_table and objs[b].is_table:
                v = join_weight * table_compatibility(objs[a], objs[b])
                if v > 0:
                    C[a, b] = C[b, a] = max(C[a, b], v)
    if semantic_weight and n:
        V = index.object_vectors[pos]
        S = np.clip(V @ V.T - semantic_floor, 0, None) * semantic_weight
        np.fill_diagonal(S, 0)
        C = C + S
    np.fill_diagonal(C, 0)
    return C


# --- the run's C_ij and an object's most compatible objects (§3.2.2's expansion) -------------

def compatibility_for(index: ArmIndex, positions: Sequence[int], ctx: ArmContext) -> np.ndarray:
    """C_ij over ``positions`` by the run's ``compatibility`` (graded: Appendix B)."""
    if ctx.compatibility == "rules":
        return compatibility_matrix(index, positions, link_weight=ctx.link_weight, join_weight=ctx.join_weight,
                                    semantic_weight=ctx.semantic_weight, semantic_floor=ctx.semantic_floor)
    return graded_matrix(index, positions, weight=ctx.compatibility_weight, column_headers=ctx.column_headers)


def _mentioned_by(index: ArmIndex) -> list[list[int]]:
    if not hasattr(index, "_mentioned_by"):
        back: list[list[int]] = [[] for _ in index.objects]
        for i, targets in enumerate(index.mentions):
            for j in targets:
                back[j].append(i)
        index._mentioned_by = back
    return index._mentioned_by


def rule_neighbours(index: ArmIndex, p: int, dense: np.ndarray, limit: int) -> list[int]:
    """``compatibility="rules"``: passages linked by a title mention either way; tables
    joinable with a table by the column rules (same database), best first."""
    if limit <= 0:
        return []
    obj = index.objects[p]
    scored: dict[int, float] = {}
    for q in list(index.mentions[p]) + _mentioned_by(index)[p]:
        if q != p:
            scored[q] = 1.0
    if obj.is_table:
        for q, o in enumerate(index.objects):
            if q != p and o.is_table and (obj.database is None or o.database == obj.database):
                v = table_compatibility(obj, o)
                if v > 0:
                    scored[q] = max(scored.get(q, 0.0), v)
    ranked = sorted(scored, key=lambda q: (-scored[q], -float(dense[q])))
    return ranked[:limit]


def neighbours(index: ArmIndex, p: int, dense: np.ndarray, limit: int, ctx: ArmContext | None = None) -> list[int]:
    """The ``limit`` objects most compatible with object ``p`` (§3.2.2 expansion), by the
    run's compatibility (Appendix B's graded C by default; cached per object)."""
    ctx = ctx or ArmContext()
    if limit <= 0:
        return []
    if ctx.compatibility == "rules":
        return rule_neighbours(index, p, dense, limit)
    cache = index.__dict__.setdefault("_neighbours", {})
    key = (p, limit, ctx.compatibility_weight, ctx.neighbour_candidates, ctx.column_headers)
    if key not in cache:
        cands = neighbour_candidates(index, p, ctx.neighbour_candidates)
        C = graded_matrix(index, [p] + cands, weight=ctx.compatibility_weight, column_headers=ctx.column_headers)[0, 1:]
        order = np.argsort(-C, kind="stable")
        cache[key] = [cands[i] for i in order if C[i] > 0][:limit]
    return cache[key]
