"""The method kit: what every method's nodes share.

:class:`MethodRuntime` holds a method's models by role, its knowledge sources and settings
(each resolved on first use, so a graph compiles where no model is configured; the first
call then reports a ``ConfigError`` naming the missing setting), and offers

- :meth:`~MethodRuntime.params`: the run's parameters (the method's context dataclass:
  settings section < the run's ``context`` (read through LangGraph's ``get_runtime()``) <
  ``config["configurable"]``);
- :meth:`~MethodRuntime.ask`: **the one call path to a model**. It runs a prompt
  :class:`~atomgraph.prompts.stage.Stage` with its role's model (the run's choice of model
  and temperature where it makes one) under the stage's output cap and stop sequences, with
  an optional :mod:`constraint <atomgraph.prompts.constraints>`; the call is recorded by
  :class:`~atomgraph.nodes.recorder.CallRecorder`; a reply longer than the cap allows is cut
  there client-side (:func:`cut_reply`, the record marked ``capped``); the reply is read by the stage's parser,
  and only a readable reply is written to the response cache. A failed call, a refused
  constraint or an unreadable reply is data (:class:`StageResult`), never an exception.
  Bounds: the run's ``deadline`` and the circuit breaker (``max_consecutive_failures``
  failed calls in a row end the question's model calls);
- :meth:`~MethodRuntime.retrieve`: query knowledge sources concurrently, each call recorded;
- :func:`dual`: an async node usable from ``graph.invoke`` as well as ``graph.ainvoke`` (sync runs
  share one event loop, :func:`sync_loop`, so pooled async clients keep working).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import threading
import time
from dataclasses import dataclass, field, fields
from typing import Any, Generic, Iterable, Mapping, TypeVar

from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.runnables.config import merge_configs

from atomgraph import cache as reply_cache
from atomgraph.errors import ConfigError
from atomgraph.methods import Method, declaration
from atomgraph.models import (ModelsArg, chat_model_named, is_model_like, message_text, model_name, resolve_models,
                              with_temperature)
from atomgraph.nodes.recorder import CallRecorder, describe_error
from atomgraph.prompts.answer_contract import AnswerRefused, cut_note, hold_to_question, reply_limit
from atomgraph.prompts.constraints import Applied, Constraint, backend, constrain, is_local, unwrap_reply
from atomgraph.prompts.stage import Stage
from atomgraph.settings import Settings, get_settings
from atomgraph.state.context import RunChoices, context_with_defaults, resolve_params, run_context
from atomgraph.state.evidence import Evidence
from atomgraph.state.output import MethodInput, MethodOutput
from atomgraph.state.usage import LLMCall, RetrieverCall
from atomgraph.tools.base import KnowledgeSource, recorded_retrieval
from atomgraph.tools.registry import SourceSet, as_source_set, build_sources

C = TypeVar("C")

_NO_CHOICES = RunChoices()
_CHOICE_FIELDS = tuple(f.name for f in fields(RunChoices))


@dataclass
class StageResult:
    """One stage call: the parsed value (None when unusable), the raw text, the usage record,
    the reply message and how its constraint applied."""

    value: Any
    text: str | None
    call: LLMCall
    message: Any = None
    applied: Applied | None = None

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


@dataclass
class _RunBounds:
    """Per-run failure count for the circuit breaker (one per graph run's context object)."""

    failures: int = 0
    tripped: str | None = None
    keep: Any = field(default=None, repr=False)  # the context object, so its id stays unique


class MethodRuntime(Generic[C]):
    """Models by role, sources, settings and run parameters of one method's graph."""

    def __init__(
        self,
        context_cls: type[C],
        section: str,
        models: ModelsArg = None,
        sources: SourceSet | Iterable[KnowledgeSource] | None = None,
        settings: Settings | None = None,
        roles: tuple[str, ...] | None = None,
    ):
        self.context_cls = context_cls
        self.section = section
        self.roles = roles  # the method's declared roles (None: every registered role)
        if isinstance(models, Mapping) and not is_model_like(models):  # a role map: its keys checked now
            from atomgraph.methods import known_roles

            unknown = sorted(str(k) for k in models if k not in known_roles())
            if unknown:
                raise ConfigError(f"unknown model role(s) {unknown}; roles are {', '.join(known_roles())} "
                                  "(pass one model, not a dict, to use it for every role)")
        self._models_arg = models
        self._models: dict[str, Any] | None = None
        self._named_models: dict[tuple[str, float | None], Any] = {}
        self._sources_arg = sources
        self._settings = settings
        self._sources: SourceSet | None = None
        self._named_sources: dict[tuple[str, ...], SourceSet] = {}
        self._sources_lock = threading.RLock()  # sources are opened once, whichever question asks first
        self._chains: dict[tuple, Any] = {}  # (stage, role, model, cap, mode, temperature) -> capped model
        self._bounds: dict[int, _RunBounds] = {}

    @classmethod
    def for_method(cls, method: "Method | str", models: ModelsArg = None,
                   sources: SourceSet | Iterable[KnowledgeSource] | None = None,
                   settings: Settings | None = None) -> "MethodRuntime":
        """The runtime of a declared method (:mod:`atomgraph.methods`): its context dataclass and
        settings section come from the declaration."""
        if isinstance(method, str):
            method = declaration(method)
        return cls(method.context, method.settings_section, models, sources, settings, roles=method.roles)

    # --- lazily resolved ----------------------------------------------------------------
    # Methods, not properties: LangGraph inspects node closures' attribute reads at compile
    # time, and a property would build the sources while the graph is being compiled.
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = get_settings()
        return self._settings

    def model(self, role: str) -> Any:
        """The chat model (or Runnable wrapping one) for ``role`` in this run: the run's own
        choice (context ``model`` / ``models``), else what the graph was built with, else the
        settings' model for the role."""
        choices = self.run_choices()
        name = (choices.models or {}).get(role) or choices.model
        if name:
            key = (name, None)
            if key not in self._named_models:
                self._named_models[key] = chat_model_named(name, self.settings())
            return self._named_models[key]
        if self._models is None:
            self._models = resolve_models(self._models_arg, self.settings(), self.roles)
        if role not in self._models:
            raise ConfigError(f"model role {role!r} is not declared by this method; its roles are "
                              f"{', '.join(self._models)} (atomgraph/methods.py)")
        return self._models[role]

    async def amodel(self, role: str) -> Any:
        """:meth:`model` for async nodes: building a model may read files or load weights (the
        bundled local model, provider imports), so one not built yet is built in a thread,
        off the event loop (``langgraph dev`` forbids blocking I/O there)."""
        choices = self.run_choices()
        name = (choices.models or {}).get(role) or choices.model
        ready = self._named_models.get((name, None)) if name else (self._models or {}).get(role)
        return ready if ready is not None else await asyncio.to_thread(self.model, role)

    async def asources(self) -> SourceSet:
        """:meth:`sources`, opening the sources (indexes, stores) off the event loop the first time."""
        if self._sources is None or self.run_choices().sources:
            return await asyncio.to_thread(self.sources)
        return self.sources()

    def sources(self) -> SourceSet:
        """The knowledge sources of this run: the run's choice (context ``sources``), else what
        the graph was built with, else the settings' sources."""
        names = self.run_choices().sources
        if names:
            key = tuple(names)
            if key in self._named_sources:
                return self._named_sources[key]
            with self._sources_lock:
                if key in self._named_sources:
                    return self._named_sources[key]
                own = self._base_sources()
                if all(n in own.available or n in own.unavailable for n in names):  # a subset of the graph's
                    self._named_sources[key] = SourceSet(
                        available={n: own.available[n] for n in names if n in own.available},
                        unavailable={n: own.unavailable[n] for n in names if n in own.unavailable})
                else:  # sources the graph was not built with: built from the settings by name
                    self._named_sources[key] = build_sources(self.settings(), names)
                return self._named_sources[key]
        return self._base_sources()

    def _base_sources(self) -> SourceSet:
        if self._sources is None:
            with self._sources_lock:
                if self._sources is None:
                    self._sources = as_source_set(self._sources_arg, self.settings())
        return self._sources

    def context_schema(self) -> type:
        """The graph's context schema: the method's dataclass with the settings' values as its
        defaults (the plain dataclass when the settings cannot be read now), plus the run's
        choice of model, temperature and sources (:class:`RunChoices`)."""
        try:
            defaults = self.settings().section(self.section)
        except Exception:  # an invalid config must not stop the graph from compiling
            defaults = None
        return context_with_defaults(self.context_cls, defaults, extra=RunChoices)

    def state_graph(self, state: type, input_schema: type = MethodInput, output_schema: type = MethodOutput):
        """A ``StateGraph`` over ``state`` with this method's context schema and, by default,
        the method input/output contract (``state/output.py``)."""
        from atomgraph.lc import MethodStateGraph  # compiles to a graph with as_tool / as_retriever

        return MethodStateGraph(state, context_schema=self.context_schema(), input_schema=input_schema,
                                output_schema=output_schema)

    def params(self, config: RunnableConfig | None = None) -> C:
        """This run's parameters: settings section < the run's context < configurable keys."""
        conf = (config or {}).get("configurable", {}) or {}
        return resolve_params(self.context_cls, self.settings().section(self.section), run_context(),
                              conf, ignore=RunChoices)

    def run_choices(self) -> RunChoices:
        """The run's choice of model, temperature and sources (empty outside a graph run, or
        when the run chose nothing: then nothing is validated)."""
        ctx = run_context()
        if ctx is None:
            return _NO_CHOICES
        chosen = ({k: ctx[k] for k in _CHOICE_FIELDS if k in ctx} if isinstance(ctx, dict)
                  else {k: getattr(ctx, k) for k in _CHOICE_FIELDS if hasattr(ctx, k)})
        if all(v in (None, "", [], {}) for v in chosen.values()):
            return _NO_CHOICES
        return resolve_params(RunChoices, None, chosen, None)

    # --- bounds -------------------------------------------------------------------------
    def _run_bounds(self) -> _RunBounds:
        ctx = run_context()
        key = id(ctx)
        bounds = self._bounds.get(key)
        if bounds is None or bounds.keep is not ctx:
            if len(self._bounds) > 4096:
                self._bounds.clear()
            bounds = self._bounds[key] = _RunBounds(keep=ctx)
        return bounds

    @staticmethod
    def deadline(config: RunnableConfig | None) -> float | None:
        """The run's deadline (``configurable["deadline"]``, a ``time.time()`` value), if any."""
        value = ((config or {}).get("configurable") or {}).get("deadline")
        return float(value) if isinstance(value, (int, float)) else None

    # --- calls --------------------------------------------------------------------------
    async def ask(self, stage: Stage, variables: dict[str, Any], config: RunnableConfig | None,
                  *, role: str | None = None, temperature: float | None = None,
                  constraint: Constraint | None = None, logprobs: bool = False,
                  backend_kind: str = "auto") -> StageResult:
        """Run ``stage`` on ``variables`` (the stage renders them into its prompt) with its role's
        model, under its output cap and stop sequences, at ``temperature`` where given (e.g. KAR³'s
        atomizer at 0.7; otherwise the run's or the settings' temperature), constrained by
        ``constraint`` where given (in the request form of the model's backend, detected or named
        by ``backend_kind``), with token log-probabilities when ``logprobs``.
        Never raises for a failed call or an unreadable reply: each comes back on the result and
        its record. A missing or invalid model configuration raises ConfigError (a ValueError
        whose text says what to set)."""
        role = role or stage.role
        settings = self.settings()
        cap = settings.stage_cap(stage.name, stage.max_tokens)
        recorder = CallRecorder(role=role, stage=stage.name, cap=cap)
        bounds = self._run_bounds()
        if bounds.tripped:
            return StageResult(None, None, recorder.refused(bounds.tripped))
        deadline = self.deadline(config)
        if deadline is not None and time.time() >= deadline:
            return StageResult(None, None, recorder.refused("deadline: the question's time ran out before this call"))
        model = await self.amodel(role)  # a missing or invalid model configuration raises ConfigError (a ValueError)
        if self._sources is None:  # nodes read rt.sources() synchronously: open them off the loop first
            await self.asources()
        recorder.defaults["model"] = model_name(model)
        if temperature is None:
            temperature = self.run_choices().temperature
        if constraint is not None:  # may ask the server who it is (HTTP, cached): not on the event loop
            await asyncio.to_thread(backend, model, backend_kind)
        runnable, applied = self._runnable(stage, role, model, cap, temperature, constraint, logprobs, backend_kind)
        run_config = merge_configs(config, {"tags": stage.tags, "run_name": stage.name, "callbacks": [recorder],
                                            "metadata": {"atomgraph_role": role, "atomgraph_cap": cap}})
        timeout = None if deadline is None else max(0.0, deadline - time.time())
        refresh = bool(((config or {}).get("configurable") or {}).get("refresh_cache"))
        with reply_cache.holding() as pending, reply_cache.refreshing(refresh):
            try:
                messages = stage.messages(variables)
                call = call_model(runnable, messages, run_config)
                out = await (asyncio.wait_for(call, timeout) if timeout is not None else call)
            except Exception as exc:  # network, auth, rate limits after the client's retries, deadline
                if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) and timeout is not None:
                    exc = TimeoutError("deadline: the question's time ran out during this call")
                recorder.fail_open(exc)
                rec = recorder.last or recorder.refused(describe_error(exc))  # failed before reaching the model
                rec.error = rec.error or describe_error(exc)
                self._count_failure(bounds, settings)
                return StageResult(None, None, rec, applied=applied)
            rec = recorder.last or recorder.refused("no model call was made")
            out, over = cut_reply(out, cap)  # before any parser reads it
            if over is not None:
                rec.capped, rec.reply_chars = True, over
            raw, value, rec.parse_error = stage.read(out)
            text = message_text(raw) if raw is not None else None
            if constraint is not None and text is not None and rec.parse_error and applied is not None:
                # an OpenAI enum reply {"value": x}: the stage reads x
                inner = unwrap_reply(constraint, applied, text)
                if inner != text:
                    text = inner
                    try:
                        value, rec.parse_error = stage.parse(inner), None
                    except ValueError as exc:
                        value, rec.parse_error = None, str(exc)
            if stage.answers and value is not None and rec.parse_error is None:
                try:  # a restated question or a copied demonstration answer is no answer (the contract)
                    hold_to_question(value, variables, stage.demonstrations, text or "")
                except AnswerRefused as exc:
                    value, rec.parse_error = None, str(exc)
            if over is not None and rec.parse_error:
                rec.parse_error = f"{cut_note(over, cap)}: {rec.parse_error}"
            if rec.parse_error is None and value is not None:
                await asyncio.to_thread(reply_cache.keep, pending)  # SQLite, off the event loop
        if applied is not None and constraint is not None and not applied.constrained:
            rec.constraint = applied.describe()
        elif applied is not None and applied.constrained:
            rec.constraint = applied.form
        bounds.failures = 0
        return StageResult(value, text, rec, message=raw, applied=applied)

    def _runnable(self, stage: Stage, role: str, model: Any, cap: int, temperature: float | None,
                  constraint: Constraint | None, logprobs: bool, backend_kind: str) -> tuple[Any, Applied | None]:
        """The model as this stage calls it (capped, sampled, structured or constrained); the
        unconstrained forms are built once per stage and model."""
        # An in-process model decodes a schema-declaring stage under its JSON-schema grammar by default.
        structured = (self.settings().structured_output or is_local(model)) and constraint is None
        key = (stage.name, id(stage), role, id(model), cap, structured, temperature)
        if constraint is None and not logprobs:
            runnable = self._chains.get(key)
            if runnable is None:
                sampler = model if temperature is None else with_temperature(model, temperature)
                runnable = self._chains[key] = stage.model_for(sampler, cap, structured=structured)
            return runnable, None
        sampler = model if temperature is None else with_temperature(model, temperature)
        capped = stage.model_for(sampler, cap)
        applied = None
        if constraint is not None:
            kind, reason = backend(model, backend_kind)
            capped, applied = constrain(capped, constraint, kind, reason)
        if logprobs:
            capped = capped.bind(logprobs=True)
        return capped, applied

    def _count_failure(self, bounds: _RunBounds, settings: Settings) -> None:
        bounds.failures += 1
        if bounds.failures >= settings.max_consecutive_failures:
            bounds.tripped = (f"circuit breaker: {bounds.failures} model calls in a row failed; "
                              "no further calls this question")

    def tripped(self) -> str | None:
        """Why this run's model calls were stopped (the circuit breaker), if they were."""
        return self._run_bounds().tripped

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
        sources = await self.asources()

        async def one(name: str) -> tuple[list[Evidence], RetrieverCall]:
            source = sources.get(name)
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


def reply_chars(message: Any) -> int:
    """The length of a reply: its text plus its tool calls' arguments."""
    n = len(message_text(message)) if message is not None else 0
    for tc in getattr(message, "tool_calls", None) or []:
        n += len(str(tc.get("args", "")))
    return n


def cut_message(message: Any, max_tokens: int | None) -> tuple[Any, int | None]:
    """``(message, None)`` when the reply fits the output cap (:func:`reply_limit` characters),
    else a copy whose text is cut at the limit, and the reply's original length."""
    limit = reply_limit(max_tokens)
    if limit is None or message is None or not hasattr(message, "content"):
        return message, None
    n = reply_chars(message)
    if n <= limit:
        return message, None
    return message.model_copy(update={"content": message_text(message)[:limit]}), n


def cut_reply(out: Any, max_tokens: int | None) -> tuple[Any, int | None]:
    """What a stage's model returned (a message, or structured output's ``{"raw", "parsed",
    "parsing_error"}``), cut at the output cap before a parser reads it: a message's text is cut;
    a structured reply over the cap is not read at all (a server honouring the cap would have
    cut its JSON short). Returns the reply's original length when it was over the cap."""
    if isinstance(out, dict):
        raw, over = cut_message(out.get("raw"), max_tokens)
        if over is None:
            return out, None
        return {"raw": raw, "parsed": None, "parsing_error": "the structured reply is over the output cap"}, over
    return cut_message(out, max_tokens)


# --- sync calls of async nodes -------------------------------------------------------------
# A sync ``graph.invoke`` / ``batch`` / ``stream`` runs every async node on ONE event loop that
# lives as long as the process (in a daemon thread), never a fresh loop per node: pooled async
# clients (ChatOpenAI's httpx pool, kept-alive connections) are bound to the loop that first
# used them, and a loop per node closed those under the next call ("Event loop is closed").
#
# Model calls in a sync run go through the model's own sync call (``invoke``, in a worker
# thread: :func:`call_model`), so a sync run never binds the async client's pool to its loop;
# a later ``await graph.ainvoke`` on the caller's own loop (the next notebook cell) finds the
# pool as it left it.
_SYNC_RUN: contextvars.ContextVar[bool] = contextvars.ContextVar("atomgraph_sync_run", default=False)
_SYNC_LOOP: asyncio.AbstractEventLoop | None = None
_SYNC_LOOP_PID: int | None = None
_SYNC_LOOP_LOCK = threading.Lock()


def sync_loop() -> asyncio.AbstractEventLoop:
    """The event loop that runs async nodes for sync graph calls (started on first use)."""
    global _SYNC_LOOP, _SYNC_LOOP_PID
    with _SYNC_LOOP_LOCK:
        # a forked child has the parent's loop object but not its thread: it starts its own
        if _SYNC_LOOP is None or _SYNC_LOOP.is_closed() or _SYNC_LOOP_PID != os.getpid():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="atomgraph-sync-loop", daemon=True).start()
            _SYNC_LOOP, _SYNC_LOOP_PID = loop, os.getpid()
        return _SYNC_LOOP


def run_sync(coro):
    """Run a coroutine to completion from synchronous code, on :func:`sync_loop`, in the
    caller's context (LangGraph's run config and ``get_runtime()`` travel in context
    variables). Works where an event loop is already running in the calling thread (a
    notebook cell calling ``graph.invoke``); from the sync loop's own thread (a sync call
    nested in an async node) it runs the coroutine on a loop of its own in a helper thread,
    as waiting on the loop from inside it would never end."""
    loop = sync_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    ctx = contextvars.copy_context()
    ctx.run(_SYNC_RUN.set, True)
    if running is loop:
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(ctx.run, asyncio.run, coro).result()
    done: concurrent.futures.Future = concurrent.futures.Future()
    tasks: list[asyncio.Task] = []

    def copy_outcome(task: asyncio.Task) -> None:
        if task.cancelled():
            done.cancel()
        elif task.exception() is not None:
            done.set_exception(task.exception())
        else:
            done.set_result(task.result())

    def start() -> None:
        task = loop.create_task(coro, context=ctx)
        tasks.append(task)
        task.add_done_callback(copy_outcome)

    loop.call_soon_threadsafe(start)
    try:
        return done.result()
    except BaseException:  # the caller gave up (KeyboardInterrupt, a cancelled sync run): stop the node too
        if tasks and not tasks[0].done():
            loop.call_soon_threadsafe(tasks[0].cancel)
        raise


def in_sync_run() -> bool:
    """Whether the current node runs for a sync graph call (``invoke`` / ``batch`` / ``stream``)."""
    return _SYNC_RUN.get()


async def call_model(runnable: Any, inp: Any, config: RunnableConfig | None = None) -> Any:
    """Call a model (or a Runnable around one): ``ainvoke`` in an async run; in a sync run its
    sync ``invoke`` in a worker thread (the model's sync client, bound to no event loop)."""
    if _SYNC_RUN.get():
        return await asyncio.to_thread(runnable.invoke, inp, config)
    return await runnable.ainvoke(inp, config=config)


def dual(afunc) -> RunnableLambda:
    """An async node usable from ``graph.ainvoke`` (on the caller's loop) as well as from
    ``graph.invoke`` / ``batch`` / ``stream`` (on :func:`sync_loop`, the one loop of sync runs)."""

    def func(inp, config: RunnableConfig):
        return run_sync(afunc(inp, config))

    return RunnableLambda(func, afunc=afunc, name=afunc.__name__)
