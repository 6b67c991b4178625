"""The method kit: what every method's nodes share.

:class:`MethodRuntime` holds a method's models by role, its knowledge sources and settings
(each resolved on first use, so a graph compiles where no model is configured; the first
call then raises a ``ConfigError`` naming the missing setting), and offers

- :meth:`~MethodRuntime.params`: the run's parameters (the method's context dataclass:
  settings section < ``context`` < ``config["configurable"]``);
- :meth:`~MethodRuntime.ask`: run a prompt :class:`~atomgraph.prompts.stage.Stage` with its
  role's model under the stage's output cap; the reply, the parsed value and a usage record
  come back, and a failed call or unreadable reply is data (:class:`StageResult`), never an
  exception;
- :meth:`~MethodRuntime.retrieve`: query knowledge sources concurrently, each call recorded;
- :func:`dual`: an async node usable from ``graph.invoke`` as well as ``graph.ainvoke``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from dataclasses import dataclass
from typing import Any, Generic, Iterable, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.runnables.config import merge_configs

from atomgraph.errors import ConfigError
from atomgraph.models import ModelsArg, message_text, model_name, resolve_models, with_temperature
from atomgraph.prompts.stage import Stage
from atomgraph.settings import Settings, get_settings
from atomgraph.state.context import context_with_defaults, resolve_params
from atomgraph.state.evidence import Evidence
from atomgraph.state.output import MethodInput, MethodOutput
from atomgraph.state.usage import LLMCall, RetrieverCall
from atomgraph.tools.base import KnowledgeSource, recorded_retrieval
from atomgraph.tools.registry import SourceSet, as_source_set

C = TypeVar("C")

_RUNTIME_KEY = "__pregel_runtime"  # where LangGraph keeps the run's Runtime in the config


@dataclass
class StageResult:
    """One stage call: the parsed value (None when unusable), the raw text, the usage record."""

    value: Any
    text: str | None
    call: LLMCall

    @property
    def ok(self) -> bool:
        return self.value is not None

    @property
    def problem(self) -> str | None:
        """Why the value is unusable: the call failed, or its output could not be read."""
        if self.call.error:
            return f"the model call failed ({self.call.error})"
        if self.call.parse_error:
            return f"unreadable model output ({self.call.parse_error})"
        return None if self.value is not None else "no value"


class MethodRuntime(Generic[C]):
    """Models by role, sources, settings and run parameters of one method's graph."""

    def __init__(
        self,
        context_cls: type[C],
        section: str,
        models: ModelsArg = None,
        sources: SourceSet | Iterable[KnowledgeSource] | None = None,
        settings: Settings | None = None,
    ):
        self.context_cls = context_cls
        self.section = section
        self._models_arg = models
        self._models: dict[str, BaseChatModel] | None = None
        self._sources_arg = sources
        self._settings = settings
        self._sources: SourceSet | None = None
        self._chains: dict[tuple, Any] = {}  # (stage, role, cap, mode, temperature) -> capped model

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
        if role not in self._models:
            raise ConfigError(f"unknown model role {role!r}; roles are {', '.join(self._models)}")
        return self._models[role]

    def sources(self) -> SourceSet:
        if self._sources is None:
            self._sources = as_source_set(self._sources_arg, self.settings())
        return self._sources

    def context_schema(self) -> type[C]:
        """The graph's context schema: the method's dataclass with the settings' values as its
        defaults (the plain dataclass when the settings cannot be read now)."""
        try:
            return context_with_defaults(self.context_cls, self.settings().section(self.section))
        except Exception:  # an invalid config must not stop the graph from compiling
            return self.context_cls

    def state_graph(self, state: type, input_schema: type = MethodInput, output_schema: type = MethodOutput):
        """A ``StateGraph`` over ``state`` with this method's context schema and, by default,
        the method input/output contract (``state/output.py``)."""
        from atomgraph.lc import MethodStateGraph  # compiles to a graph with as_tool / as_retriever

        return MethodStateGraph(state, context_schema=self.context_schema(), input_schema=input_schema,
                                output_schema=output_schema)

    def params(self, config: RunnableConfig | None) -> C:
        """This run's parameters: settings section < the run's context < configurable keys."""
        conf = (config or {}).get("configurable", {}) or {}
        runtime = conf.get(_RUNTIME_KEY)
        context = getattr(runtime, "context", None)
        return resolve_params(self.context_cls, self.settings().section(self.section), context, conf)

    # --- calls --------------------------------------------------------------------------
    async def ask(self, stage: Stage, variables: dict[str, Any], config: RunnableConfig | None,
                  *, role: str | None = None, temperature: float | None = None) -> StageResult:
        """Run ``stage`` with its role's model under its output cap (and at ``temperature``
        where given, e.g. KAR³'s atomizer at 0.7; otherwise the settings' temperature).
        Never raises for a failed call or an unreadable reply: both come back on the result
        and its record."""
        role = role or stage.role
        settings = self.settings()
        model = self.model(role)
        cap = settings.stage_cap(stage.name, stage.max_tokens)
        key = (stage.name, id(stage), role, cap, settings.structured_output, temperature)
        runnable = self._chains.get(key)
        if runnable is None:  # the capped (structured) model, built once per stage
            sampler = model if temperature is None else with_temperature(model, temperature)
            runnable = self._chains[key] = stage.model_for(sampler, cap, structured=settings.structured_output)
        messages = stage.prompt.format_messages(**variables)
        t0 = time.perf_counter()
        record = LLMCall(role=role, stage=stage.name, model=model_name(model), max_tokens=cap)
        try:
            out = await runnable.ainvoke(messages, config=merge_configs(config, {"tags": stage.tags,
                                                                                  "run_name": stage.name}))
        except Exception as exc:  # network, auth, rate limits after the client's retries
            record.latency_s = time.perf_counter() - t0
            record.error = f"{type(exc).__name__}: {exc}"[:500]
            return StageResult(None, None, record)
        record.latency_s = time.perf_counter() - t0
        raw, value, record.parse_error = stage.read(out)
        usage = getattr(raw, "usage_metadata", None) or {}
        record.prompt_tokens = int(usage.get("input_tokens", 0) or 0)
        record.completion_tokens = int(usage.get("output_tokens", 0) or 0)
        return StageResult(value, message_text(raw) if raw is not None else None, record)

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
