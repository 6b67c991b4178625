"""The atom index as a knowledge source (``atoms``): retrieval through atomic questions.

A query is matched against the atomic questions (top ``single_query_top_k``, score ≥ δ on
``delta_metric``);
each hit leads to its chunk, chunks are kept in order of their best atom's score, and where
fewer than ``k`` chunks come back, chunk retrieval fills up (each chunk scored by its
best-matching atom) — KAR³'s retrieval without its loop. So any method that takes sources
(ATOMR's leaves, the RAG baseline) can retrieve through atomic questions:

>>> build_atomr_graph(model=m, sources=[AtomSource("musique")])
"""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from atomgraph.settings import Settings, get_settings
from atomgraph.state.run import Evidence
from atomgraph.state.kar3 import AtomHit
from atomgraph.tools.atom_index import AtomIndex, hit_evidence
from atomgraph.tools.base import KnowledgeSource


class AtomSource(KnowledgeSource):
    name = "atoms"
    kind = "text"
    description = ("Passages found through the atomic questions each passage answers (a KAR³ atom index); "
                   "best for precise factual sub-questions.")

    def __init__(self, collection: str | AtomIndex, *, path: str | None = None, host: str | None = None,
                 port: int = 8000, embeddings: Embeddings | str | None = None, settings: Settings | None = None,
                 atom_top_k: int | None = None, delta: float | None = None, delta_metric: str | None = None,
                 name: str | None = None):
        self.settings = settings or get_settings()
        self.index = collection if isinstance(collection, AtomIndex) else AtomIndex(
            collection, path=path, host=host, port=port, embeddings=embeddings, settings=self.settings)
        params = self.settings.kar3
        self.atom_top_k = atom_top_k if atom_top_k is not None else params.single_query_top_k
        self.delta = delta if delta is not None else params.delta
        self.delta_metric = delta_metric or params.delta_metric
        if name:
            self.name = name

    def unavailable_reason(self) -> str | None:
        return self.index.unavailable_reason()

    def hits(self, query: str, k: int = 3) -> list[AtomHit]:
        """Up to ``k`` chunks (one hit each, best atom first), atoms first, then chunk retrieval."""
        found = self.index.search_atoms([query], max(self.atom_top_k, k), self.delta, metric=self.delta_metric)
        best: dict[str, AtomHit] = {}
        for h in (found[0] if found else []):
            if h.chunk_id not in best:
                best[h.chunk_id] = h
        out = list(best.values())[:k]
        if len(out) < k:
            more = self.index.search_chunks(query, k, metric=self.delta_metric)
            out += [h for h in more if h.chunk_id not in best][: k - len(out)]
        return out

    def search(self, query: str, k: int = 3) -> list[Evidence]:
        if not query or not query.strip() or k < 1:
            return []
        return [hit_evidence(h, self.name) for h in self.hits(query, k)]


def atoms_from_settings(settings: Settings) -> AtomSource:
    """The registry's factory for ``atoms``: collection ``settings.kar3.collection``, else
    ``settings.chroma_collection``."""
    return AtomSource(settings.kar3.collection or settings.chroma_collection, path=settings.chroma_path,
                      host=settings.chroma_host, port=settings.chroma_port, settings=settings)
