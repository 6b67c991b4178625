"""ARM and KAR³ as LangChain retrievers: question → the method's chosen objects / chunks as
``Document``s whose metadata carries the method's evidence.

>>> from atomgraph.retrievers import ArmRetriever, Kar3Retriever
>>> arm = ArmRetriever.from_documents(docs, model=m, k=3)          # LangChain Documents as ARM objects
>>> kar3 = Kar3Retriever.from_documents(docs, model=m, collection="mydocs")   # atomized once, then reused
>>> arm.invoke("Which singers performed in 2014?")                 # sync; ainvoke / batch / LCEL too
>>> create_retrieval_chain(kar3, combine_docs_chain)               # in any retrieval chain

``ArmRetriever`` runs the ``arm`` graph without its answer stage (decompose → align →
retrieve → structure → verify → aggregate) and returns the voted objects in order;
each document's metadata holds its id, title, kind, rank, its vote (votes, weight,
confidence), the drafts that held it and the verifications that selected it, and the run's
keywords and aligned n-grams. ``Kar3Retriever`` runs the ``kar3`` loop (propose → retrieve
atoms → select) and stops before the answer; each chunk's metadata holds the atomic question
that led to it, its score, the retrieval tier, the round it was chosen in, and why the loop
ended. ``k`` (the constructor's, ``search_kwargs={"k": n}``, or ``invoke(q, k=n)``, the last
winning) is the number of documents returned, as LangChain's retriever contract has it (fewer
only when the collection holds fewer): ARM's vote (§3.3) ranks every draft object, the ones its
verifier kept first, so it returns k whenever the drafts hold k; each document's metadata says
whether a verifier kept it (``verified``); KAR³'s loop may stop
before N chunks, and the retriever tops its chosen chunks up with the best-scored chunks its
atom retrieval found (``metadata["chosen"]`` False). Model calls run as child runs of the
retriever's run.
"""

from __future__ import annotations

import uuid
from typing import Any, Sequence

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from atomgraph.errors import ConfigError
from atomgraph.lc import _get


def _k(search_kwargs: dict, k: int | None, default: int) -> int:
    unknown = set(search_kwargs) - {"k"}
    if unknown:
        raise ConfigError(f"search_kwargs take only 'k', not {', '.join(sorted(unknown))}")
    value = k if k is not None else search_kwargs.get("k", default)
    if not isinstance(value, int) or value < 1:
        raise ConfigError(f"k must be a positive integer, not {value!r}")
    return value


class _MethodRetriever(BaseRetriever):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    graph: Any = None
    search_kwargs: dict = Field(default_factory=dict)
    context: dict = Field(default_factory=dict)  # run parameters for every call
    k: int | None = None  # documents returned (over search_kwargs["k"]; a call's k wins)

    def _k(self, k: int | None) -> int:
        return _k(self.search_kwargs, k if k is not None else self.k, self.default_k)

    default_k: int = 5


# --- ARM ----------------------------------------------------------------------------------

class ArmRetriever(_MethodRetriever):
    """The ``arm`` graph, retrieval only, as a retriever (default ``k`` = 5)."""

    index: Any = None  # the ArmIndex whose objects the documents show (resolved from settings if None)
    objects: Any = None  # ArmRetriever(objects=..., model=...): an ArmIndex, DataObjects or an objects.jsonl path
    model: Any = None
    settings: Any = None

    def model_post_init(self, __context: Any) -> None:
        if self.graph is None and self.objects is not None:
            from atomgraph.graphs.arm import build_arm_graph
            from atomgraph.nodes.arm.pipeline import Collection

            self.index = Collection(self.objects).index()
            self.graph = build_arm_graph(model=self.model, settings=self.settings, objects=self.index)
        elif self.graph is None:
            from atomgraph.graphs.arm import build_arm_graph

            self.graph = build_arm_graph(model=self.model, settings=self.settings)

    @classmethod
    def from_documents(cls, documents: Sequence[Document], *, model: Any = None, settings: Any = None,
                       embeddings: Any = None, k: int = 5, **context: Any) -> "ArmRetriever":
        """LangChain documents as ARM's objects (passages; a document whose metadata has
        ``columns`` is a table), indexed once; no JSONL export needed."""
        from atomgraph.tools.arm_index import ArmIndex
        from atomgraph.tools.langchain_sources import documents_to_objects

        index = ArmIndex.build(documents_to_objects(documents), embeddings=embeddings, use_cache=False)
        return cls.from_objects(index, model=model, settings=settings, k=k, **context)

    @classmethod
    def from_objects(cls, objects: Any, *, model: Any = None, settings: Any = None, k: int = 5,
                     **context: Any) -> "ArmRetriever":
        """``objects``: an ArmIndex, a list of DataObject, or an objects.jsonl path."""
        from atomgraph.graphs.arm import build_arm_graph
        from atomgraph.nodes.arm.pipeline import Collection

        index = Collection(objects).index()
        graph = build_arm_graph(model=model, settings=settings, objects=index)
        return cls(graph=graph, index=index, search_kwargs={"k": k}, context=context)

    def _run_context(self, k: int | None) -> dict:
        return {**self.context, "k": self._k(k), "answer": False}

    def _index(self, ctx: dict):
        if self.index is None:
            from atomgraph.nodes.arm.pipeline import Collection
            from atomgraph.settings import get_settings

            arm = get_settings().arm
            self.index = Collection(None).index(ctx.get("objects") or arm.objects, ctx.get("index_cache") or arm.index_cache)
        return self.index

    def _documents(self, out: dict, ctx: dict) -> list[Document]:
        if out.get("error"):
            raise ConfigError(f"ARM could not retrieve: {out['error']}") if "objects" in str(out["error"]) else \
                RuntimeError(f"ARM could not retrieve: {out['error']}")
        return arm_documents(out, self._index(ctx))

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None) -> list[Document]:
        ctx = self._run_context(k)
        out = self.graph.invoke({"question": query}, {"callbacks": run_manager.get_child()}, context=ctx)
        return self._documents(out, ctx)

    async def _aget_relevant_documents(self, query: str, *, run_manager, k: int | None = None) -> list[Document]:  # type: ignore[override]
        ctx = self._run_context(k)
        out = await self.graph.ainvoke({"question": query}, {"callbacks": run_manager.get_child()}, context=ctx)
        return self._documents(out, ctx)


def arm_documents(out: dict, index: Any) -> list[Document]:
    """The retrieved objects of one ``arm`` run, in order, with their evidence."""
    trace = out.get("trace") or {}
    votes = {v["id"]: v for v in trace.get("votes") or []}
    drafts = trace.get("drafts") or []
    verdicts = trace.get("verdicts") or []
    keywords = list(trace.get("keywords") or [])
    aligned = [a.get("ngram") for a in trace.get("aligned") or [] if isinstance(a, dict)]
    docs = []
    for rank, oid in enumerate(out.get("retrieved_ids") or [], 1):
        obj = index.objects[index.position(oid)]
        vote = votes.get(oid, {})
        meta = {
            "id": obj.id, "title": obj.title, "kind": obj.kind, "source": "arm", "rank": rank,
            "votes": vote.get("votes", 0), "vote_weight": vote.get("weight", 0.0),
            "confidence": vote.get("confidence", 0.0),
            "in_drafts": [n for n, d in enumerate(drafts) if oid in (d.get("ids") or [])],
            "verified_in": [v.get("draft") for v in verdicts if oid in (v.get("selected") or [])],
            "keywords": keywords, "aligned_ngrams": aligned,
            "verified": vote.get("selected", 0) > 0,  # False: no verifier kept it (ranked by its drafts)
        }
        if obj.is_table:
            meta.update(columns=list(obj.columns), database=obj.database)
        text = obj.text
        if obj.is_table and obj.rows:
            header = " | ".join(obj.columns)
            rows = "\n".join(" | ".join(r) for r in obj.rows[:20])
            text = (text + "\n" if text else "") + f"{header}\n{rows}"
        docs.append(Document(page_content=text, metadata={k: v for k, v in meta.items() if v is not None}, id=obj.id))
    return docs


# --- KAR³ ---------------------------------------------------------------------------------

class Kar3Retriever(_MethodRetriever):
    """The ``kar3`` loop, stopped before its answer, as a retriever (default ``k`` = N = 5)."""

    @classmethod
    def from_source(cls, source: Any, *, model: Any = None, settings: Any = None, k: int = 5,
                    **context: Any) -> "Kar3Retriever":
        """Over an atom source (:class:`~atomgraph.tools.atom_source.AtomSource`) or an atom
        collection's name."""
        from atomgraph.graphs.kar3 import build_kar3_graph
        from atomgraph.tools.atom_source import AtomSource

        if isinstance(source, str):
            source = AtomSource(source, settings=settings)
        graph = build_kar3_graph(model=model, sources=[source], settings=settings)
        return cls(graph=graph, search_kwargs={"k": k}, context=context)

    @classmethod
    def from_documents(cls, documents: Sequence[Document], *, model: Any = None, collection: str = "documents",
                       settings: Any = None, embeddings: Any = None, k: int = 5, **context: Any) -> "Kar3Retriever":
        """LangChain documents as KAR³'s chunks: atomized (the atomizer model, once per chunk;
        chunks already atomized in ``collection`` are skipped) into an atom index, then retrieved
        from. The atomizing statistics are in ``retriever.metadata["atomize"]``."""
        from atomgraph.tools.atom_index import AtomIndex
        from atomgraph.tools.atom_source import AtomSource

        from atomgraph.settings import get_settings

        settings = settings or get_settings()
        index = AtomIndex(collection, embeddings=embeddings, settings=settings)
        stats = atomize_documents(documents, index, model=model, settings=settings)
        retriever = cls.from_source(AtomSource(index, settings=settings), model=model, settings=settings, k=k, **context)
        retriever.metadata = {"atomize": stats}
        return retriever

    def _prepared(self, k: int | None) -> tuple[Any, dict, dict]:
        from langgraph.checkpoint.memory import InMemorySaver

        if getattr(self.graph, "checkpointer", None) is None:  # stopping before the answer needs one
            from atomgraph.checkpoint import serializer

            self.graph = self.graph.copy({"checkpointer": InMemorySaver(serde=serializer())})
        config = {"configurable": {"thread_id": f"kar3-retriever-{uuid.uuid4().hex}"}}
        return self.graph, config, {**self.context, "max_chunks": self._k(k)}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None) -> list[Document]:
        graph, config, ctx = self._prepared(k)
        try:
            graph.invoke({"question": query}, {**config, "callbacks": run_manager.get_child()}, context=ctx,
                         interrupt_before=["answer"])
            return kar3_documents(graph.get_state(config).values, k=ctx["max_chunks"])
        finally:
            graph.checkpointer.delete_thread(config["configurable"]["thread_id"])

    async def _aget_relevant_documents(self, query: str, *, run_manager, k: int | None = None) -> list[Document]:  # type: ignore[override]
        graph, config, ctx = self._prepared(k)
        try:
            await graph.ainvoke({"question": query}, {**config, "callbacks": run_manager.get_child()}, context=ctx,
                                interrupt_before=["answer"])
            return kar3_documents((await graph.aget_state(config)).values, k=ctx["max_chunks"])
        finally:
            await graph.checkpointer.adelete_thread(config["configurable"]["thread_id"])


def kar3_documents(state: dict, k: int | None = None) -> list[Document]:
    """The chunks one ``kar3`` loop chose, in order, with the atom that led to each; with ``k``,
    topped up to ``k`` with the best-scored other chunks its rounds retrieved (``chosen`` False)."""
    rounds = list(state.get("rounds") or [])
    exit_reason = state.get("exit") or (_get(rounds[-1], "ended") if rounds else None)
    if exit_reason in ("no_index", "invalid_question"):
        notes = "; ".join(_get(rounds[-1], "notes") or []) if rounds else ""
        raise ConfigError(f"KAR³ could not retrieve ({exit_reason}): {notes or state.get('error') or ''}".rstrip(": "))
    chosen_round = {}
    for r in rounds:
        choice = _get(r, "choice")
        if choice is not None:
            chosen_round[_get(choice, "chunk_id")] = _get(r, "number")
    docs = []
    for rank, hit in enumerate(state.get("chosen") or [], 1):
        cid = _get(hit, "chunk_id")
        meta = {"id": cid, "title": _get(hit, "title") or "", "source": "kar3", "rank": rank,
                "atom": _get(hit, "atom") or "", "score": _get(hit, "score"), "via": _get(hit, "via"),
                "query": _get(hit, "query"), "round": chosen_round.get(cid), "rounds": len(rounds),
                "exit": exit_reason}
        meta["chosen"] = True
        docs.append(Document(page_content=_get(hit, "text") or "", metadata={x: v for x, v in meta.items() if v is not None},
                             id=cid))
    if k is not None and len(docs) < k:  # the loop stopped early: the best other chunks it retrieved
        seen = {d.id for d in docs}
        offered = [(h, _get(r, "number")) for r in rounds for h in (_get(r, "hits") or [])]
        offered.sort(key=lambda x: -(_get(x[0], "score") or 0.0))
        for hit, number in offered:
            cid = _get(hit, "chunk_id")
            if len(docs) >= k:
                break
            if cid in seen:
                continue
            seen.add(cid)
            meta = {"id": cid, "title": _get(hit, "title") or "", "source": "kar3", "rank": len(docs) + 1,
                    "atom": _get(hit, "atom") or "", "score": _get(hit, "score"), "via": _get(hit, "via"),
                    "query": _get(hit, "query"), "round": number, "rounds": len(rounds), "exit": exit_reason,
                    "chosen": False}
            docs.append(Document(page_content=_get(hit, "text") or "",
                                 metadata={x: v for x, v in meta.items() if v is not None}, id=cid))
    return docs


def atomize_documents(documents: Sequence[Document], index: Any, *, model: Any = None, settings: Any = None) -> dict:
    """Atomize LangChain documents into ``index`` (an AtomIndex): the chunks not yet atomized
    go to the atomizer; returns the statistics (atomized, atoms, failed, skipped)."""
    from atomgraph.nodes.kar3.index import atomize_chunks
    from atomgraph.nodes.runtime import MethodRuntime
    from atomgraph.nodes.sync import run_sync
    from atomgraph.tools.langchain_sources import documents_to_chunks

    chunks = documents_to_chunks(documents)
    rt = MethodRuntime.for_method("kar3_index", model, [], settings)
    index.open(create=True)
    done = index.atomized([c.id for c in chunks])
    pending = [c for c in chunks if c.id not in done]
    stats: dict = {"atomized": 0, "atoms": 0, "failed": 0}
    if pending:
        stats, _ = run_sync(atomize_chunks(rt, index, pending, rt.params(None)))
    stats["skipped"] = len(chunks) - len(pending)
    if stats.get("failed"):  # not marked done: the next call atomizes them again
        import logging

        logging.getLogger(__name__).warning("%d of %d documents could not be atomized (retried on the next call): %s",
                                            stats["failed"], len(pending), stats.get("failures", [])[:3])
    return stats


__all__ = ["ArmRetriever", "Kar3Retriever", "arm_documents", "kar3_documents", "atomize_documents"]
