"""Query vectors, embedded together: the queries of one search in one batch, and the searches that
run at the same moment (the questions of an evaluation run in flight at once) in one batch too.

A local embedding model spends most of a single query's time around the model (tokenizer,
module calls, Python), not in it: one query of the default MiniLM costs about as much CPU as
ten in one batch; a Chroma query of 32 vectors costs about as much as three of one. :class:`Batcher`
gathers the calls of concurrent callers (threads: a source's ``search`` runs in a worker thread)
without waiting for anyone: a caller that finds no batch running runs what is pending, its own
keys included, at once; callers that come while a batch runs go together into the next one, run
by one of them. At one question at a time nothing changes. :class:`QueryBatcher` batches query
vectors (KAR³'s atom index); the Chroma source batches its searches, embedding and query.

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
from typing import Any, Callable

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
    keys: list
    done: threading.Event = field(default_factory=threading.Event)
    values: list | None = None
    error: BaseException | None = None
    lead: bool = False  # woken to run the next batch, not with its values


class Batcher:
    """``fn`` (a list of keys → their values, in order) for many threads at once: the keys of
    concurrent callers go to ``fn`` in one call, each distinct key once. A caller that finds no
    batch running runs what is pending, its own keys included; callers that come while a batch
    runs go together into the next one, run by one of them. ``fn``'s error is each caller's."""

    def __init__(self, fn: Callable[[list], list]):
        self.fn = fn
        self._lock = threading.Lock()
        self._pending: list[_Ask] = []
        self._busy = False
        self.batches = 0  # calls of fn (a count for benchmarks and tests)
        self.keys = 0  # distinct keys over those calls

    def run(self, keys: list) -> list:
        ask = _Ask(list(keys))
        if not ask.keys:
            return []
        with self._lock:
            self._pending.append(ask)
            lead = not self._busy
            self._busy = True
        if not lead:
            ask.done.wait()
            if not ask.lead:
                return self._result(ask)
        self._run_pending()  # its own keys are in the batch it runs
        return self._result(ask)

    @staticmethod
    def _result(ask: _Ask) -> list:
        if ask.error is not None:
            raise ask.error
        assert ask.values is not None
        return ask.values

    def _run_pending(self) -> None:
        """Run every pending caller's keys in one call, then hand the lead to one that came
        meanwhile (or end the busy spell)."""
        with self._lock:
            batch, self._pending = self._pending, []
        for ask in batch:
            ask.lead = False
        unique = list(dict.fromkeys(k for ask in batch for k in ask.keys))
        try:
            by_key = dict(zip(unique, self.fn(unique)))
            for ask in batch:
                ask.values = [by_key[k] for k in ask.keys]
        except BaseException as exc:  # noqa: BLE001 - each caller of the batch gets fn's error
            for ask in batch:
                ask.error = exc
        with self._lock:
            self.batches += 1
            self.keys += len(unique)
            nxt = self._pending[0] if self._pending else None
            if nxt is None:
                self._busy = False
            else:
                nxt.lead = True
        for ask in batch:
            ask.done.set()
        if nxt is not None:
            nxt.done.set()


class QueryBatcher(Batcher):
    """:func:`query_vectors` for many threads at once, concurrent callers' queries in one batch."""

    def __init__(self, embeddings: Embeddings):
        self.embeddings = embeddings
        super().__init__(lambda texts: query_vectors(embeddings, texts))

    def vectors(self, texts: list[str]) -> list[list[float]]:
        return self.run(texts)


def batcher_of(owner: Any, embeddings: Embeddings) -> QueryBatcher:
    """``owner``'s batcher for ``embeddings`` (made on first use, kept on ``owner``)."""
    batcher = getattr(owner, "_query_batcher", None)
    if batcher is None or batcher.embeddings is not embeddings:
        batcher = QueryBatcher(embeddings)
        owner._query_batcher = batcher
    return batcher
