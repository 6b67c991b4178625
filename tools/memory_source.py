"""An in-memory text source with TF-IDF keyword scoring, for small corpora: notebooks,
quick experiments, benchmarks that must not measure a vector store."""

from __future__ import annotations

import math
from collections import Counter
from typing import Iterable

from atomgraph.state.run import Evidence
from atomgraph.text import words
from atomgraph.tools.base import KnowledgeSource, SourceKind


class InMemorySource(KnowledgeSource):
    def __init__(
        self,
        passages: Iterable[dict | tuple[str, str]],
        name: str = "memory",
        description: str = "A small in-memory collection of passages.",
        kind: SourceKind = "text",
    ):
        self.name, self.description, self.kind = name, description, kind
        self._docs: list[tuple[str, str, Counter]] = []
        for p in passages:
            title, text = (p["title"], p["text"]) if isinstance(p, dict) else p
            self._docs.append((title, text, Counter(words(f"{title} {text}"))))
        df = Counter(t for _, _, tf in self._docs for t in tf)
        n = max(1, len(self._docs))
        self._idf = {t: math.log(1 + n / c) for t, c in df.items()}
        # term -> (passage, its weight (1 + log tf) x idf), passages in order: a query visits only
        # the passages that hold its terms
        self._postings: dict[str, list[tuple[int, float]]] = {}
        for i, (_, _, tf) in enumerate(self._docs):
            for t, c in tf.items():
                self._postings.setdefault(t, []).append((i, (1 + math.log(c)) * self._idf[t]))

    def unavailable_reason(self) -> str | None:
        return None if self._docs else "the collection is empty"

    # A collection this small is searched in place (well under a millisecond), not handed to a worker
    # thread: the hand-off costs more than the search, and a loaded machine multiplies it.
    INLINE_MAX_PASSAGES = 100

    def _in_place(self) -> bool:  # a subclass's own search (it may do I/O) goes to a thread as usual
        return (len(self._docs) <= self.INLINE_MAX_PASSAGES and type(self).search is InMemorySource.search
                and type(self).operate is KnowledgeSource.operate)

    async def asearch(self, query: str, k: int = 3) -> list[Evidence]:
        if self._in_place():
            return self.search(query, k)
        return await super().asearch(query, k)

    async def aoperate(self, operator: str, args: list[str], question: str, k: int = 3) -> list[Evidence]:
        if self._in_place():
            return self.operate(operator, args, question, k)
        return await super().aoperate(operator, args, question, k)

    def search(self, query: str, k: int = 3) -> list[Evidence]:
        scores: dict[int, float] = {}
        for t in set(words(query)):  # each passage's score summed over the query's terms in one order
            for i, w in self._postings.get(t, ()):
                scores[i] = scores.get(i, 0) + w
        scored = [(s, i, *self._docs[i][:2]) for i, s in scores.items() if s > 0]
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [
            Evidence(title=title, text=text, source=self.name, id=str(i), score=round(s, 4))
            for s, i, title, text in scored[:k]
        ]
