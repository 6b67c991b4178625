"""KAR³'s atomic knowledge base: chunks in one Chroma collection, their atomic questions in
another (``<name>_atoms``), each atom carrying its chunk's id.

Both collections use the cosine space (``configuration={"hnsw": {"space": "cosine"}}``), so
``1 - distance`` is the cosine similarity of a query and a hit. δ applies to one of two
scores (:func:`relevance`): ``pike_l2``, the authors' (their Chroma collections use the
default l2 space, i.e. squared distance, and LangChain scores it ``1 - d/√2``; on unit
vectors ``d = 2 - 2·cos``, so δ = 0.5 keeps cosine ≥ 1 − √2/4 ≈ 0.646), or ``cosine``.
Queries are embedded with ``embed_query``, documents with ``embed_documents``. A search's
queries are embedded together, in one batch, with those of searches running at the same moment
(:mod:`atomgraph.tools.query_embedding`), and an index keeps the
vectors of its recent queries (:data:`QUERY_VECTORS_KEPT`), so the question that backup 1 asks
of the atoms and backup 2 of the chunks, round after round, is embedded once. Vectors always come
from atomgraph's embedding model (never Chroma's default), and each collection records the model
that built it.

Ids are content hashes: a chunk's id is :func:`atomgraph.tools.ingest.passage_id` of its
title and text (the same id ``atomgraph index wikipedia`` gives it), an atom's is a hash of
its chunk id and question.

Resuming: a chunk counts as atomized once its metadata carries ``kar3_atoms`` (the number
of its atoms). :meth:`AtomIndex.write` adds the chunks, replaces their atoms, and only then
sets that mark, so a run killed at any moment leaves every marked chunk complete, and the
next run atomizes exactly the unmarked ones.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from langchain_core.embeddings import Embeddings

from atomgraph.embeddings import embedding_id, embedding_model
from atomgraph.errors import ConfigError, SourceError
from atomgraph.settings import Settings, get_settings
from atomgraph.state.kar3 import AtomHit
from atomgraph.state.run import Evidence
from atomgraph.tools.chroma_source import (
    META_DIM, META_KIND, META_MODEL, check_model, chroma_client, create_collection, get_collection,
)
from atomgraph.tools.ingest import embed_input
from atomgraph.tools.query_embedding import batcher_of

ATOMS_KIND = "atomic_questions"
DONE_KEY = "kar3_atoms"  # chunk metadata: number of atoms written (present = atomized)


def atoms_name(collection: str) -> str:
    """The atom collection that belongs to chunk collection ``collection``."""
    return f"{collection}_atoms"


def atom_id(chunk_id: str, question: str) -> str:
    return hashlib.sha256(f"{chunk_id}\x1f{question}".encode("utf-8")).hexdigest()[:32]


def index_hint(collection: str) -> str:
    return f"atomgraph index atoms CORPUS --collection {collection}"


@dataclass
class Chunk:
    """A chunk to atomize (``embedding`` when copied from an existing collection)."""

    id: str
    title: str
    text: str
    embedding: Any = None
    metadata: dict = field(default_factory=dict)

    def render(self) -> str:
        return embed_input(self.title, self.text)


def _vectors(emb: Embeddings, texts: list[str]) -> list[list[float]]:
    if not texts:
        return []
    encode = getattr(emb, "encode", None)
    if callable(encode):
        return encode(texts).tolist()
    return emb.embed_documents(texts)


QUERY_VECTORS_KEPT = 1024  # recent query vectors an index keeps (a vector is 1.5 KB at 384 floats)
CHUNK_TEXTS_KEPT = 4096  # recent chunk texts an index keeps

METRICS = ("pike_l2", "cosine")


def relevance(cosine: float, metric: str = "pike_l2") -> float:
    """The score δ is compared with: the cosine itself, or the authors' ``1 - ‖q - a‖²/√2``
    for unit vectors (``‖q - a‖² = 2 - 2·cos``)."""
    if metric == "cosine":
        return cosine
    if metric == "pike_l2":
        return 1.0 - (2.0 - 2.0 * cosine) / math.sqrt(2.0)
    raise ConfigError(f"unknown delta_metric {metric!r}; use one of {', '.join(METRICS)}")


def cosine_at(metric: str, delta: float) -> float:
    """The least cosine that δ on ``metric`` keeps (for unit vectors)."""
    return delta if metric == "cosine" else 1.0 - (1.0 - delta) * math.sqrt(2.0) / 2.0


def hit_evidence(hit: AtomHit, source: str) -> Evidence:
    """A hit as the evidence a trace span (or a knowledge source) reports: its chunk, with its atom and tier."""
    return Evidence(title=hit.title, text=hit.text, source=source, id=hit.chunk_id, score=hit.score,
                    metadata={"atom": hit.atom, "via": hit.via})


def _cos(a, b) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


class AtomIndex:
    """The chunk and atom collections of one atomic knowledge base."""

    def __init__(self, collection: str, *, path: str | None = None, host: str | None = None, port: int = 8000,
                 embeddings: Embeddings | str | None = None, settings: Settings | None = None):
        self.settings = settings or get_settings()
        self.name = collection
        self.host = host
        self.port = port
        self.path = None if host else (path or self.settings.chroma_path)
        self._emb_arg = embeddings
        self._embeddings: Embeddings | None = None
        self._client = None
        self._chunks = None
        self._atoms = None
        self._model_checked = False
        self._holds_atoms = False  # seen holding atoms: not counted again (an index emptied later finds nothing)
        self._lock = threading.Lock()
        self._query_vectors: OrderedDict[str, list[float]] = OrderedDict()
        self._vectors_lock = threading.Lock()
        self._chunk_texts: OrderedDict[str, tuple[str, str]] = OrderedDict()  # chunk id → (title, text)
        self._texts_lock = threading.Lock()

    # --- storage --------------------------------------------------------------------------
    @property
    def embeddings(self) -> Embeddings:
        if self._embeddings is None:
            self._embeddings = embedding_model(self._emb_arg if self._emb_arg is not None else self.settings)
        return self._embeddings

    @property
    def model_id(self) -> str:
        return embedding_id(self.embeddings)

    def where(self) -> str:
        return f"{self.host}:{self.port}" if self.host else str(self.path)

    def _client_(self, create: bool):
        if self._client is None:
            self._client = chroma_client(path=self.path, host=self.host, port=self.port, create=create)
        return self._client

    def open(self, *, create: bool = False) -> bool:
        """Open (or with ``create``, create) both collections; False when they do not exist."""
        with self._lock:
            if self._chunks is not None and self._atoms is not None:
                return True
            client = self._client_(create)
            if client is None:
                return False
            if create:
                emb = self.embeddings
                dim = getattr(emb, "dimension", None) or len(emb.embed_query("dimension probe"))
                self._chunks = create_collection(client, self.name, self.model_id, dim)
                self._atoms = _create_atoms(client, atoms_name(self.name), self.model_id, dim)
            else:
                self._chunks = get_collection(client, self.name)
                self._atoms = get_collection(client, atoms_name(self.name))
                if self._chunks is None or self._atoms is None:
                    self._chunks = self._atoms = None
                    return False
            return True

    def unavailable_reason(self) -> str | None:
        """Why this index cannot be read (None: it can). The embedding model both collections
        record is checked once, the first time they are found open: the open handles stay this
        index's for the process, so a run's every round does not check it again."""
        try:
            if not self.open():
                return (f"atom index {self.name!r} (collections {self.name!r} and {atoms_name(self.name)!r}) does not "
                        f"exist at {self.where()}; build it with: {index_hint(self.name)}")
            if not self._model_checked:
                check_model(self._chunks, self.model_id)
                check_model(self._atoms, self.model_id)
                self._model_checked = True
            if not self._holds_atoms and self._atoms.count() == 0:
                return f"atom index {self.name!r} at {self.where()} holds no atomic questions; fill it with: {index_hint(self.name)}"
            self._holds_atoms = True
        except (SourceError, ConfigError) as exc:
            return str(exc)
        return None

    def _need(self):
        if not self.open():
            raise SourceError(self.unavailable_reason() or f"atom index {self.name!r} is missing")
        return self._chunks, self._atoms

    def counts(self) -> dict[str, int]:
        if not self.open():
            return {"chunks": 0, "atoms": 0, "atomized": 0}
        done = self._chunks.get(where={DONE_KEY: {"$gte": 0}}, include=[])["ids"]
        return {"chunks": self._chunks.count(), "atoms": self._atoms.count(), "atomized": len(done)}

    # --- writing --------------------------------------------------------------------------
    def atomized(self, ids: list[str]) -> set[str]:
        """The chunk ids among ``ids`` already atomized (carrying the done mark)."""
        chunks, _ = self._need()
        out: set[str] = set()
        step = 5000
        for i in range(0, len(ids), step):
            got = chunks.get(ids=ids[i:i + step], include=["metadatas"])
            out.update(cid for cid, meta in zip(got["ids"], got["metadatas"]) if (meta or {}).get(DONE_KEY) is not None)
        return out

    def write(self, done: list[tuple[Chunk, list[str]]]) -> int:
        """Store atomized chunks: chunks (if new), their atoms (replacing any partial ones), then
        the done mark. Returns the number of atoms written."""
        if not done:
            return 0
        chunks, atoms = self._need()
        ids = [c.id for c, _ in done]
        existing = {cid: meta or {} for cid, meta in zip(*_get(chunks, ids, ["metadatas"]))}
        fresh = [c for c, _ in done if c.id not in existing]
        atom_rows = []
        for c, questions in done:
            for q in dict.fromkeys(q.strip() for q in questions if q and q.strip()):
                atom_rows.append((atom_id(c.id, q), q, c))
        to_embed = [c.render() for c in fresh if c.embedding is None] + [q for _, q, _ in atom_rows]
        vectors = _vectors(self.embeddings, to_embed)
        chunk_vecs = iter(vectors[: len(to_embed) - len(atom_rows)])
        if fresh:
            chunks.add(ids=[c.id for c in fresh], documents=[c.text for c in fresh],
                       metadatas=[{**c.metadata, "title": c.title} for c in fresh],
                       embeddings=[list(c.embedding) if c.embedding is not None else next(chunk_vecs) for c in fresh])
        atoms.delete(where={"chunk_id": {"$in": ids}})
        if atom_rows:
            atoms.add(ids=[a for a, _, _ in atom_rows], documents=[q for _, q, _ in atom_rows],
                      metadatas=[{"chunk_id": c.id, "title": c.title} for _, _, c in atom_rows],
                      embeddings=vectors[len(to_embed) - len(atom_rows):])
        counts: dict[str, int] = {cid: 0 for cid in ids}
        for _, _, c in atom_rows:
            counts[c.id] += 1
        metas = [{**existing.get(c.id, {**c.metadata, "title": c.title}), DONE_KEY: counts[c.id]} for c, _ in done]
        chunks.update(ids=ids, metadatas=metas)
        return len(atom_rows)

    # --- reading --------------------------------------------------------------------------
    def _embed_queries(self, queries: list[str]) -> list[list[float]]:
        """Each query's vector: kept ones reused, the others embedded together in one batch."""
        with self._vectors_lock:
            kept = {q: self._query_vectors[q] for q in queries if q in self._query_vectors}
            for q in kept:
                self._query_vectors.move_to_end(q)
        missing = list(dict.fromkeys(q for q in queries if q not in kept))
        fresh = dict(zip(missing, batcher_of(self, self.embeddings).vectors(missing)))
        with self._vectors_lock:
            for q, v in fresh.items():
                self._query_vectors[q] = v
            while len(self._query_vectors) > QUERY_VECTORS_KEPT:
                self._query_vectors.popitem(last=False)
        return [kept[q] if q in kept else fresh[q] for q in queries]

    def search_atoms(self, queries: list[str], k: int, threshold: float | None = None,
                     via: str = "proposal", metric: str = "pike_l2") -> list[list[AtomHit]]:
        """Top-``k`` atoms for each query (best first), those whose score on ``metric`` is at
        or above ``threshold``. A hit's ``score`` is on ``metric``."""
        queries = [q for q in queries if q and q.strip()]
        if not queries:
            return []
        relevance(0.0, metric)  # an unknown metric fails before any work
        _, atoms = self._need()
        vecs = self._embed_queries(queries)
        res = atoms.query(query_embeddings=vecs, n_results=k, include=["documents", "metadatas", "distances"])
        kept = []  # each query's atoms at or above the threshold: only their chunks are read
        for ids, docs, metas, dists in zip(res["ids"], res["documents"], res["metadatas"], res["distances"]):
            scored = ((aid, doc, meta, relevance(1.0 - float(d), metric))
                      for aid, doc, meta, d in zip(ids, docs, metas, dists))
            kept.append([a for a in scored if threshold is None or a[3] >= threshold])
        texts = self.chunk_texts(list(dict.fromkeys(meta["chunk_id"] for found in kept for _, _, meta, _ in found)))

        def hit(q: str, aid: str, doc: str | None, meta: dict, score: float) -> AtomHit:
            title, text = texts.get(meta["chunk_id"], (meta.get("title", ""), ""))
            return AtomHit(query=q, atom=doc or "", atom_id=aid, chunk_id=meta["chunk_id"], title=title, text=text,
                           score=round(score, 4), via=via)  # type: ignore[arg-type]

        return [[hit(q, *a) for a in found] for q, found in zip(queries, kept)]

    def search_chunks(self, query: str, k: int, exclude: Iterable[str] = (), threshold: float | None = None,
                      metric: str = "pike_l2") -> list[AtomHit]:
        """The authors' chunk backup: the top-``k`` chunks for ``query`` whose score on
        ``metric`` is at least ``threshold``, minus ``exclude``, in retrieval order; each shown
        with its best-matching atomic question and scored by it (by the chunk itself when it
        has no atoms)."""
        relevance(0.0, metric)
        chunks, atoms = self._need()
        exclude = set(exclude)
        if not query.strip():
            return []
        qvec = self._embed_queries([query])[0]
        res = chunks.query(query_embeddings=[qvec], n_results=k, include=["documents", "metadatas", "distances"])
        rows = [(cid, doc, meta or {}, relevance(1.0 - float(d), metric))
                for cid, doc, meta, d in zip(res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0])]
        rows = [r for r in rows if (threshold is None or r[3] >= threshold) and r[0] not in exclude]
        if not rows:
            return []
        got = atoms.get(where={"chunk_id": {"$in": [r[0] for r in rows]}}, include=["documents", "metadatas", "embeddings"])
        best: dict[str, tuple[float, str, str]] = {}
        for aid, doc, meta, vec in zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"]):
            s = _cos(qvec, vec)
            if meta["chunk_id"] not in best or s > best[meta["chunk_id"]][0]:
                best[meta["chunk_id"]] = (s, doc, aid)
        hits = []
        for cid, doc, meta, chunk_score in rows:
            if cid in best:
                cos, atom, aid = best[cid]
                score = relevance(cos, metric)
            else:
                score, atom, aid = chunk_score, "", ""
            hits.append(AtomHit(query=query, atom=atom, atom_id=aid, chunk_id=cid, title=str(meta.get("title", "")),
                                text=doc or "", score=round(score, 4), via="chunk"))
        return hits

    def chunk_texts(self, ids: list[str]) -> dict[str, tuple[str, str]]:
        """``{chunk id: (title, text)}``. A stored chunk's text never changes (:meth:`write` adds
        only chunks not stored), so the last :data:`CHUNK_TEXTS_KEPT` read are kept and not read again."""
        if not ids:
            return {}
        with self._texts_lock:
            found = {cid: self._chunk_texts[cid] for cid in ids if cid in self._chunk_texts}
        missing = [cid for cid in ids if cid not in found]
        if missing:
            chunks, _ = self._need()
            got = chunks.get(ids=missing, include=["documents", "metadatas"])
            read = {cid: (str((meta or {}).get("title", "")), doc or "")
                    for cid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"])}
            found.update(read)
            with self._texts_lock:
                self._chunk_texts.update(read)
                while len(self._chunk_texts) > CHUNK_TEXTS_KEPT:
                    self._chunk_texts.popitem(last=False)
        return found

    def info(self) -> dict[str, Any]:
        return {"collection": self.name, "atoms_collection": atoms_name(self.name), "where": self.where(),
                "exists": self.open(), **self.counts()}


def _get(collection, ids: list[str], include: list[str]):
    got = collection.get(ids=ids, include=include)
    return got["ids"], got[include[0]]


def _create_atoms(client, name: str, model_id: str, dim: int):
    try:
        coll = client.get_or_create_collection(
            name=name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}},
            metadata={META_MODEL: model_id, META_DIM: int(dim), META_KIND: ATOMS_KIND},
        )
    except Exception as exc:  # noqa: BLE001 - chromadb's error types vary by version
        raise SourceError(f"cannot create Chroma collection {name!r}: {exc}") from exc
    check_model(coll, model_id, dim)
    return coll


def collection_chunks(client, name: str, model_id: str, page: int = 1000, limit: int | None = None) -> Iterator[Chunk]:
    """Every passage of an existing passages collection, with its stored vector."""
    coll = get_collection(client, name)
    if coll is None:
        raise ConfigError(f"Chroma collection {name!r} does not exist; build it with 'atomgraph index wikipedia'")
    check_model(coll, model_id)
    offset, seen = 0, 0
    while True:
        got = coll.get(limit=page, offset=offset, include=["documents", "metadatas", "embeddings"])
        if not got["ids"]:
            return
        for cid, doc, meta, vec in zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"]):
            if limit is not None and seen >= limit:
                return
            seen += 1
            meta = dict(meta or {})
            title = str(meta.pop("title", "") or "")
            meta.pop(DONE_KEY, None)
            yield Chunk(cid, title, doc or "", embedding=vec, metadata=meta)
        offset += len(got["ids"])
