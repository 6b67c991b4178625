"""§3.2.2 structure alignment: from the base set of search objects to k objects and their
connections, by a mixed-integer program — the relevance R_i, the compatibility C_ij, the expanded
sets of search objects, one MIP draft per set, and the ``structure`` node. No model call.

- **R_i** (:func:`solve_draft`): the paper's cosine similarity of the question and the object
  (``relevance="mix"`` a switch), plus the ``database_weight`` extension (:func:`database_relevance`);
- **C_ij** (section "compatibility" below, Appendix B): :func:`compatibility_for` over a set of
  objects, :func:`neighbours` an object's most compatible objects;
- **the pool** (:func:`expanded_pools`, "Constructing multiple alignment drafts"): the base set
  expanded d steps (d = 0, 1, 2: the base set itself, then 1 and 2 steps), each step adding every
  new object's most compatible objects;
- **the MIP** (section "the MIP" below, Appendix B: :func:`build_model`, each equation commented,
  solved by :func:`solve_structure`); :func:`solve_draft` runs it over one set, :func:`solve_drafts`
  one draft per expanded set;
- the ``structure`` node runs them. The drafts in words are
  :mod:`atomgraph.nodes.arm.self_verification`'s.

Positions are indices into ``index.objects``; what goes into the graph state is ids.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import math
import re
import threading
import time
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
from langchain_core.runnables import RunnableConfig
from rapidfuzz import fuzz

from atomgraph.nodes.arm.information_alignment import Scores, _minmax, _top, question_scores, suspect_positions
from atomgraph.state.arm import ArmContext
from atomgraph.state.arm_graph import ArmState, Draft
from atomgraph.tools.arm_index import ArmIndex, BuildProgress, embed_batches, stopwords, tokens
from atomgraph.tools.objects import DataObject, split_identifier

if TYPE_CHECKING:
    from atomgraph.nodes.arm.pipeline import ArmRuntime


# --- R_i, the expanded sets of search objects, one draft per set -------------------------------------

def database_relevance(objects: Sequence, R: np.ndarray, weight: float) -> np.ndarray:
    """R with each table's *database relevance* added: ``weight`` × the best R of any candidate
    table in the same ``database`` (passages and tables without a database are unchanged).

    A question over a schema is answered inside one database, so a weak but needed table
    (a join table, a lookup table) of the most relevant database should outrank a strong
    table of another database; without this, the MIP fills k with a well-joined cluster of a
    different database. Soft, not a filter: a second database keeps its own best R.
    """
    R = np.asarray(R, dtype=float)
    if weight <= 0 or len(R) == 0:
        return R.copy()
    dbs = [o.database if o.is_table else None for o in objects]
    best: dict[str, float] = {}
    for d, r in zip(dbs, R):
        if d is not None:
            best[d] = max(best.get(d, float("-inf")), float(r))
    return R + weight * np.array([best[d] if d is not None else 0.0 for d in dbs])


def expand(index: ArmIndex, pool: dict[int, str], scores: Scores, ctx: ArmContext, steps: int,
           exclude: frozenset[int] = frozenset()) -> dict[int, str]:
    """``pool`` expanded ``steps`` times (§3.2.2): each step, every object added by the step
    before (the base objects first) adds its ``expansion_per_seed`` most compatible objects.

    Past ``max_candidates`` (our cap; the paper has none) the base objects stay, most relevant
    first, then the most relevant expanded ones, so each draft's set holds the one before it (a
    base of ``max_candidates`` or more leaves every draft the same set). Objects in ``exclude``
    (suspect objects under ``drop_suspect_evidence``) are never added."""
    out = dict(pool)
    frontier = list(out)
    for _ in range(steps):
        new = []
        for s in frontier:
            for q in neighbours(index, s, ctx.expansion_per_seed, ctx):
                if q not in out and q not in exclude:
                    out[q] = f"expansion of {index.objects[s].id}"
                    new.append(q)
        frontier = new
        if not frontier:
            break
    if len(out) > ctx.max_candidates:
        ps = list(out)
        r = scores.relevance(ps, ctx.relevance, ctx.bm25_weight)
        base = sorted((i for i, p in enumerate(ps) if p in pool), key=lambda i: -r[i])
        order = base + [i for i in np.argsort(-r, kind="stable") if ps[i] not in pool]
        keep = {ps[i] for i in order[: ctx.max_candidates]}
        out = {p: v for p, v in out.items() if p in keep}
    return out


def expanded_pools(index: ArmIndex, pool: dict[int, str], scores: Scores, ctx: ArmContext, drafts: int,
                   exclude: frozenset[int] = frozenset()) -> list[tuple[int, dict[int, str]]]:
    """``drafts`` expanded sets of search objects, ``(steps, set)``: the d-th expands the base
    set d steps (d = 0, 1, …: the base set, then 1 and 2 steps); a set equal to an earlier one is
    expanded one more step (at most ``drafts + 1`` steps), so the sets really differ where the
    collection allows. ``expansion_per_seed = 0`` gives the base set alone."""
    out: list[tuple[int, dict[int, str]]] = []
    seen: set[frozenset[int]] = set()
    steps = 0
    while len(out) < max(1, drafts) and steps <= max(1, drafts) + 1:
        s = expand(index, pool, scores, ctx, steps, exclude)
        key = frozenset(s)
        if key not in seen:
            seen.add(key)
            out.append((steps, s))
        if ctx.expansion_per_seed <= 0:
            break
        steps += 1
    return out


def keyword_coverage(scores: Scores, positions: Sequence[int], weight: float) -> np.ndarray | None:
    """``coverage_weight`` (a measured extension, on by default; 0 = the paper): keywords ×
    ``positions``, each keyword's score (its n-gram list as a query) min-max normalised over
    the set, times ``weight`` —
    the MIP then also counts, per keyword, the best chosen object covering it, so k objects
    that all answer one keyword lose to a set that answers each (JAR's sub-query coverage)."""
    if weight <= 0 or not scores.keyword or not len(positions):
        return None
    ps = list(positions)
    return weight * np.stack([_minmax(s[ps]) for s in scores.keyword])


def scale_table_links(C: np.ndarray, objects: Sequence, scale: float) -> np.ndarray:
    """C with every table–table entry (a join) multiplied by ``scale`` (``table_compatibility_scale``).

    The extension weights relevance against joins as the authors' JAR MIP does on Bird
    (``ilp.py``: coarse relevance ``w4 = 3``, join compatibility ``w3 = 1``), which ARM says its
    MIP follows and whose weights ARM's text does not restate; table–passage and passage–passage
    entries are left as they are (JAR has no passages)."""
    if scale == 1.0 or not len(objects):
        return C
    tables = np.array([bool(o.is_table) for o in objects])
    both = np.logical_and.outer(tables, tables)
    return np.where(both, C * scale, C)


@dataclass
class DraftProgram:
    """One draft's MIP data over its set of search objects: positions, R_i, C_ij and the
    keyword coverage (:func:`keyword_coverage`; None without it)."""

    positions: list[int]
    R: np.ndarray
    C: np.ndarray
    coverage: np.ndarray | None


def draft_program(index: ArmIndex, positions: Sequence[int], scores: Scores, ctx: ArmContext,
                  among: tuple[list[int], np.ndarray] | None = None) -> DraftProgram:
    """R, C and coverage over one set of search objects. ``structure_alignment=False``
    (Figure 4's "information alignment only"): C is zero, so the k most relevant objects win.
    ``among``: ``(positions, their C)`` over a set holding these, C read from it (a pair's C does not
    depend on the other objects of the set)."""
    ps = list(positions)
    objs = [index.objects[p] for p in ps]
    R = database_relevance(objs, scores.relevance(ps, ctx.relevance, ctx.bm25_weight), ctx.database_weight)
    if not ctx.structure_alignment:
        C = np.zeros((len(ps), len(ps)))
    else:
        if among is None:
            C = compatibility_for(index, ps, ctx, said=scores.question)
        else:
            at = {p: i for i, p in enumerate(among[0])}
            rows = [at[p] for p in ps]
            C = among[1][np.ix_(rows, rows)]
        C = scale_table_links(C, objs, ctx.table_compatibility_scale)
    return DraftProgram(ps, R, C, keyword_coverage(scores, ps, ctx.coverage_weight))


def _draft_result(index: ArmIndex, prog: DraftProgram, res: StructureResult) -> dict:
    ps, R = prog.positions, prog.R
    return {
        "ids": [index.objects[ps[i]].id for i in res.chosen],
        "relevance": {index.objects[ps[i]].id: round(float(R[i]), 4) for i in range(len(ps))},
        "links": [{"a": index.objects[ps[i]].id, "b": index.objects[ps[j]].id, "c": round(c, 4)} for i, j, c in res.links],
        "mip": {"status": res.status, "time_limited": res.status != "optimal", "solve_ms": round(res.solve_seconds * 1000, 3),
                "objective": round(res.objective, 6), "greedy_objective": round(res.greedy_objective, 6),
                "pair_variables": res.pair_variables, "candidates": len(ps), "time_limit_s": res.time_limit_s,
                "solved_by": res.solved_by},
    }


def solve_programs(index: ArmIndex, programs: Sequence[DraftProgram], ctx: ArmContext) -> list[dict]:
    """The drafts' MIPs in order (:func:`solve_structures`: each warm-started from the better of its
    greedy solution and the draft before's): per draft its chosen ids (best first), links and solver report."""
    res = solve_structures([(p.positions, p.R, p.C, p.coverage) for p in programs], ctx.k,
                           time_limit_s=ctx.mip_time_limit_s, links_rule=ctx.links,
                           link_weight=LINK_WEIGHT[ctx.link_count])
    return [_draft_result(index, p, r) for p, r in zip(programs, res)]


def solve_draft(index: ArmIndex, positions: Sequence[int], scores: Scores, ctx: ArmContext) -> dict:
    """The MIP over one set of search objects: chosen ids (best first), links, solver report."""
    return solve_programs(index, [draft_program(index, positions, scores, ctx)], ctx)[0]


def solve_drafts(index: ArmIndex, pool: dict[int, str], scores: Scores, ctx: ArmContext,
                 exclude: frozenset[int] = frozenset()) -> list[Draft]:
    """One solved MIP draft per expanded set of the base ``pool`` (§3.2.2; the base set alone
    without structure alignment); no expansion adds an object of ``exclude``."""
    sets = expanded_pools(index, pool, scores, ctx, ctx.drafts, exclude) if ctx.structure_alignment else [(0, pool)]
    among = None
    if ctx.structure_alignment and len(sets) > 1:  # the drafts' sets overlap: C over all of them, once
        every = list(dict.fromkeys(p for _, objs in sets for p in objs))
        among = (every, compatibility_for(index, every, ctx, said=scores.question))
    programs = [draft_program(index, list(objs), scores, ctx, among) for _, objs in sets]
    drafts = []
    for d, ((steps, objs), solved) in enumerate(zip(sets, solve_programs(index, programs, ctx))):
        drafts.append(Draft(draft=d, steps=steps, pool=[index.objects[p].id for p in objs],
                            ids=solved["ids"], links=solved["links"],
                            relevance=solved["relevance"], mip=solved["mip"]))
    return drafts


# --- compatibility C_ij (Appendix B): every C in one place -----------------------------------------
#
# :func:`compatibility_for` is the run's C over a set of search objects; :func:`neighbours` an
# object's most compatible objects, which §3.2.2's expansion adds.
#
# Graded C (Appendix B):
#
# "Compatibility … is computed based on both semantic similarity (cosine similarity of
# embeddings) and exact-value similarity between contents from both objects":
#
# - table–table: the best pair of columns, each scored ``w × cos(header_a, header_b) +
#   (1 − w) × Jaccard(values_a, values_b)`` (one joinable column pair connects two tables).
#   A column's header is written with its table's name (``superhero.gender_id`` → "superhero
#   gender id", ``gender.id`` → "gender id"), as the authors' join-aware retrieval code (JAR,
#   whose MIP ARM follows) serialises a column. Tables without rows (schemas only) have no
#   values: their exact-value part is the Jaccard of the two headers' words, so ``gender.id``
#   and ``superhero.gender_id`` share "gender id" while ``gender.id`` and ``superpower.id``
#   share only "id";
# - table–passage: the best (cell, sentence) pair, ``w × cos + (1 − w) × overlap coefficient``
#   of their word sets;
# - passage–passage: the best (sentence, sentence) pair, scored the same way.
#
# A passage's units are its sentences and its title (the title is how another passage
# mentions it); a table's are its column headers (for table–table) and its distinct cells
# (for table–passage). Word sets drop stopwords; the overlap coefficient is
# ``|A ∩ B| / min(|A|, |B|)``. Tables of two different ``database`` values score 0 (a join
# never crosses databases).
#
# Units (embeddings and word sets) are computed once per object, lazily, in batches, and kept
# on the index (:class:`UnitCache`); :func:`graded_matrix` is vectorised over the candidate
# pool only (one matrix product, then a block maximum per object pair).

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
MAX_SENTENCES = 40
MAX_CELLS = 200
NEIGHBOUR_CANDIDATES = 20  # nearest objects by embedding scored for compatibility when expanding one object


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
    per index."""

    file_name = "units.npz"

    def __init__(self, index: ArmIndex):
        self.index = index
        self._units: dict[int, ObjectUnits] = {}
        self._lock = threading.Lock()
        self._stop = stopwords()

    @classmethod
    def of(cls, index: ArmIndex) -> "UnitCache":
        cache = index.__dict__.get("_unit_cache")
        if cache is None:
            cache = index.__dict__.setdefault("_unit_cache", cls(index))
        return cache

    def _raw(self, p: int) -> tuple[list[str], list[str], list[frozenset[str]]]:
        o = self.index.objects[p]
        if o.is_table:
            cells = list(dict.fromkeys(c.strip() for r in o.rows for c in r if c and c.strip()))[:MAX_CELLS]
            table = split_identifier(o.title.split(".")[-1]) if o.title else ""
            headers = [f"{table} {split_identifier(c) or c}".strip() for c in o.columns]
            if o.rows:
                values = [frozenset(r[i].strip().casefold() for r in o.rows if i < len(r) and r[i].strip())
                          for i in range(len(o.columns))]
            else:
                values = [frozenset(h.casefold().split()) for h in headers]
            return cells, headers, values
        texts = [o.title] + sentences(o.text)[:MAX_SENTENCES]
        return [t for t in texts if t.strip()], [], []

    def load_cached(self) -> bool:
        """Every object's units read from the index's cache folder (:attr:`file_name`), where that
        file is there and was written for these units; whether they were (a damaged or stale file: no)."""
        where = getattr(self.index, "cache_path", None)
        f = where / self.file_name if where is not None else None
        if f is None or not f.is_file():
            return False
        try:
            data = np.load(f)
            raws = [self._raw(p) for p in range(len(self.index.objects))]
            tn = np.array([len(r[0]) for r in raws]); hn = np.array([len(r[1]) for r in raws])
            tv, hv = data["text"].astype(np.float32), data["header"].astype(np.float32)
            same = "units" in data.files and str(data["units"]) == _fingerprint(raws)
            if not (same and len(tv) == tn.sum() and len(hv) == hn.sum()):
                return False
            ta, ha = np.r_[0, np.cumsum(tn)], np.r_[0, np.cumsum(hn)]
            with self._lock:
                for p, r in enumerate(raws):
                    self._units.setdefault(p, ObjectUnits(r[0], tv[ta[p]:ta[p + 1]], [_words(t, self._stop) for t in r[0]],
                                                          r[1], hv[ha[p]:ha[p + 1]], r[2]))
            return True
        except Exception:  # noqa: BLE001 - a damaged cache is recomputed
            return False

    @property
    def complete(self) -> bool:
        """Whether every object's units are loaded."""
        return len(self._units) == len(self.index.objects)

    def pending(self) -> int:
        """How many texts (sentences, cells, columns) of objects whose units are not loaded yet
        :meth:`prime_all` would embed."""
        return sum(len(t) + len(h) for t, h, _ in (self._raw(p) for p in range(len(self.index.objects))
                                                    if p not in self._units))

    def prime_all(self, progress: bool | None | BuildProgress = None) -> None:
        """Units of every object: read from the index's cache folder (:meth:`load_cached`) when
        there, else embedded in batches and written there; ``progress`` as for
        :meth:`ArmIndex.build` (lines between batches), or the reporter to use."""
        if self.load_cached():
            return
        where = getattr(self.index, "cache_path", None)
        f = where / self.file_name if where is not None else None
        prog = progress if isinstance(progress, BuildProgress) else BuildProgress(progress, prefix="ARM")
        units = self.get(list(range(len(self.index.objects))), progress=prog)
        if f is not None:
            try:
                dim = self.index.chunk_vectors.shape[1]
                text = np.concatenate([u.text_vectors for u in units] or [np.zeros((0, dim))]).astype(np.float16)
                header = np.concatenate([u.header_vectors for u in units] or [np.zeros((0, dim))]).astype(np.float16)
                np.savez(f, text=text, header=header, units=np.array(_fingerprint([(u.texts, u.headers, u.values) for u in units])))
            except OSError:
                pass

    def get(self, positions: Sequence[int], progress: BuildProgress | None = None) -> list[ObjectUnits]:
        todo = [p for p in dict.fromkeys(positions) if p not in self._units]
        if todo:
            raws = {p: self._raw(p) for p in todo}
            flat = [t for p in todo for t in raws[p][0]] + [h for p in todo for h in raws[p][1]]
            if progress is not None:
                progress.stage("unit embeddings (sentences, cells, columns)", len(flat), "texts")
            vecs = (embed_batches(self.index.embeddings, flat, progress or BuildProgress(False)) if flat
                    else np.zeros((0, 1), dtype=np.float32))
            if progress is not None:
                progress.end()
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
                  entities: bool = False, said: str = "") -> np.ndarray:
    """C_ij over the objects at ``positions`` (Appendix B; the compatibility section above), symmetric, zero diagonal.

    ``weight`` is w, the share of semantic similarity (1 − w: exact-value similarity);
    ``entities``: a passage pair's C is at least its entity link (:class:`EntityLinks`, a switch),
    not counting the words of ``said`` (the question, for a draft's C)."""
    ps = list(positions)
    n = len(ps)
    C = np.zeros((n, n), dtype=np.float32)
    if n < 2:
        return C.astype(float)
    units = UnitCache.of(index).get(ps)
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
        named = {db: i for i, db in enumerate(dict.fromkeys(o.database for o in objs if o.database is not None))}
        db = np.array([named.get(o.database, -1) for o in objs])
        T[(db[:, None] >= 0) & (db[None, :] >= 0) & (db[:, None] != db[None, :])] = 0.0  # two databases: no join
        C = np.maximum(C, T)
    C = np.clip(C, 0.0, None)
    if entities:
        C = np.maximum(C, EntityLinks.of(index).matrix(ps, said=said))
    np.fill_diagonal(C, 0.0)
    return np.maximum(C, C.T).astype(float)


def neighbour_candidates(index: ArmIndex, p: int, limit: int, *, entities: int = 0) -> list[int]:
    """Objects that may be among ``p``'s most compatible: its ``limit`` nearest objects by
    embedding, the passages it mentions or that mention it, its database's tables, and (with
    ``entities`` > 0) that many passages sharing its rarest capitalised words (:class:`EntityLinks`)."""
    out: dict[int, None] = {}
    for q in list(index.mentions[p]) + _mentioned_by(index)[p]:
        out.setdefault(q)
    o = index.objects[p]
    if o.is_table and o.database is not None:
        for q in index.database_members(o.database):
            out.setdefault(q)
    for q in index.nearest_objects(p, limit + 1):
        out.setdefault(q)
    if entities > 0:
        for q in EntityLinks.of(index).candidates(p, entities):
            out.setdefault(q)
    out.pop(p, None)
    return list(out)


# --- entity links (``entity_links=True``, an extension; off in the paper's setting) --------------
#
# Appendix B scores a passage pair by its best sentence pair: cosine and word overlap. The
# passages of a 3–4-hop question are often joined by one rare name instead, the bridge entity
# ("… was born in Mogadishu" / "Mogadishu is the capital …"), in sentences that are otherwise
# unalike, while near-duplicate distractors ("X is a town in … of Somalia") score high. With
# ``entity_links`` a passage pair's C is at least e_ij, the rarity of the rarest capitalised word
# both passages contain:
#
#     e_ij = max over shared words w of  log(N / df(w)) / log(N)
#
# (df(w): the passages containing w, ≥ 2 for a shared word; N: the collection's objects; so a
# name two passages alone share scores 1 − log 2 / log N, a word every passage has 0), and an
# expanded passage's candidates include the ``ENTITY_CANDIDATES`` passages sharing its rarest
# such words. Capitalised words are ``[A-Z]`` followed by word characters, apostrophes or
# hyphens, case-folded, in the title and the text. Tables have none: table pairs are unchanged.
#
# In a draft's C (:func:`solve_draft`) the words the question itself says (any case, possessives
# also without 's) link nothing: the bridge of a multi-hop question is the name it leaves
# unsaid, while passages sharing a name it says are near-duplicates the keywords find anyway. An
# object's expansion candidates and most compatible objects, cached per object, keep every name.

ENTITY_CANDIDATES = 10
_CAPITALISED = re.compile(r"\b[A-Z][\w'’\-]+")
_WORD = re.compile(r"[\w'’\-]+")


class EntityLinks:
    """Capitalised words per passage, their document frequencies and postings (built once per
    index, lazily, thread-safe): :meth:`score`, :meth:`matrix` and :meth:`candidates`.

    Stored as integer arrays (each word once in ``names``; every passage's sorted word ids and
    every word's passages as CSR slices): on MuSiQue's passages repeated to 945,000, 23 s to build
    and 154 bytes a passage, an 80-object matrix in 2 ms."""

    def __init__(self, objects: Sequence[DataObject]):
        vocab: dict[str, int] = {}
        flat = array("i")
        starts = [0]
        for o in objects:
            if not o.is_table:
                flat.extend(sorted({vocab.setdefault(w.casefold(), len(vocab))
                                    for w in _CAPITALISED.findall(f"{o.title} {o.text}")}))
            starts.append(len(flat))
        self.names: list[str] = list(vocab)  # word id -> the word (case-folded)
        self._ids = vocab
        self.n = max(2, len(objects))
        self._flat = np.frombuffer(flat, dtype=np.int32).copy() if len(flat) else np.zeros(0, dtype=np.int32)
        self._starts = np.asarray(starts, dtype=np.int64)
        owner = np.repeat(np.arange(len(objects), dtype=np.int32), np.diff(self._starts))
        self._postings = owner[np.argsort(self._flat, kind="stable")]  # each word's passages, in collection order
        self.df = np.bincount(self._flat, minlength=len(self.names))
        self._post_starts = np.concatenate([[0], np.cumsum(self.df)])
        with np.errstate(divide="ignore"):
            self._rarity = np.where(self.df >= 2, np.log(self.n / np.maximum(self.df, 1)) / np.log(self.n), 0.0)

    _lock = threading.Lock()

    @classmethod
    def of(cls, index: ArmIndex) -> "EntityLinks":
        links = index.__dict__.get("_entity_links")
        if links is None:
            with cls._lock:
                links = index.__dict__.get("_entity_links")
                if links is None:
                    links = index.__dict__.setdefault("_entity_links", cls(index.objects))
        return links

    def words(self, i: int) -> np.ndarray:
        """Passage ``i``'s capitalised words (ids into ``names``, sorted)."""
        return self._flat[self._starts[i]:self._starts[i + 1]]

    def postings(self, w: int) -> np.ndarray:
        """The passages containing word ``w``, in collection order."""
        return self._postings[self._post_starts[w]:self._post_starts[w + 1]]

    def score(self, i: int, j: int) -> float:
        """e_ij: the rarity of the rarest capitalised word passages ``i`` and ``j`` share (0: none)."""
        shared = np.intersect1d(self.words(i), self.words(j), assume_unique=True)
        return float(self._rarity[shared].max()) if shared.size else 0.0

    @staticmethod
    def words_in(text: str) -> set[str]:
        """Every word of ``text`` as a capitalised word is stored (case-folded), capitalised or not,
        and a possessive also without its 's ("Love's": "love's" and "love")."""
        words = {w.casefold() for w in _WORD.findall(text)}
        return words | {w[:-2] for w in words if len(w) > 2 and w[-2:] in ("'s", "’s")}

    def matrix(self, positions: Sequence[int], said: str = "") -> np.ndarray:
        """e_ij for every pair of ``positions`` (0 on the diagonal), not counting the words of
        ``said``: a name the question says is not the bridge it leaves unsaid."""
        rarity = self._rarity
        drop = {self._ids[w] for w in self.words_in(said) if w in self._ids} if said else set()
        ps = list(positions)
        E = np.zeros((len(ps), len(ps)), dtype=float)
        holders: dict[int, list[int]] = {}
        for a, p in enumerate(ps):
            for w in self.words(p).tolist():
                holders.setdefault(w, []).append(a)
        for w, at in holders.items():
            if len(at) > 1 and rarity[w] > 0 and w not in drop:
                block = np.ix_(at, at)
                E[block] = np.maximum(E[block], rarity[w])
        np.fill_diagonal(E, 0.0)
        return E

    def candidates(self, p: int, limit: int) -> list[int]:
        """The ``limit`` passages sharing ``p``'s rarest capitalised words, rarest word first
        (ties: the word, then collection order)."""
        out: dict[int, None] = {}
        for w in sorted(self.words(p).tolist(), key=lambda w: (int(self.df[w]), self.names[w])):
            if self.df[w] < 2:
                continue
            for q in self.postings(w).tolist():
                if q != p:
                    out.setdefault(q)
                    if len(out) >= limit:
                        return list(out)
        return list(out)


# --- column joins (the drafts in words name a draft's joinable columns) -------------------------

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


# --- the run's C_ij and an object's most compatible objects (§3.2.2's expansion) -------------

def compatibility_for(index: ArmIndex, positions: Sequence[int], ctx: ArmContext, *, said: str = "") -> np.ndarray:
    """The run's C_ij over ``positions`` (Appendix B's graded C); ``said``: the question, whose own
    words join no passages by ``entity_links``; ``same_title_links=False``: passages of one title
    link nothing (:func:`unlink_same_title`)."""
    C = graded_matrix(index, positions, weight=ctx.compatibility_weight, entities=ctx.entity_links, said=said)
    if not ctx.same_title_links:
        C = unlink_same_title(C, [index.objects[p] for p in positions])
    return C


def unlink_same_title(C: np.ndarray, objects: Sequence[DataObject]) -> np.ndarray:
    """C with 0 between every two passages that share a title (``same_title_links=False``).

    Such passages are paragraphs of one document (MuSiQue's collection splits 85 articles so):
    their title units match at C = 1 and their sentences often repeat, so with the paper's C two
    paragraphs of one distractor article outweigh the link from a question's first hop to its
    second, which joins two documents. The paper's collections hold one passage per document."""
    groups: dict[str, list[int]] = {}
    for i, o in enumerate(objects):
        if (doc := _document(o)) is not None:
            groups.setdefault(doc, []).append(i)
    C = np.array(C, dtype=float, copy=True)
    for members in groups.values():
        if len(members) > 1:
            C[np.ix_(members, members)] = 0.0
    return C


def _mentioned_by(index: ArmIndex) -> list[list[int]]:
    if not hasattr(index, "_mentioned_by"):
        back: list[list[int]] = [[] for _ in index.objects]
        for i, targets in enumerate(index.mentions):
            for j in targets:
                back[j].append(i)
        index._mentioned_by = back
    return index._mentioned_by


def neighbours(index: ArmIndex, p: int, limit: int, ctx: ArmContext | None = None) -> list[int]:
    """The ``limit`` objects most compatible with object ``p`` (§3.2.2 expansion) by the run's C
    (cached per object)."""
    ctx = ctx or ArmContext()
    if limit <= 0:
        return []
    cache = index.__dict__.setdefault("_neighbours", {})
    key = (p, limit, ctx.compatibility_weight, ctx.entity_links, ctx.same_title_links)
    if key not in cache:
        cands = neighbour_candidates(index, p, NEIGHBOUR_CANDIDATES,
                                     entities=ENTITY_CANDIDATES if ctx.entity_links else 0)
        C = compatibility_for(index, [p] + cands, ctx)[0, 1:]  # the run's C; no question: every name counts
        order = np.argsort(-C, kind="stable")
        cache[key] = [cands[i] for i in order if C[i] > 0][:limit]
    return cache[key]


def _document(o: DataObject) -> str | None:
    """The document a passage is a paragraph of (its title), the unit ``same_title_links=False``
    keeps apart; None for a table."""
    return None if o.is_table else o.title


# --- the MIP (§3.2.2, Appendix B) -------------------------------------------------------------------
#
# Appendix B chooses k of M candidate objects maximising  Σ_i R_i b_i + Σ_{i,j} C_ij c_ij  over
# ordered pairs (i, j), subject to Σ_i b_i = k, Σ_{i,j} c_ij ≤ 2(k − 1) and 2 c_ij ≤ b_i + b_j.
# C is symmetric, so c_ij and c_ji are set together at the optimum: the ordered program is
# k − 1 unordered links (a tree of connections), each counting C_ij twice. The program here
# has one variable per unordered pair and weighs each counted link by w (``link_count``):
#
#     max  Σ_i R_i b_i + w Σ_{i<j} C_ij c_ij   s.t.  Σ_i b_i = k,  Σ_{i<j} c_ij ≤ k − 1,
#
# w = 2 is Appendix B as written (``link_count="twice"``, the paper's setting); w = 1 counts
# each link once, as the authors' JAR MIP does (``ilp.py``: one direction per column pair,
# ``2 (c_ij + c_ji) ≤ b_i + b_j``, weight ½ (C_ij + C_ji), at most k − 1 joins), the default
# extension. The objective is that program's; the formulation counts the same links more tightly
# (``links="pairs"``, the default): each counted link is paid for by one of its two objects
# (continuous a_ij = "i pays for its link to j", Σ_j a_ij ≤ b_i; a_ij + a_ji ≤ b_i and ≤ b_j).
# k − 1 links among k ≤ 5 objects can always be oriented so, so the integer solutions and their
# objectives are the same; but a fractional b now buys at most b_i of link per object, which
# closes most of the LP bound's gap (a cluster of objects at b = 0.3 no longer counts k − 1 full
# links). An arc exists only for pairs with C_ij > 0 (a pair that cannot add to the objective
# needs none). The greedy warm start, the brute force and the reported objective
# (:func:`selection_value`) count links with the same w.
#
# The solver is CBC through python-mip, silenced, warm-started (``model.start``) with a greedy
# solution, or the draft before's where it lies in the set and is better, and bounded by a time
# limit. Under ``pairs`` it first solves relaxations (:data:`PARTNER_LADDER`): each object keeps
# arcs to its 10 (then 20) most compatible objects, and any other link of it counts τ_i, the
# best C it left out — an upper bound on every set's objective, over a tenth of the arcs. A
# relaxation whose optimum is no better than the best set found (evaluated by
# :func:`selection_value`) proves that set optimal; otherwise the next rung, and last the exact
# program. A proven optimum is ``optimal``, the best solution found in time is ``feasible``, and
# when CBC returns nothing usable the warm start is used (``greedy``). :func:`brute_force` is
# the reference for tests.

@dataclass
class StructureResult:
    """The objects the MIP chose (candidate positions), and how it got them."""

    chosen: list[int]
    objective: float
    status: str  # "optimal" | "feasible" | "greedy"
    solve_seconds: float
    greedy_objective: float
    links: list[tuple[int, int, float]] = field(default_factory=list)
    pair_variables: int = 0
    time_limit_s: float | None = None
    solved_by: str = "program"  # "program" (CBC) | "scored" (sets scored, ENUMERATION_MAX) | "settled" (no choice)

    def to_json(self) -> dict:
        return {
            "chosen": self.chosen,
            "objective": round(self.objective, 6),
            "status": self.status,
            "solve_ms": round(self.solve_seconds * 1000, 3),
            "greedy_objective": round(self.greedy_objective, 6),
            "links": [[i, j, round(c, 4)] for i, j, c in self.links],
            "pair_variables": self.pair_variables,
            "time_limit_s": self.time_limit_s,
            "solved_by": self.solved_by,
        }


# --- objective, greedy and brute force ---------------------------------------------------

def _pairs(C: np.ndarray) -> list[tuple[int, int, float]]:
    n = C.shape[0]
    sym = np.maximum(C, C.T)
    iu, ju = np.triu_indices(n, k=1)
    vals = sym[iu, ju]
    keep = vals > 0
    return [(int(i), int(j), float(v)) for i, j, v in zip(iu[keep], ju[keep], vals[keep])]


LINK_RULES = ("forest", "pairs")
LINK_WEIGHT = {"once": 1.0, "twice": 2.0}
"""The factor on a counted link's C_ij per ``link_count``: 'twice' = Appendix B's sum over ordered
pairs (each link in both directions), 'once' = each unordered link once (JAR's ``ilp.py``)."""


def find_root(parent: dict, x: Any) -> Any:
    """Disjoint sets kept as a parent map (a key it lacks is its own root): ``x``'s root, the
    path halved on the way. :func:`_forest` (Kruskal) and the verifier's ``connected_selection``
    (:func:`atomgraph.nodes.arm.self_verification.connected_part`) both join objects with it."""
    while parent.get(x, x) != x:
        parent[x] = parent.get(parent[x], parent[x])
        x = parent[x]
    return x


def _forest(links: list[tuple[int, int, float]]) -> list[tuple[int, int, float]]:
    """The heaviest spanning forest of ``links`` (Kruskal; ``links`` sorted best first)."""
    parent: dict[int, int] = {}
    kept = []
    for a, b, c in links:
        ra, rb = find_root(parent, a), find_root(parent, b)
        if ra != rb:
            parent[ra] = rb
            kept.append((a, b, c))
    return kept


def coverage_value(chosen: Sequence[int], coverage: np.ndarray | None) -> float:
    """Σ over keywords of the best coverage any chosen object gives it (0 without ``coverage``)."""
    s = list(chosen)
    if coverage is None or not len(coverage) or not s:
        return 0.0
    return float(np.asarray(coverage)[:, s].max(axis=1).sum())


def selection_value(chosen: Sequence[int], R: np.ndarray, C: np.ndarray, max_links: int | None,
                    links_rule: str = "forest", coverage: np.ndarray | None = None,
                    link_weight: float = 1.0) -> tuple[float, list]:
    """The objective of a chosen set and its counted links: the best ``max_links`` pairs
    (``pairs``), or the heaviest spanning forest of the chosen objects (``forest``: no cycle
    counts, so k objects in c connected groups count at most k − c links), each link's C
    times ``link_weight`` (:data:`LINK_WEIGHT`); plus, with ``coverage`` (keywords ×
    objects), each keyword's best coverage by a chosen object. The links keep their C."""
    s = list(chosen)
    links = []
    for a, b in itertools.combinations(sorted(s), 2):
        c = float(max(C[a, b], C[b, a]))
        if c > 0:
            links.append((a, b, c))
    links.sort(key=lambda t: (-t[2], t[0], t[1]))
    if links_rule == "forest":
        links = _forest(links)
    elif links_rule != "pairs":
        raise ValueError(f"unknown links rule {links_rule!r}; expected one of {', '.join(LINK_RULES)}")
    if max_links is not None:
        links = links[: max(0, max_links)]
    value = float(sum(R[i] for i in s)) + link_weight * sum(c for _, _, c in links) + coverage_value(s, coverage)
    return value, links


def greedy(R: np.ndarray, C: np.ndarray, k: int, max_links: int | None, links_rule: str = "forest",
           coverage: np.ndarray | None = None, link_weight: float = 1.0) -> list[int]:
    """Add, one at a time, the object that raises the objective most (the warm start): objects
    scanned in order, one kept only when it beats the best so far by more than 1e-12. Under
    ``pairs`` every step's objectives are computed at once (:func:`pairs_step_values`), under
    ``forest`` set by set (:func:`greedy_by_scan`)."""
    if links_rule != "pairs":
        return greedy_by_scan(R, C, k, max_links, links_rule, coverage, link_weight)
    R = np.asarray(R, dtype=float)
    sym = np.maximum(np.maximum(C, C.T), 0.0)  # a pair counts when C > 0
    cov = None if coverage is None or not len(coverage) else np.asarray(coverage, dtype=float)
    chosen: list[int] = []
    inner = np.zeros(0)  # the links among the chosen objects
    while len(chosen) < min(k, len(R)):
        values = pairs_step_values(chosen, inner, R, sym, max_links, cov, link_weight)
        best, best_v = None, -np.inf
        for j, v in enumerate(values.tolist()):
            if v > best_v + 1e-12 and j not in chosen:
                best, best_v = j, v
        inner = np.concatenate([inner, sym[chosen, best]])
        chosen.append(best)
    return chosen


def pairs_step_values(chosen: list[int], inner: np.ndarray, R: np.ndarray, sym: np.ndarray, max_links: int | None,
                      coverage: np.ndarray | None, link_weight: float) -> np.ndarray:
    """For every object j, :func:`selection_value` of ``chosen + [j]`` under ``pairs`` (``sym``: C
    symmetrised, negatives 0; ``inner``: the links among ``chosen``): Σ R, the best ``max_links`` of
    the set's links, each keyword's best coverage (j already chosen: any value; the caller skips it)."""
    if not chosen:
        return R + coverage.sum(axis=0) if coverage is not None else R.copy()
    value = R[chosen].sum() + R
    if max_links != 0:
        links = np.empty((len(R), len(inner) + len(chosen)))
        links[:, : len(inner)] = inner
        links[:, len(inner):] = sym[chosen].T
        value += link_weight * best_links_sum(links, links.shape[1] if max_links is None else max_links)
    if coverage is not None:
        value += np.maximum(coverage[:, chosen].max(axis=1)[:, None], coverage).sum(axis=0)
    return value


def best_links_sum(links: np.ndarray, cap: int) -> np.ndarray:
    """Each row's ``cap`` largest values summed (the whole row where it holds no more than ``cap``)."""
    if cap >= links.shape[1]:
        return links.sum(axis=1)
    return -np.partition(-links, cap - 1, axis=1)[:, :cap].sum(axis=1)


def greedy_by_scan(R: np.ndarray, C: np.ndarray, k: int, max_links: int | None, links_rule: str = "forest",
                   coverage: np.ndarray | None = None, link_weight: float = 1.0) -> list[int]:
    """:func:`greedy` with each candidate set's objective from :func:`selection_value`, one set at a time."""
    n = len(R)
    chosen: list[int] = []
    while len(chosen) < min(k, n):
        best, best_v = None, -np.inf
        for j in range(n):
            if j in chosen:
                continue
            v, _ = selection_value(chosen + [j], R, C, max_links, links_rule, coverage, link_weight)
            if v > best_v + 1e-12:
                best, best_v = j, v
        chosen.append(best)
    return chosen


def brute_force(R: np.ndarray, C: np.ndarray, k: int, max_links: int | None, links_rule: str = "forest",
                coverage: np.ndarray | None = None, link_weight: float = 1.0) -> tuple[float, tuple[int, ...]]:
    """The optimum by enumeration (reference for tests; n ≤ 12 or so)."""
    n = len(R)
    best = (-np.inf, ())
    for s in itertools.combinations(range(n), min(k, n)):
        v, _ = selection_value(s, R, C, max_links, links_rule, coverage, link_weight)
        if v > best[0] + 1e-12:
            best = (v, s)
    return best


ENUMERATION_MAX = 142506
"""Under ``pairs`` a problem of at most this many sets of k objects (30 objects at k = 5) is first
bounded set by set (:func:`enumerate_best`); when at most :data:`SCORED_MAX` sets can reach the warm
start's objective, they are scored and the best is the optimum, without CBC. Measured with
``bench_arm_solver``'s ``scoring_crossover`` (random drafts, k = 5): bounding is ahead of the program
at 30 objects and behind it at 35."""

SCORED_MAX = 15504
"""The most sets :func:`solve_structures` scores exactly in place of the program: every set of 20
objects at k = 5, where scoring is still several times faster than the program."""

BOUND_MARGIN = 1e-6
"""How far below the floor a set's bound may lie and the set still be scored (rounding: far above it)."""


@functools.lru_cache(maxsize=64)
def _all_sets(n: int, k: int) -> np.ndarray:
    """Every set of ``k`` of ``n`` objects in :func:`itertools.combinations` order, one a column:
    row c holds each set's c-th object (k × C(n, k), the smallest integer type; read-only)."""
    dtype = np.uint8 if n <= 256 else np.intp
    sets = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), k)), dtype=dtype,
                       count=math.comb(n, k) * k).reshape(-1, k).T.copy()
    sets.setflags(write=False)
    return sets


def enumerate_best(R: np.ndarray, C: np.ndarray, k: int, max_links: int | None, coverage: np.ndarray | None = None,
                   link_weight: float = 1.0, floor: float = -np.inf,
                   most: int | None = None) -> tuple[list[int], float, list] | None:
    """The optimum of the ``pairs`` program by scoring every set of ``k`` objects at once (numpy):
    Σ R, the best ``max_links`` links of each set, each keyword's best coverage. The sets within
    1e-9 of the best score are scored again by :func:`selection_value` and the first best in
    :func:`itertools.combinations` order is kept (as :func:`brute_force`). Returns its objects,
    objective and counted links.

    ``floor``: the objective of a set known (the warm start). Sets whose bound lies below it can be
    neither the best nor tie with it, and are not scored. A set's first bound is a sum over its
    objects — R_i, plus p times i's best link (any ``max_links`` links among k objects can be
    oriented so that each object receives at most p = :func:`link_payers` of them, each worth at
    most the receiver's best link), plus the keywords' part: the smaller of the objects' summed
    coverage and every keyword's best coverage by any object; the second bound puts each
    keyword's best coverage by the set in place of that part. ``most``: None is returned when more
    sets than this are left to score."""
    sets = _all_sets(len(R), k)
    R = np.asarray(R, dtype=float)
    sym = np.maximum(np.maximum(C, C.T), 0.0)  # a pair counts when C > 0
    cov = None if coverage is None or not len(coverage) else np.asarray(coverage, dtype=float)
    cap = k * (k - 1) // 2 if max_links is None else max(0, min(max_links, k * (k - 1) // 2))
    if floor > -np.inf:
        u = R + link_weight * (link_payers(k, max_links) if cap else 0) * (sym.max(axis=1) if len(R) else 0.0)
        linked = u[sets].sum(axis=0)  # each set's R and links bound
        bound = linked.copy()
        if cov is not None:
            positive = np.maximum(cov, 0.0)
            bound += np.minimum(positive.sum(axis=0)[sets].sum(axis=0), positive.max(axis=1).sum())
        keep = bound >= floor - BOUND_MARGIN
        sets, linked = sets[:, keep], linked[keep]
    covered = np.zeros(sets.shape[1])
    if cov is not None:  # each keyword's best coverage by the set
        covered += sum(row[sets].max(axis=0) for row in cov)
        if floor > -np.inf:
            keep = linked + covered >= floor - BOUND_MARGIN
            sets, covered = sets[:, keep], covered[keep]
    if most is not None and sets.shape[1] > most:
        return None
    if not sets.shape[1]:  # only where the floor is no set's objective
        return [], -np.inf, []
    score = R[sets].sum(axis=0) + covered
    if cap:  # the best cap of each set's pairs
        links = np.stack([sym[sets[i], sets[j]] for i, j in itertools.combinations(range(k), 2)], axis=1)
        score += link_weight * best_links_sum(links, cap)
    best: tuple[float, list[int], list] = (-np.inf, [], [])
    for column in np.flatnonzero(score >= score.max() - 1e-9):
        chosen = [int(i) for i in sets[:, column]]
        v, counted = selection_value(chosen, R, C, max_links, "pairs", coverage, link_weight)
        if v > best[0] + 1e-12:
            best = (v, chosen, counted)
    return best[1], best[0], best[2]


def link_payers(k: int, max_links: int | None) -> int:
    """p: the counted links each chosen object pays for in :func:`build_model`'s ``pairs``
    program — the least p such that any ``max_links`` links among k objects can be oriented so
    that no object receives more than p (Hakimi: every subgraph has at most p links per object;
    m objects hold at most min(max_links, m(m − 1)/2) links). k = 5, k − 1 links: p = 1."""
    cap = max_links if max_links is not None else k * (k - 1) // 2
    return max([1] + [-(-min(cap, m * (m - 1) // 2) // m) for m in range(2, k + 1)])


def partner_arcs(C: np.ndarray, partners: int | None) -> tuple[list[tuple[int, int, float]], np.ndarray]:
    """The arcs i → j (C_ij > 0, C symmetrised) for each object's ``partners`` most compatible
    objects (all of them for None), and τ_i: the largest C_ij of the objects left out of i's
    list (0 when none is): no link of i to such an object is worth more than τ_i."""
    n = C.shape[0]
    sym = np.maximum(C, C.T).astype(float)
    np.fill_diagonal(sym, 0.0)
    order = np.argsort(-sym, axis=1, kind="stable")
    arcs: list[tuple[int, int, float]] = []
    tau = np.zeros(n)
    for i in range(n):
        row = order[i][order[i] != i]
        m = len(row) if partners is None else min(partners, len(row))
        arcs += [(i, int(j), float(sym[i, j])) for j in row[:m] if sym[i, j] > 0]
        if m < len(row):
            tau[i] = max(0.0, float(sym[i, row[m]]))
    return arcs, tau


PARTNER_LADDER = (10, 20)
"""The ``pairs`` programs :func:`solve_structures` solves before the exact one: each object's 10,
then 20 most compatible objects as its arcs (:func:`partner_arcs`), every other link of it
bounded by τ_i. Each is a relaxation of the MIP (its optimum ≥ the MIP's); when its optimum is
no better than the best set found, that set is optimal (the next rung or the exact program
otherwise)."""

PROOF_TOLERANCE = 1e-7
"""A relaxation's optimum within this of the best set's objective proves that set optimal (CBC's
primal tolerance)."""


# --- the program -------------------------------------------------------------------------------

def choice_program(R: np.ndarray, k: int, coverage: np.ndarray | None = None):
    """The part of the program every links rule shares: the CBC model (silent, one thread, exact
    gaps), the b variables, the objective's relevance and keyword terms, and Σ_i b_i = k. Returns
    ``(model, b, objective)``; the caller adds the links' term and sets the objective."""
    import mip

    n = len(R)
    model = mip.Model(sense=mip.MAXIMIZE, solver_name=mip.CBC)
    model.verbose = 0
    model.threads = 1
    # "optimal" means optimal: CBC's default gaps (relative 1e-4) let a solution it calls optimal
    # fall below the greedy warm start (Bird, links="forest": 5.862127 against 5.862212)
    model.max_mip_gap = 1e-9
    model.max_mip_gap_abs = 1e-9
    # b_i ∈ {0, 1}: object i is chosen
    b = [model.add_var(var_type=mip.BINARY, name=f"b{i}") for i in range(n)]
    # objective: max Σ_i R_i b_i (+ the links' and the keywords' terms)
    objective = mip.xsum(float(R[i]) * b[i] for i in range(n))
    if coverage is not None and len(coverage):  # extension (coverage_weight): + Σ_q Σ_i cov_qi y_qi
        for q, row in enumerate(np.asarray(coverage, dtype=float)):
            ys = [(i, model.add_var(lb=0.0, ub=1.0, name=f"y{q}_{i}")) for i in range(n) if row[i] > 0]
            for i, y in ys:
                model += y <= b[i]  # y_qi ≤ b_i: keyword q is covered only by a chosen object
            if ys:
                model += mip.xsum(y for _, y in ys) <= 1  # Σ_i y_qi ≤ 1: by one object, its best
                objective = objective + mip.xsum(float(row[i]) * y for i, y in ys)
    model += mip.xsum(b) == k  # Σ_i b_i = k: exactly k objects
    return model, b, objective


def build_model(R: np.ndarray, C: np.ndarray, k: int, *, max_links: int | None,
                links_rule: str = "forest", coverage: np.ndarray | None = None, link_weight: float = 1.0,
                partners: int | None = None):
    """The python-mip model (CBC, silent), its b variables, its link variables and what each
    covers: under ``pairs`` an arc (i, j, C_ij) per a_ij, under ``forest`` a pair per c_ij.

    ``links_rule="pairs"`` (the default program) counts the best ``max_links`` links by
    orientation: each counted link is *paid for* by one of its two objects (a_ij: i pays for
    its link to j), each chosen object pays for at most p links (:func:`link_payers`; 1 at k = 5
    and k − 1 links), so links inside any subset of objects are at most p per object — valid for
    every set of k objects, and a tighter relaxation than c_ij ≤ b_i, c_ij ≤ b_j alone. The a are
    continuous: with b integral, the best a counts the best ``max_links`` links of the chosen set
    (a truncated bicircular-matroid polytope, integral). ``partners`` (:data:`PARTNER_LADDER`)
    keeps only each object's ``partners`` best arcs and lets it pay instead for one link worth
    τ_i (s_i, :func:`partner_arcs`): a relaxation, never below the MIP's objective.

    ``links_rule="forest"`` adds a single-commodity flow that makes the counted links (c_ij) a
    spanning forest of the chosen objects: a chosen object is a root (r_i) or receives one
    unit of flow along counted links from a root, and Σ c = k − Σ r; so every group of
    connected objects is a tree and k objects in g groups count k − g links.

    ``coverage`` (keywords × objects, ≥ 0) adds Σ_q Σ_i cov_qi y_qi with y_qi ≤ b_i and
    Σ_i y_qi ≤ 1: each keyword counts the best chosen object covering it (JAR's sub-query
    coverage, reduced to one score per keyword and object). The y are continuous; with b
    integral an optimal y is integral too."""
    import mip
    from mip.cbc import cbc_set_parameter

    n = len(R)
    model, b, objective = choice_program(R, k, coverage)  # b_i, Σ_i R_i b_i (+ keywords), Σ_i b_i = k
    if links_rule == "pairs":
        # the warm start is a set at least as good as greedy's: CBC's primal heuristics, cuts and
        # preprocessing cost more than they save on these programs (measured; the optimum is the same)
        cbc_set_parameter(model.solver, "heur", "off")
        model.cuts = 0
        model.preprocess = 0
        p = link_payers(k, max_links)
        arcs, tau = partner_arcs(C, partners)
        # a_ij ∈ [0, 1]: object i pays for the counted link of i and j
        a = [model.add_var(lb=0.0, ub=1.0, name=f"a{i}_{j}") for i, j, _ in arcs]
        # s_i ∈ [0, p]: (relaxation only) i pays for links to objects outside its arcs, each ≤ τ_i
        s = {i: model.add_var(lb=0.0, ub=p, name=f"s{i}") for i in range(n) if tau[i] > 0}
        # objective: + w Σ_{i→j} C_ij a_ij (+ w Σ_i τ_i s_i) (w = link_weight: 2 = Appendix B's ordered pairs)
        objective = objective + mip.xsum(link_weight * w * v for (_, _, w), v in zip(arcs, a)) + mip.xsum(
            link_weight * float(tau[i]) * v for i, v in s.items())
        if max_links is not None and (a or s):
            # Σ a + Σ s ≤ k − 1 (Appendix B's Σ_{i,j} c_ij ≤ 2(k − 1), each link once)
            model += mip.xsum(a) + mip.xsum(s.values()) <= max_links
        arc_var = {(i, j): v for (i, j, _), v in zip(arcs, a)}
        pays: list[list] = [[] for _ in range(n)]
        for (i, j, _), v in zip(arcs, a):
            pays[i].append(v)
            back = arc_var.get((j, i))
            if back is None:
                model += v <= b[j]  # a_ij ≤ b_j: a link counts only to a chosen object
            elif i < j:
                model += v + back <= b[i]  # a_ij + a_ji ≤ b_i
                model += v + back <= b[j]  # a_ij + a_ji ≤ b_j: a link between chosen objects, counted once
        for i in range(n):
            if pays[i] or i in s:
                # Σ_j a_ij + s_i ≤ p b_i: a chosen object pays for at most p links, others for none
                model += mip.xsum(pays[i]) + (s[i] if i in s else 0) <= p * b[i]
        model.objective = objective
        return model, b, a, arcs
    if links_rule != "forest":
        raise ValueError(f"unknown links rule {links_rule!r}; expected one of {', '.join(LINK_RULES)}")
    pairs = _pairs(C)
    # c_ij ∈ {0, 1}: the connection of objects i and j is counted (one variable per unordered pair)
    c = [model.add_var(var_type=mip.BINARY, name=f"c{i}_{j}") for i, j, _ in pairs]
    # objective: + w Σ_{i<j} C_ij c_ij
    model.objective = objective + mip.xsum(link_weight * w * v for (_, _, w), v in zip(pairs, c))
    if max_links is not None and c:
        model += mip.xsum(c) <= max_links  # Σ_{i<j} c_ij ≤ k − 1 (Appendix B's Σ_{i,j} c_ij ≤ 2(k − 1))
    for (i, j, _), v in zip(pairs, c):
        model += v <= b[i]  # c_ij ≤ b_i
        model += v <= b[j]  # c_ij ≤ b_j: a connection counts only between chosen objects
    if c:  # the counted links form a spanning forest of the chosen objects
        # r_i ∈ {0, 1}: object i is the root of its group; f_az ≥ 0: flow from a to z along a counted link
        r = [model.add_var(var_type=mip.BINARY, name=f"r{i}") for i in range(n)]
        inflow: list[list] = [[] for _ in range(n)]
        outflow: list[list] = [[] for _ in range(n)]
        for (i, j, _), v in zip(pairs, c):
            for x, z in ((i, j), (j, i)):
                f = model.add_var(lb=0.0, name=f"f{x}_{z}")
                model += f <= (k - 1) * v  # f_az ≤ (k − 1) c_az: flow only along counted links
                outflow[x].append(f)
                inflow[z].append(f)
        for i in range(n):
            model += r[i] <= b[i]  # r_i ≤ b_i: only a chosen object is a root
            # Σ_a f_ai + k r_i − Σ_z f_iz ≥ b_i: a chosen object is a root or keeps one unit of flow from one
            model += mip.xsum(inflow[i]) + k * r[i] - mip.xsum(outflow[i]) >= b[i]
        model += mip.xsum(c) == k - mip.xsum(r)  # Σ c_ij = k − Σ_i r_i: each group a tree, no cycle counted
    return model, b, c, pairs


def solve_structure(
    R: Sequence[float],
    C: np.ndarray,
    k: int,
    *,
    max_links: int | None = -1,
    time_limit_s: float = 0.5,
    links_rule: str = "forest",
    coverage: np.ndarray | None = None,
    link_weight: float = 1.0,
) -> StructureResult:
    """Choose ``k`` objects maximising relevance plus compatibility (§3.2.2, Appendix B).

    ``max_links=-1`` (default) is the paper's k−1 links; ``None`` counts every chosen pair.
    The best solution CBC finds within ``time_limit_s`` is used; see the MIP section's comment.
    ``coverage`` (keywords × objects): the optional keyword-coverage term (:func:`build_model`).
    ``link_weight``: the factor on each counted link's C (:data:`LINK_WEIGHT`; 2 = Appendix B's
    ordered pairs), the same in the MIP, the greedy warm start and the reported objective.
    """
    R = np.asarray(R, dtype=float)
    return solve_structures([(list(range(len(R))), R, C, coverage)], k, max_links=max_links, time_limit_s=time_limit_s,
                            links_rule=links_rule, link_weight=link_weight)[0]


@dataclass
class Prepared:
    """One problem of :func:`solve_structures` before its MIP: arrays, k and the link cap, the
    greedy solution (its objective and counted links), and the warm start — the greedy solution, or the problem
    before's where it lies in this set and is better (``best``, its objective and counted
    links). ``settled``: nothing to optimise (k = 0, all objects, or no link and no keyword:
    the top k by relevance), ``best`` is the optimum."""

    R: np.ndarray
    C: np.ndarray
    coverage: np.ndarray | None
    k: int
    cap: int | None
    greedy: list[int]
    greedy_value: float
    greedy_links: list
    best: list[int]
    best_value: float
    counted: list
    settled: bool

    @classmethod
    def of(cls, keys: Sequence[Any], R, C, coverage, k: int, max_links: int | None, links_rule: str,
           link_weight: float, before: Sequence[Any]) -> "Prepared":
        R = np.asarray(R, dtype=float)
        C = np.asarray(C, dtype=float)
        n = len(R)
        if C.shape != (n, n):
            raise ValueError(f"C must be {n}x{n}, got {C.shape}")
        kk = max(0, min(int(k), n))
        cap = max(0, kk - 1) if max_links == -1 else max_links
        if coverage is not None:
            coverage = np.asarray(coverage, dtype=float).reshape(-1, n)
            if not coverage.any():
                coverage = None
        start = greedy(R, C, kk, cap, links_rule, coverage, link_weight)
        g_val, g_links = selection_value(start, R, C, cap, links_rule, coverage, link_weight)
        if kk == 0 or kk == n or (not _pairs(C) and coverage is None):
            # nothing to optimise: all objects, or the top-k by relevance (exactly optimal)
            chosen = list(range(n)) if kk == n else sorted(range(n), key=lambda i: -R[i])[:kk]
            v, links = selection_value(chosen, R, C, cap, links_rule, coverage, link_weight)
            return cls(R, C, coverage, kk, cap, start, g_val, g_links, chosen, v, links, True)
        local = {key: i for i, key in enumerate(keys)}
        prev = [local.get(key) for key in before]
        if len(prev) == kk and None not in prev:
            p_val, p_links = selection_value(prev, R, C, cap, links_rule, coverage, link_weight)
            if p_val > g_val + 1e-12:
                return cls(R, C, coverage, kk, cap, start, g_val, g_links, prev, p_val, p_links, False)
        return cls(R, C, coverage, kk, cap, start, g_val, g_links, start, g_val, g_links, False)


def solve_structures(
    problems: Sequence[tuple[Sequence[Any], Sequence[float], np.ndarray, np.ndarray | None]],
    k: int,
    *,
    max_links: int | None = -1,
    time_limit_s: float = 0.5,
    links_rule: str = "forest",
    link_weight: float = 1.0,
) -> list[StructureResult]:
    """:func:`solve_structure` for several problems ``(keys, R, C, coverage)`` in order (a
    question's drafts; ``keys``: each problem's objects, e.g. positions): each starts from the
    better of its greedy solution and the problem before's solution, where that lies in its set.
    Under ``pairs`` a problem of at most :data:`ENUMERATION_MAX` sets is solved by scoring the sets
    that can reach the warm start (:func:`enumerate_best`) where at most :data:`SCORED_MAX` can; any
    other solves the relaxations of :data:`PARTNER_LADDER` first and the exact program only when none
    proves the best set found optimal. Each result is in its own problem's indices."""
    import mip

    out: list[StructureResult] = []
    before: list[Any] = []
    for keys, R, C, coverage in problems:
        t0 = time.perf_counter()
        p = Prepared.of(keys, R, C, coverage, k, max_links, links_rule, link_weight, before)
        R, C, coverage, n, kk, cap = p.R, p.C, p.coverage, len(p.R), p.k, p.cap
        if p.settled:
            out.append(StructureResult(p.best, p.best_value, "optimal", time.perf_counter() - t0, p.greedy_value,
                                       p.counted, 0, time_limit_s, "settled"))
            before = [keys[i] for i in p.best]
            continue
        best, best_v, counted = p.best, p.best_value, p.counted
        label, variables, solved_by = "greedy", 0, "program"
        programs: list[int | None] = [m for m in PARTNER_LADDER if m < n - 1] if links_rule == "pairs" else []
        programs.append(None)  # the exact program, after the relaxations
        scored = None
        if links_rule == "pairs" and math.comb(n, kk) <= ENUMERATION_MAX:  # few sets to score: no program
            scored = enumerate_best(R, C, kk, cap, coverage, link_weight, floor=best_v, most=SCORED_MAX)
        if scored is not None:
            found, v, links = scored
            if v > best_v + 1e-12:
                best, best_v, counted = found, v, links
            label, solved_by, programs = "optimal", "scored", []
        for partners in programs:
            model, b, c, pairs = build_model(R, C, kk, max_links=cap, links_rule=links_rule, coverage=coverage,
                                             link_weight=link_weight, partners=partners)
            if links_rule == "pairs":  # a warm start: the chosen objects (CBC completes the links; the forest's are left to CBC)
                model.start = [(b[i], 1.0 if i in best else 0.0) for i in range(n)]
            left = time_limit_s - (time.perf_counter() - t0)
            status = model.optimize(max_seconds=max(left, 1e-3))
            variables = len(pairs)
            if model.num_solutions and status in (mip.OptimizationStatus.OPTIMAL, mip.OptimizationStatus.FEASIBLE):
                found = [i for i in range(n) if b[i].x is not None and b[i].x >= 0.5]
                if len(found) == kk:
                    label = "feasible"
                    v, links = selection_value(found, R, C, cap, links_rule, coverage, link_weight)
                    if v > best_v + 1e-12:
                        best, best_v, counted = found, v, links
            if status != mip.OptimizationStatus.OPTIMAL:
                break  # the time limit: the best set found is used, not a proven optimum
            if partners is None or model.objective_value <= best_v + PROOF_TOLERANCE:
                label = "optimal"  # the exact program's optimum, or a relaxation's no better than the best set
                break
        chosen = sorted(best, key=lambda i: -R[i])
        out.append(StructureResult(chosen, best_v, label, time.perf_counter() - t0, p.greedy_value, counted, variables,
                                   time_limit_s, solved_by))
        before = [keys[i] for i in chosen]
    return out


# --- the nodes ----------------------------------------------------------------------------------

def make_structure_node(art: ArmRuntime) -> Callable:
    async def structure(state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        index, scores = await question_scores(art, ctx, state)
        pool = {index.position(c["id"]): c["via"] for c in state.get("candidates") or []}
        exclude = suspect_positions(index) if art.drop_suspect() else frozenset()  # drop_suspect_evidence
        if not pool and len(index.objects):
            # no keyword aligned (the base set is the keywords' objects alone): the retrieve node's
            # problem line says the base is the question's nearest objects; so it is
            want = max(ctx.k, ctx.keyword_pool)
            nearest = [p for p in _top(scores.dense, want + len(exclude)) if p not in exclude]
            pool = {p: "dense (no keyword aligned)" for p in nearest[:want]}
        # embeds units and runs CBC: in a thread, off the event loop
        drafts = await asyncio.to_thread(solve_drafts, index, pool, scores, ctx, exclude)
        notes = []
        if ctx.structure_alignment and len(drafts) < ctx.drafts:
            notes.append(f"structure: {ctx.drafts - len(drafts)} expansion(s) added nothing new; {len(drafts)} draft(s)")
        for d in drafts:
            if d["mip"]["status"] != "optimal":
                notes.append(f"structure: draft {d['draft']}'s MIP stopped at the {ctx.mip_time_limit_s:g} s time limit "
                             f"(mip_time_limit_s); its {d['mip']['status']} solution is used, not a proven optimum")
        return {"drafts": drafts, "problems": notes}

    return structure
