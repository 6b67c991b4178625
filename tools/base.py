"""The one small interface every knowledge source implements.

A source has a ``name``, a one-line ``description`` (shown to source-selection prompts),
a ``kind`` (``text``, ``web`` or ``kg``) and ``search(query, k)`` returning
:class:`~atomgraph.state.Evidence`. ``operate`` lets a source answer an atomic operator
(Search / Relate / Filter) natively — the Wikidata source does, with SPARQL — and by
default falls back to ``search`` on the operator's arguments.

Each source is also a LangChain retriever (``as_retriever``) and tool (``as_tool``).

A run reads its sources as one :class:`SourceSet` (those usable, and why the others are not);
building sources from names, objects or settings is :mod:`atomgraph.tools.registry`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Iterable, Literal, Mapping

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool

from atomgraph.errors import SourceUnavailable
from atomgraph.state.run import Evidence, RetrieverCall, render_evidence

SourceKind = Literal["text", "web", "kg"]


class KnowledgeSource(ABC):
    name: str = "source"
    description: str = ""
    kind: SourceKind = "text"

    def unavailable_reason(self) -> str | None:
        """Why this source cannot be used at all (e.g. missing API key), or None."""
        return None

    @abstractmethod
    def search(self, query: str, k: int = 3) -> list[Evidence]:
        """Top-``k`` evidence for ``query``. Raises SourceError after bounded retries."""

    async def asearch(self, query: str, k: int = 3) -> list[Evidence]:
        return await asyncio.to_thread(self.search, query, k)

    def operate(self, operator: str, args: list[str], question: str, k: int = 3) -> list[Evidence]:
        """Evidence for one atomic operator call (arguments already resolved)."""
        return self.search(" ".join(a for a in args if a).strip() or question, k)

    async def aoperate(self, operator: str, args: list[str], question: str, k: int = 3) -> list[Evidence]:
        return await asyncio.to_thread(self.operate, operator, args, question, k)

    # --- LangChain adaptors -------------------------------------------------------------
    def as_retriever(self, k: int | None = None, *, search_kwargs: dict | None = None, **kwargs) -> "SourceRetriever":
        """This source as a LangChain retriever: ``as_retriever(search_kwargs={"k": 5})``
        (LangChain's convention) or ``as_retriever(k=5)``; the default ``k`` is 3."""
        search_kwargs = dict(search_kwargs or {})
        unknown = set(search_kwargs) - {"k"}
        if unknown:
            from atomgraph.errors import ConfigError

            raise ConfigError(f"search_kwargs of a knowledge source take only 'k', not {', '.join(sorted(unknown))}")
        k = int(search_kwargs.get("k", k if k is not None else 3))
        return SourceRetriever(source=self, k=k, **kwargs)

    def as_tool(self, k: int = 3) -> BaseTool:
        source = self

        def _run(query: str) -> str:
            return render_evidence(source.search(query, k)) or "No results."

        async def _arun(query: str) -> str:
            return render_evidence(await source.asearch(query, k)) or "No results."

        return StructuredTool.from_function(
            func=_run,
            coroutine=_arun,
            name=f"search_{source.name}",
            description=source.description or f"Search {source.name}.",
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def evidence_to_document(ev: Evidence) -> Document:
    meta = {"title": ev.title, "source": ev.source, "url": ev.url, "id": ev.id, "score": ev.score, **ev.metadata}
    return Document(page_content=ev.text, metadata={k: v for k, v in meta.items() if v is not None})


class SourceRetriever(BaseRetriever):
    """A knowledge source as a LangChain retriever (``invoke(query, k=5)`` overrides ``k``)."""

    source: KnowledgeSource
    k: int = 3

    model_config = {"arbitrary_types_allowed": True}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None) -> list[Document]:
        return [evidence_to_document(e) for e in self.source.search(query, k or self.k)]

    async def _aget_relevant_documents(self, query: str, *, run_manager, k: int | None = None) -> list[Document]:  # type: ignore[override]
        return [evidence_to_document(e) for e in await self.source.asearch(query, k or self.k)]


class RetrieverRun:
    """One retrieval as a LangChain retriever run (see :func:`retriever_run`): set the
    documents found with :meth:`end`, or the failure with :meth:`fail`."""

    def __init__(self, manager: Any = None):
        self.manager = manager
        self.found: list[Evidence | Document] = []
        self.error: BaseException | str | None = None

    def end(self, found: Iterable[Evidence | Document]) -> None:
        self.found = list(found)

    @property
    def documents(self) -> list[Document]:
        """What was found, as LangChain documents (made when a handler is told, not on every retrieval)."""
        return [evidence_to_document(d) if isinstance(d, Evidence) else d for d in self.found]

    def fail(self, error: BaseException | str) -> None:
        self.error = error


def _current_config() -> dict:
    """The run config of the node retrieving, as it is (only read here: ``configure`` copies what it
    takes); ``ensure_config``'s defaults outside a run."""
    from langchain_core.runnables.config import ensure_config, var_child_runnable_config

    return var_child_runnable_config.get() or ensure_config()


@contextlib.asynccontextmanager
async def retriever_run(name: str, query: str, *, tags: list[str] | None = None,
                        metadata: dict | None = None) -> AsyncIterator[RetrieverRun]:
    """A retrieval shown as a LangChain retriever run (``on_retriever_start`` with the query,
    ``on_retriever_end`` with the documents, or ``on_retriever_error``), a child of the current
    run (the node that retrieves), so LangSmith and Studio show retrieval spans next to the
    stage-tagged model calls. Runs started inside (a user's own LangChain retriever) nest under
    it. Costs nothing when no callback handler listens.

    >>> async with retriever_run("atoms", query, metadata={"via": "proposal"}) as run:
    ...     run.end(documents)          # or run.fail(error)
    """
    from langchain_core.callbacks import AsyncCallbackManager, BaseCallbackManager
    from langchain_core.runnables.config import var_child_runnable_config

    config = _current_config()
    inherited = config.get("callbacks")
    if isinstance(inherited, BaseCallbackManager) and not inherited.handlers:
        # inside a run nothing listens to: the run's own configure (at its start) found no handler,
        # tracer or debug output, and a child run inherits only its parent's handlers
        yield RetrieverRun()
        return
    manager = AsyncCallbackManager.configure(
        inheritable_callbacks=config.get("callbacks"), inheritable_tags=config.get("tags"),
        inheritable_metadata=config.get("metadata"), local_tags=tags, local_metadata=metadata,
    )
    if not manager.handlers:
        yield RetrieverRun()
        return
    span = await manager.on_retriever_start({"name": name, "id": ["atomgraph", "tools", name]}, query, name=name)
    run = RetrieverRun(span)
    token = var_child_runnable_config.set({**config, "callbacks": span.get_child()})
    try:
        yield run
    except BaseException as exc:
        await span.on_retriever_error(exc)
        raise
    finally:
        var_child_runnable_config.reset(token)
    if run.error is not None:
        err = run.error if isinstance(run.error, BaseException) else RuntimeError(str(run.error))
        await span.on_retriever_error(err)
    else:
        await span.on_retriever_end(run.documents)


# Cuts a source made to a reply (a row, byte or time bound: tools/sparql_backends.py), collected per source
# call by :func:`recorded_retrieval` into ``RetrieverCall.cut``. The list is shared with the worker thread
# a sync source runs in (``asyncio.to_thread`` copies the context, not the list).
_CUTS: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("atomgraph_source_cuts", default=None)


def note_cut(why: str) -> None:
    """Record that the current source call's reply was cut (``why``), on its retriever call record."""
    cuts = _CUTS.get()
    if cuts is not None:
        cuts.append(why)


def screen_evidence(hits: Iterable[Evidence], *, drop: bool = False) -> tuple[list[Evidence], int, int]:
    """``(kept, suspect, dropped)``: every hit that addresses the model (:mod:`atomgraph.injection`)
    marked ``suspect_instruction``, or left out when ``drop`` (the ``drop_suspect_evidence``
    switch). Where evidence enters every method: :func:`recorded_retrieval` calls it."""
    from atomgraph.injection import screen

    return screen(hits, Evidence.render, drop=drop)


async def recorded_retrieval(
    source: KnowledgeSource,
    query: str,
    k: int,
    *,
    operator: str | None = None,
    args: list[str] | None = None,
    question: str = "",
    drop_suspect: bool = False,
) -> tuple[list[Evidence], RetrieverCall]:
    """One source call (a plain search, or an atomic operator when ``operator`` is given),
    timed and recorded. A failure is returned on the record, never raised, so the other
    sources of a question carry on. Text and web sources give their top ``k``; a KG answer
    is kept whole (ATOMR §3.3.1). Hits that address the model are flagged, or dropped with
    ``drop_suspect`` (:func:`screen_evidence`), and counted on the record."""
    label = f"{operator}({', '.join(args or [])})" if operator else query
    t0 = time.perf_counter()
    cuts: list[str] = []
    token = _CUTS.set(cuts)
    try:
        hits, call = await _recorded(source, query, k, label, t0, operator, args, question, drop_suspect)
    finally:
        _CUTS.reset(token)
    if cuts:
        call.cut = "; ".join(dict.fromkeys(cuts))[:500]
    return hits, call


async def _recorded(source: KnowledgeSource, query: str, k: int, label: str, t0: float, operator: str | None,
                    args: list[str] | None, question: str, drop_suspect: bool = False,
                    ) -> tuple[list[Evidence], RetrieverCall]:
    async with retriever_run(f"search_{source.name}", label, tags=[f"source:{source.name}"],
                             metadata={"source": source.name, "source_kind": source.kind, "k": k,
                                       "operator": operator}) as run:
        try:
            if operator:
                hits = await source.aoperate(operator, list(args or []), question, k)
            else:
                hits = await source.asearch(query, k)
        except Exception as exc:  # SourceError, network errors, a user's source raising
            run.fail(exc)
            err = f"{type(exc).__name__}: {exc}"[:500]
            return [], RetrieverCall(source=source.name, query=label, latency_s=time.perf_counter() - t0, error=err)
        if source.kind != "kg":
            hits = hits[:k]
        hits, suspect, dropped = screen_evidence(hits, drop=drop_suspect)
        run.end(hits)
    return hits, RetrieverCall(source=source.name, query=label, hits=len(hits), latency_s=time.perf_counter() - t0,
                               suspect=suspect, dropped=dropped)


def _call_error(call: Any) -> str | None:
    return getattr(call, "error", None) or (call.get("error") if isinstance(call, dict) else None)


def retrieval_failure(calls: Iterable[Any]) -> str | None:
    """Why a question got no evidence from its sources, when every source call it made failed
    (``None`` when it made none, or one succeeded, even with no hits): the one line a method
    puts in ``error`` instead of answering closed-book as if nothing happened."""
    calls = list(calls)
    failed = [c for c in calls if _call_error(c)]
    if not calls or len(failed) < len(calls):
        return None
    by_source: dict[str, str] = {}
    for c in failed:
        source = getattr(c, "source", None) or (c.get("source") if isinstance(c, dict) else None) or "?"
        by_source.setdefault(str(source), str(_call_error(c)))
    listed = "; ".join(f"{name}: {why}" for name, why in by_source.items())
    return f"no evidence: every source call failed ({len(failed)} of {len(calls)}; {listed})"[:1000]


# --- a run's set of sources ---------------------------------------------------------------------
@dataclass
class SourceSet:
    """The sources configured for a run: those usable, and why the others are not."""

    available: dict[str, KnowledgeSource] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)

    def __iter__(self):
        return iter(self.available.values())

    def __len__(self) -> int:
        return len(self.available)

    def get(self, name: str) -> KnowledgeSource | None:
        return self.available.get(name)

    def require(self, names: Iterable[str] | None = None) -> "SourceSet":
        """This set, when every source asked for (``names``, default: all of them) can be used;
        else a :class:`SourceUnavailable` naming each one that cannot, and why. A source the
        user named is required: it is never quietly dropped."""
        wanted = list(names) if names is not None else list(self.unavailable)
        missing = {n: self.unavailable[n] for n in wanted if n in self.unavailable}
        if missing:
            raise SourceUnavailable(unavailable_message(missing))
        return self


def unavailable_message(missing: Mapping[str, str]) -> str:
    """One line naming the requested sources that cannot be used, and why."""
    listed = "; ".join(f"{name}: {why}" for name, why in missing.items())
    noun = "source" if len(missing) == 1 else "sources"
    return f"requested knowledge {noun} unavailable — {listed}"
