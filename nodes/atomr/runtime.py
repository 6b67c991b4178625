"""What ATOMR's nodes share: models by role, knowledge sources, settings, per-run parameters.

Models and sources are resolved on first use, so a graph compiles (for ``langgraph dev``,
imports, docs) even where no model is configured; the first call then raises a
``ConfigError`` naming the missing setting. Parameters (``top_k``, ``filter_threshold``,
``max_llm_calls``, ``max_nodes``, ``max_depth``) can be overridden per run through
``config["configurable"]``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from dataclasses import dataclass
from typing import Any, Iterable

from langchain_core.language_models import BaseChatModel
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableConfig, RunnableLambda

from atomgraph.models import ModelsArg, ainvoke_recorded, message_text, resolve_models
from atomgraph.settings import Settings, get_settings
from atomgraph.state.evidence import Evidence
from atomgraph.state.usage import LLMCall, RetrieverCall
from atomgraph.tools.base import KnowledgeSource, recorded_retrieval
from atomgraph.tools.registry import SourceSet, as_source_set

PARAMS = ("top_k", "filter_threshold", "max_llm_calls", "max_nodes", "max_depth", "max_parallel")


@dataclass
class Params:
    top_k: int
    filter_threshold: float
    max_llm_calls: int
    max_nodes: int
    max_depth: int
    max_parallel: int | None  # tree nodes run at once (None: no limit; 1: strictly sequential)


class AtomRRuntime:
    def __init__(
        self,
        models: ModelsArg = None,
        sources: SourceSet | Iterable[KnowledgeSource] | None = None,
        settings: Settings | None = None,
    ):
        self._models_arg = models
        self._sources_arg = sources
        self._settings = settings
        self._models: dict[str, BaseChatModel] | None = None
        self._sources: SourceSet | None = None

    # --- lazily resolved ----------------------------------------------------------------
    # Methods, not properties: LangGraph inspects node closures' attribute reads at compile
    # time, and a property would build the sources while the graph is being compiled.
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = get_settings()
        return self._settings

    def model(self, role: str) -> BaseChatModel:
        if self._models is None:
            self._models = resolve_models(self._models_arg, self.settings())
        return self._models[role]

    def sources(self) -> SourceSet:
        if self._sources is None:
            self._sources = as_source_set(self._sources_arg, self.settings())
        return self._sources

    def params(self, config: RunnableConfig | None) -> Params:
        conf = (config or {}).get("configurable", {}) or {}
        values: dict[str, Any] = {}
        for name in PARAMS:
            default = getattr(self.settings(), name)
            v = conf.get(name)
            values[name] = default if v is None else (int(v) if default is None else type(default)(v))
        return Params(**values)

    # --- calls --------------------------------------------------------------------------
    async def ask(
        self,
        role: str,
        stage: str,
        prompt: ChatPromptTemplate,
        variables: dict[str, Any],
        config: RunnableConfig | None,
    ) -> tuple[str | None, LLMCall]:
        """Format ``prompt`` and call the role's model. Returns (text or None on failure, record)."""
        messages = prompt.format_messages(**variables)
        msg, record = await ainvoke_recorded(self.model(role), messages, role=role, stage=stage, config=config)
        return (message_text(msg) if msg is not None else None), record

    async def retrieve(
        self,
        source_names: list[str],
        *,
        query: str,
        k: int,
        operator: str | None = None,
        args: list[str] | None = None,
        question: str = "",
    ) -> tuple[list[Evidence], list[RetrieverCall], list[str]]:
        """Query the named sources concurrently (an operator call, or a plain search).
        Failures become records and notes; the others' evidence is kept."""

        async def one(name: str) -> tuple[list[Evidence], RetrieverCall]:
            source = self.sources().get(name)
            if source is None:
                label = f"{operator}({', '.join(args or [])})" if operator else query
                return [], RetrieverCall(source=name, query=label, error="source unavailable")
            return await recorded_retrieval(source, query, k, operator=operator, args=args, question=question)

        results = await asyncio.gather(*(one(n) for n in source_names))
        evidence: list[Evidence] = []
        calls: list[RetrieverCall] = []
        notes: list[str] = []
        for hits, call in results:
            evidence.extend(hits)
            calls.append(call)
            if call.error:
                notes.append(f"retrieval failed — {call.source}: {call.error}")
        return evidence, calls, notes


def run_sync(coro):
    """Run a coroutine to completion from synchronous code, also where an event loop is
    already running in this thread (a notebook cell calling ``graph.invoke``)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def dual(afunc) -> RunnableLambda:
    """An async node usable from ``graph.invoke`` as well as ``graph.ainvoke``."""

    def func(inp, config: RunnableConfig):
        return run_sync(afunc(inp, config))

    return RunnableLambda(func, afunc=afunc, name=afunc.__name__)
