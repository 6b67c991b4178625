"""Query vectors, embedded together: the queries of one search in one batch, and the searches that
run at the same moment (the questions of an evaluation run in flight at once) in one batch too.

A local embedding model spends most of a single query's time around the model (tokenizer,
module calls, Python), not in it: one query of the default MiniLM costs about as much CPU as
ten in one batch. :class:`QueryBatcher` gathers the queries of concurrent callers (threads:
a source's ``search`` runs in a worker thread) without waiting for anyone: a caller that finds
no batch running embeds what is pending, its own queries included, at once; callers that come
while a batch runs are embedded together in the next one, by one of them. At one question at a
time nothing changes.

The vectors are those of ``embed_query``: a batch only where the model's query vector is its
document encoding (atomgraph's sentence-transformers models: ``embed_query(q)`` is
``encode([q])[0]``; OpenAI's), or through a model's own ``embed_queries``; another model gets
one ``embed_query`` per query, as before (a model may
embed queries differently from documents). A batch pads its texts to the longest, and the
model's attention mask leaves the padding out, so a query's vector in a batch equals its
vector alone to float rounding (about 1e-7).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from langchain_core.embeddings import Embeddings


def query_vectors(emb: Embeddings, queries: list[str]) -> list[list[float]]:
    """The ``embed_query`` vectors of ``queries``: one query by ``embed_query``; several by a model's
    own ``embed_queries`` where it has one, in one ``embed_documents`` batch where a query is
    embedded as a document (sentence-transformers, OpenAI), else one ``embed_query`` each."""
    if not queries:
        return []
    if len(queries) == 1:
        return [list(emb.embed_query(queries[0]))]
    from atomgraph.embeddings import SentenceTransformerEmbeddings

    many = getattr(emb, "embed_queries", None)
    if callable(many):
        return [list(v) for v in many(queries)]
    if isinstance(emb, SentenceTransformerEmbeddings) or type(emb).__name__ == "OpenAIEmbeddings":
        return emb.embed_documents(queries)
    return [list(emb.embed_query(q)) for q in queries]


@dataclass
class _Ask:
    texts: list[str]
    done: threading.Event = field(default_factory=threading.Event)
    vectors: list[list[float]] | None = None
    error: BaseException | None = None
    lead: bool = False  # woken to embed the next batch, not with its vectors


class QueryBatcher:
    """:func:`query_vectors` for many threads at once, concurrent callers' queries in one batch."""

    def __init__(self, embeddings: Embeddings):
        self.embeddings = embeddings
        self._lock = threading.Lock()
        self._pending: list[_Ask] = []
        self._busy = False
        self.batches = 0  # batches embedded (a count for benchmarks and tests)
        self.queries = 0  # queries embedded

    def vectors(self, texts: list[str]) -> list[list[float]]:
        ask = _Ask(list(texts))
        if not ask.texts:
            return []
        with self._lock:
            self._pending.append(ask)
            lead = not self._busy
            self._busy = True
        if not lead:
            ask.done.wait()
            if not ask.lead:
                return self._result(ask)
        self._embed_pending()  # its own queries are in the batch it embeds
        return self._result(ask)

    @staticmethod
    def _result(ask: _Ask) -> list[list[float]]:
        if ask.error is not None:
            raise ask.error
        assert ask.vectors is not None
        return ask.vectors

    def _embed_pending(self) -> None:
        """Embed every pending caller's queries in one batch, then hand the lead to one that came
        meanwhile (or end the busy spell)."""
        with self._lock:
            batch, self._pending = self._pending, []
        for ask in batch:
            ask.lead = False
        unique = list(dict.fromkeys(t for ask in batch for t in ask.texts))
        try:
            by_text = dict(zip(unique, query_vectors(self.embeddings, unique)))
            for ask in batch:
                ask.vectors = [by_text[t] for t in ask.texts]
        except BaseException as exc:  # noqa: BLE001 - each caller of the batch gets the model's error
            for ask in batch:
                ask.error = exc
        with self._lock:
            self.batches += 1
            self.queries += len(unique)
            nxt = self._pending[0] if self._pending else None
            if nxt is None:
                self._busy = False
            else:
                nxt.lead = True
        for ask in batch:
            ask.done.set()
        if nxt is not None:
            nxt.done.set()


def batcher_of(owner: Any, embeddings: Embeddings) -> QueryBatcher:
    """``owner``'s batcher for ``embeddings`` (made on first use, kept on ``owner``)."""
    batcher = getattr(owner, "_query_batcher", None)
    if batcher is None or batcher.embeddings is not embeddings:
        batcher = QueryBatcher(embeddings)
        owner._query_batcher = batcher
    return batcher
