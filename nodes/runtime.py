"""The method runtime: what every method's nodes share, used the same way by every method.

Every graph builds its runtime from its method's declaration (:mod:`atomgraph.methods`):
``MethodRuntime.for_method(name, model, sources, settings)``, or a subclass's ``for_method``
where a method holds one resource more (KAR³'s atom index, ARM's data collection). Every node
reaches the model through :meth:`~MethodRuntime.ask` and the sources through
:meth:`~MethodRuntime.retrieve`.

:class:`MethodRuntime` holds a method's models by role, its knowledge sources and settings
(each resolved on first use, so a graph compiles where no model is configured; the first
call then reports a ``ConfigError`` naming the missing setting), and offers

- :meth:`~MethodRuntime.params`: the run's parameters (the method's context dataclass:
  settings section < the run's ``context`` (read through LangGraph's ``get_runtime()``) <
  ``config["configurable"]``);
- :meth:`~MethodRuntime.ask`: **the one call path to a model**: the stage's role's model (the
  run's choice of model and temperature where it makes one) under the stage's output cap and
  stop sequences, with an optional :mod:`constraint <atomgraph.prompts.constraints>`, called by
  :func:`~atomgraph.nodes.call.call_stage` (stage → model → recorder → parser). Bounds: the
  run's ``deadline`` and the circuit breaker (:class:`~atomgraph.nodes.call.RunBounds`);
- :meth:`~MethodRuntime.sources` / :meth:`~MethodRuntime.retrieve`: the run's knowledge
  sources (source selection, at the end of this module: :class:`RunSources`,
  :func:`retrieve_from`), queried concurrently, each call recorded.

Source selection lives here, beside the runtime that offers it, because it is the runtime's
other half (a node reaches sources only through ``rt``); it is not part of a model call. The
model call itself (and reply cutting) is :mod:`atomgraph.nodes.call`; the sync/async bridge
(:func:`~atomgraph.nodes.sync.dual`, :func:`~atomgraph.nodes.sync.run_sync`,
:func:`~atomgraph.nodes.sync.call_model`) is :mod:`atomgraph.nodes.sync`.
"""


from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import fields
from typing import Any, Callable, Generic, Iterable, Mapping, TypeVar

from langchain_core.runnables import RunnableConfig

from atomgraph.backends import accepts_logprobs, backend, is_local
from atomgraph.errors import ConfigError
from atomgraph.methods import Method, declaration
from atomgraph.models import ModelsArg, chat_model_named, is_model_like, model_name, resolve_models, with_temperature
from atomgraph.nodes.call import CallRecorder, RunBounds, StageResult, call_stage, deadline_of
from atomgraph.nodes.sync import at_once
from atomgraph.prompts.constraints import Applied, Constraint, constrain
from atomgraph.prompts.stage import Stage
from atomgraph.settings import Settings, get_settings
from atomgraph.state.run import (Evidence, InvalidQuestion, MethodInput, MethodOutput, RetrieverCall, RunChoices,
                                 check_question, context_with_defaults, resolve_params, run_context)
from atomgraph.tools.base import KnowledgeSource, SourceSet, recorded_retrieval
from atomgraph.tools.registry import as_source_set, build_sources

log = logging.getLogger(__name__)


__all__ = ["MethodRuntime"]

C = TypeVar("C")

_NO_CHOICES = RunChoices()
_CHOICE_FIELDS = tuple(f.name for f in fields(RunChoices))


def text_reply(stage: Stage, model: Any, settings: Settings) -> bool:
    """Whether ``stage`` is decoded as its demonstrated text reply rather than under its JSON schema:
    a stage whose reply ends at stop sequences (its demonstrations show text replies: ATOMR's stages,
    the baselines) sent to an in-process base model prompted in completion-style text
    (:func:`~atomgraph.local.chat.completion_prompted`), unless ``structured_output`` was set
    explicitly. Forced into JSON, the bundled Gemma-3-270M runs an answer list on to the cap
    (``["1", "1", ...]``) where its text continuation ends at the demonstrations' answer line
    (``benchmarks/bench_local_prompting.py --part every``)."""
    if not stage.stop or "structured_output" in settings.model_fields_set or not is_local(model):
        return False
    from atomgraph.local.chat import completion_prompted

    return completion_prompted(model)


class MethodRuntime(Generic[C]):
    """Models by role, sources, settings and run parameters of one method's graph."""

    kind: str = "qa"  # the declaration's kind: a question-answering graph gets a default question bound

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
        self._build_lock = threading.Lock()  # models are built in worker threads (amodel), once
        self._settings = settings
        self._sourcing = RunSources(sources, self.settings)
        self._chains: dict[tuple, Any] = {}  # (stage, role, model, cap, mode, temperature) -> capped model
        # id(model) -> (model, its name, whether in-process, whether its client takes logprobs)
        self._facts: dict[int, tuple[Any, str, bool, bool]] = {}
        self._backends: dict[tuple[int, str], tuple[Any, tuple[str, str]]] = {}  # (id(model), asked) -> (model, backend)
        self._caps: dict[tuple[str, int | None], int] = {}  # (stage, its default) -> the stage's output cap
        self._section_read = False
        self._section_values: Any = None
        self._bounds: dict[int, RunBounds] = {}
        self._path_fields: dict[str, str] | None = None

    @classmethod
    def for_method(cls, method: "Method | str", models: ModelsArg = None,
                   sources: SourceSet | Iterable[KnowledgeSource] | None = None,
                   settings: Settings | None = None, **resources: Any):
        """The runtime of a declared method (:mod:`atomgraph.methods`): its context dataclass and
        settings section come from the declaration; ``resources`` are a subclass's own (KAR³'s
        ``index``, ARM's ``collection``). Every graph builds its runtime this way."""
        if isinstance(method, str):
            method = declaration(method)
        rt = cls(method.context, method.settings_section, models, sources, settings, roles=method.roles,
                 **resources)
        rt.kind = method.kind
        return rt

    # --- lazily resolved ----------------------------------------------------------------
    # Methods, not properties: LangGraph inspects node closures' attribute reads at compile
    # time, and a property would build the sources while the graph is being compiled.
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = get_settings()
        return self._settings

    def section_values(self) -> Any:
        """The method's settings section (the defaults of its run parameters), read once."""
        if not self._section_read:
            self._section_values, self._section_read = self.settings().section(self.section), True
        return self._section_values

    def stage_cap(self, stage: Stage) -> int:
        """``stage``'s output-token cap from the settings, read once per stage."""
        key = (stage.name, stage.max_tokens)
        cap = self._caps.get(key)
        if cap is None:
            cap = self._caps[key] = self.settings().stage_cap(stage.name, stage.max_tokens)
        return cap

    def model_facts(self, model: Any) -> tuple[str, bool]:
        """``model``'s name and whether it runs in-process: facts of the model, read once per model."""
        facts = self._model_facts(model)
        return facts[1], facts[2]

    def takes_logprobs(self, model: Any) -> bool:
        """Whether ``model``'s client takes a ``logprobs`` request
        (:func:`~atomgraph.backends.accepts_logprobs`): a fact of the model, read once per model."""
        return self._model_facts(model)[3]

    def _model_facts(self, model: Any) -> tuple[Any, str, bool, bool]:
        facts = self._facts.get(id(model))
        if facts is None or facts[0] is not model:
            facts = self._facts[id(model)] = (model, model_name(model), is_local(model), accepts_logprobs(model))
        return facts

    def backend_of(self, model: Any, requested: str = "auto") -> tuple[str, str]:
        """``(backend, reason)`` of ``model`` as :func:`~atomgraph.backends.backend` decides it for
        ``requested``, decided once per model and request (the first time may ask a server who it
        is: off the event loop)."""
        found = self._backends.get((id(model), requested))
        if found is None or found[0] is not model:
            found = self._backends[(id(model), requested)] = (model, backend(model, requested))
        return found[1]

    def model(self, role: str) -> Any:
        """The chat model (or Runnable wrapping one) for ``role`` in this run: the run's own
        choice (context ``model`` / ``models``), else what the graph was built with, else the
        settings' model for the role."""
        choices = self.run_choices()
        name = (choices.models or {}).get(role) or choices.model
        if name:
            key = (name, None)
            if key not in self._named_models:
                with self._build_lock:
                    if key not in self._named_models:
                        self._named_models[key] = chat_model_named(name, self.settings())
            return self._named_models[key]
        if self._models is None:
            with self._build_lock:  # the questions of a run start together: the models are built once
                if self._models is None:
                    self._models = resolve_models(self._models_arg, self.settings(), self.roles)
        if role not in self._models:
            raise ConfigError(f"model role {role!r} is not declared by this method; its roles are "
                              f"{', '.join(self._models)} (atomgraph/methods.py)")
        return self._models[role]

    async def amodel(self, role: str, choices: RunChoices | None = None) -> Any:
        """:meth:`model` for async nodes: building a model may read files or load weights (the
        bundled local model, provider imports), so one not built yet is built in a thread,
        off the event loop (``langgraph dev`` forbids blocking I/O there). ``choices``: the run's
        :meth:`run_choices`, where the caller holds them."""
        choices = choices if choices is not None else self.run_choices()
        name = (choices.models or {}).get(role) or choices.model
        ready = self._named_models.get((name, None)) if name else (self._models or {}).get(role)
        return ready if ready is not None else await asyncio.to_thread(self.model, role)

    async def asources(self, choices: RunChoices | None = None) -> SourceSet:
        """:meth:`sources`, opening the sources (indexes, stores) off the event loop the first time
        (``choices``: as :meth:`amodel` takes them)."""
        return await self._sourcing.apick((choices if choices is not None else self.run_choices()).sources)

    def sources(self) -> SourceSet:
        """The knowledge sources of this run: the run's choice (context ``sources``), else what
        the graph was built with, else the settings' sources. Sources the user asked for (the run's
        choice, the graph's ``sources=``) are required: one that cannot be used raises
        :class:`~atomgraph.errors.SourceUnavailable` (see :mod:`atomgraph.nodes.runtime`)."""
        return self._sourcing.pick(self.run_choices().sources)

    def context_schema(self) -> type:
        """The graph's context schema: the method's dataclass with the settings' values as its
        defaults (the plain dataclass when the settings cannot be read now), plus the run's
        choice of model, temperature and sources (:class:`RunChoices`)."""
        try:
            defaults = self.section_values()
        except Exception:  # an invalid config must not stop the graph from compiling
            defaults = None
        return context_with_defaults(self.context_cls, defaults, extra=RunChoices, bound_s=self.default_bound_s)

    def state_graph(self, state: type, input_schema: type = MethodInput, output_schema: type = MethodOutput):
        """A ``StateGraph`` over ``state`` with this method's context schema and, by default,
        the method input/output contract (``state/run.py``); its async nodes run from
        ``invoke`` as well as ``ainvoke`` (:class:`~atomgraph.nodes.sync.MethodStateGraph`)."""
        from atomgraph.nodes.sync import MethodStateGraph

        return MethodStateGraph(state, context_schema=self.context_schema(), input_schema=input_schema,
                                output_schema=output_schema, door=self.door)

    def door(self, state: Any, config: RunnableConfig | None) -> None:
        """What every run of the compiled graph passes before its first node (the conditional edge
        from ``START``, :class:`~atomgraph.nodes.sync.MethodStateGraph`), LangGraph Server's runs
        included: a question-answering run's ``question`` is there and is text; its parameters are
        resolved and validated (:meth:`params`: once per run) and its choice of models names known
        roles. Each failure is one :class:`~atomgraph.errors.AtomgraphError`."""
        if self.kind == "qa":
            question = state.get("question") if isinstance(state, Mapping) else getattr(state, "question", None)
            if question is None:
                raise InvalidQuestion("the input has no 'question'; accepted: question")
            if not isinstance(question, str):
                check_question(question)
        self.params(config)
        models = self.run_choices().models
        if models:
            from atomgraph.methods import known_roles

            roles = known_roles()
            bad = sorted(str(k) for k in models if k not in roles)
            if bad:
                raise ConfigError(f"unknown model role(s) {bad} in the context's 'models'; roles are {', '.join(roles)}")

    def default_bound_s(self) -> float | None:
        """A question's bound when its run sets no deadline: ``question_timeout`` (question-answering
        graphs only; an indexing graph runs as long as its corpus needs)."""
        if self.kind != "qa":
            return None
        try:
            s = float(self.settings().question_timeout)
        except Exception:  # noqa: BLE001 - unreadable settings: the first model call reports them
            return None
        return s or None

    def params(self, config: RunnableConfig | None = None) -> C:
        """This run's parameters: settings section < the run's context < configurable keys,
        resolved and validated once per run, at its start (:meth:`door`), and kept on the run's
        context (``runtime.context``, LangGraph's ``get_runtime()``) for every node to read."""
        ctx = run_context()
        resolved = getattr(ctx, "_params", None)
        if type(resolved) is self.context_cls:
            return resolved
        conf = (config or {}).get("configurable", {}) or {}
        resolved = resolve_params(self.context_cls, self.section_values(), ctx, conf, ignore=RunChoices)
        if hasattr(ctx, "_params"):  # the run's own context object (context_with_defaults): keep them there
            ctx._params = resolved
        return resolved

    def check_paths(self, params: C) -> None:
        """A file or folder the run's client chose (a :class:`~atomgraph.state.run.DataPath`
        parameter other than the settings' value) must lie under the operator's ``data_dirs``
        (ConfigError otherwise). Called where the runtime opens them, off the event loop
        (resolving a symlink is file I/O: ``langgraph dev`` refuses it on the loop)."""
        fields_ = self._path_fields
        if fields_ is None:
            from atomgraph.state.run import data_path_fields

            fields_ = self._path_fields = data_path_fields(self.context_cls)
        if not fields_:
            return
        from atomgraph.tools.access import client_path

        section = self.section_values()
        for name, mode in fields_.items():
            value = getattr(params, name, None)
            if value and value != getattr(section, name, None):
                client_path(value, self.settings(), f"{name} path", write=mode == "write")

    def run_choices(self) -> RunChoices:
        """The run's choice of model, temperature and sources (empty outside a graph run, or
        when the run chose nothing: then nothing is validated)."""
        return self._choices_of(run_context())

    def _choices_of(self, ctx: Any) -> RunChoices:
        if ctx is None:
            return _NO_CHOICES
        choices = getattr(ctx, "_choices", None)
        if choices is not None:  # resolved once per run, kept on the run's context
            return choices
        chosen = ({k: ctx[k] for k in _CHOICE_FIELDS if k in ctx} if isinstance(ctx, dict)
                  else {k: getattr(ctx, k) for k in _CHOICE_FIELDS if hasattr(ctx, k)})
        choices = (_NO_CHOICES if all(v in (None, "", [], {}) for v in chosen.values())
                   else resolve_params(RunChoices, None, chosen, None))
        if choices is not _NO_CHOICES:
            # client values: models by name, never a file; sources by declared name, never code (tools/access.py)
            from atomgraph.tools.access import client_model, client_models

            settings = self.settings()
            if choices.model:
                client_model(choices.model, settings)
            client_models(choices.models, settings)
            if choices.sources:
                self._sourcing.check_client(choices.sources, code_only=True)
        if hasattr(ctx, "_choices"):
            ctx._choices = choices
        return choices

    # --- bounds -------------------------------------------------------------------------
    def _run_bounds(self, ctx: Any = None) -> RunBounds:
        ctx = ctx if ctx is not None else run_context()
        key = id(ctx)
        bounds = self._bounds.get(key)
        if bounds is None or bounds.keep is not ctx:
            if len(self._bounds) > 4096:
                self._bounds.clear()
            bounds = self._bounds[key] = RunBounds(keep=ctx)
        return bounds

    @staticmethod
    def deadline(config: RunnableConfig | None) -> float | None:
        """The run's deadline (``configurable["deadline"]``, a ``time.time()`` value), if any."""
        return deadline_of(config)

    def request_bound(self) -> float:
        """How long one model call may take, whole: ``request_timeout`` × (1 + ``max_retries``)."""
        s = self.settings()
        return float(s.request_timeout) * (1 + max(0, int(s.max_retries)))

    def tripped(self) -> str | None:
        """Why this run's model calls were stopped (the circuit breaker), if they were."""
        return self._run_bounds().tripped

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
        A reply cut for length is asked again once at the stage's retry cap where it declares one
        (:meth:`Stage.retry_cap`; ``result.calls`` holds both records, the retry's says ``retry``).
        Never raises for a failed call or an unreadable reply: each comes back on the result and
        its record. A missing or invalid model configuration raises ConfigError (a ValueError
        whose text says what to set)."""
        role = role or stage.role
        settings = self.settings()
        cap = self.stage_cap(stage)
        recorder = CallRecorder(role=role, stage=stage.name, cap=cap)
        ctx = run_context()  # the run's context, read once a call
        bounds = self._run_bounds(ctx)
        refusal = bounds.refusal(deadline_of(config, ctx))
        if refusal:
            return StageResult(None, None, recorder.refused(refusal))
        choices = self._choices_of(ctx)
        model = await self.amodel(role, choices)  # a missing or invalid model configuration raises ConfigError
        # Nodes read rt.sources() synchronously: open them off the loop first. A source the user
        # asked for that cannot be used raises here, before the call.
        await self.asources(choices)
        name, local = self.model_facts(model)
        recorder.defaults["model"] = name
        if temperature is None:
            temperature = choices.temperature
        if ((constraint is not None or settings.structured_output)  # a llama.cpp server's structured form too
                and (id(model), backend_kind) not in self._backends):
            await asyncio.to_thread(self.backend_of, model, backend_kind)  # may ask the server who it is: off the loop
        runnable, applied = self._runnable(stage, role, model, local, cap, temperature, constraint, logprobs,
                                           backend_kind)
        result = await call_stage(stage, variables, runnable, config, recorder, cap, constraint=constraint,
                                  applied=applied, bound_s=self.request_bound())
        bounds.settle(result.call, settings.max_consecutive_failures)
        retry_cap = stage.retry_cap(cap)
        if (retry_cap and result.call.cut and not result.call.error
                and not bounds.refusal(deadline_of(config, ctx))):
            # the reply came back cut: one retry at the stage's retry cap (the authors' practice);
            # a second cut is read as any cut reply is
            recorder = CallRecorder(role=role, stage=stage.name, model=name, cap=retry_cap)
            runnable, applied = self._runnable(stage, role, model, local, retry_cap, temperature, constraint,
                                               logprobs, backend_kind)
            retried = await call_stage(stage, variables, runnable, config, recorder, retry_cap,
                                       constraint=constraint, applied=applied, bound_s=self.request_bound())
            retried.call.retry = True
            retried.earlier = [result.call]
            bounds.settle(retried.call, settings.max_consecutive_failures)
            return retried
        return result

    def _runnable(self, stage: Stage, role: str, model: Any, local: bool, cap: int, temperature: float | None,
                  constraint: Constraint | None, logprobs: bool, backend_kind: str) -> tuple[Any, Applied | None]:
        """The model as this stage calls it (capped, sampled, structured or constrained); the
        unconstrained forms are built once per stage and model."""
        # An in-process model decodes a schema-declaring stage under its JSON-schema grammar by default,
        # except where it continues a stage's text demonstrations (text_reply).
        settings = self.settings()
        structured = (settings.structured_output or local) and constraint is None
        if structured and local and text_reply(stage, model, settings):
            structured = False
        key = (stage.name, id(stage), role, id(model), cap, structured, temperature)
        if constraint is None and not logprobs:
            runnable = self._chains.get(key)
            if runnable is None:
                sampler = model if temperature is None else with_temperature(model, temperature)
                runnable = self._chains[key] = stage.model_for(sampler, cap, structured=structured)
            return runnable, None
        capped = self._chains.get((*key[:5], "capped", temperature))
        if capped is None:  # the capped model, built once per stage and model; the constraint is this call's
            sampler = model if temperature is None else with_temperature(model, temperature)
            capped = self._chains[(*key[:5], "capped", temperature)] = stage.model_for(sampler, cap)
        applied = None
        if constraint is not None:
            kind, reason = self.backend_of(model, backend_kind)
            capped, applied = constrain(capped, constraint, kind, reason)
        if logprobs:
            capped = capped.bind(logprobs=True)
        return capped, applied

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
        Failures become records and notes; the others' evidence is kept. Passages that address
        the model are flagged, or dropped under :meth:`drop_suspect`."""
        return await retrieve_from(await self.asources(), source_names, query=query, k=k, operator=operator,
                                   args=args, question=question, drop_suspect=self.drop_suspect())

    def drop_suspect(self) -> bool:
        """Whether this run drops retrieved passages that address the model: the settings'
        ``drop_suspect_evidence`` (default off: flag only), or the run's context asking for it. A
        run's context can turn dropping on, never off where the operator's settings turn it on."""
        return bool(self.settings().drop_suspect_evidence or self.run_choices().drop_suspect_evidence)


# --- source selection -----------------------------------------------------------------------
# Source selection: which knowledge sources a run reads, and querying them.
#
# Asked for means required: the sources a user named — the graph's ``sources=``, a run's context
# ``sources`` — must all be usable; one that cannot be (a misspelt collection, a dead server, an
# empty index) raises :class:`~atomgraph.errors.SourceUnavailable` when a run first reads its
# sources, which is before its first model call. The settings' sources (nothing named) are
# offered: an unusable one is set aside with its reason.
#
# :class:`RunSources` resolves a graph's sources once (what the graph was built with, else the
# settings' sources) and a run's own choice (context ``sources``: a subset of the graph's, or
# sources built from the settings by name); :func:`retrieve_from` queries named sources
# concurrently, every call recorded. :class:`~atomgraph.nodes.runtime.MethodRuntime` offers both
# as ``rt.sources()`` / ``rt.asources()`` / ``rt.retrieve(...)``.
#
# A long-lived graph (``langgraph dev``, a notebook kernel) looks again, at most every
# ``RunSources.recheck_s`` seconds, at the settings' sources it could not use: a collection indexed
# after the graph first opened its sources (``atomgraph index wikipedia`` in another terminal, the
# ``wikipedia_index`` graph) is read by the next run, not only by runs that name it.

class RunSources:
    """A graph's knowledge sources and the runs' choices among them (each opened on first use)."""

    recheck_s: float = 10.0  # how often settings' sources that could not be used are looked at again

    def __init__(self, given: SourceSet | Iterable[KnowledgeSource] | None, settings: Callable[[], Settings]):
        self.given = given
        self._settings = settings
        self._base: SourceSet | None = None
        self._checked = 0.0  # when the settings' unusable sources were last looked at (time.monotonic())
        self._named: dict[tuple[str, ...], SourceSet] = {}
        self._from_settings: set[tuple[str, ...]] = set()  # chosen sets built from the settings by name
        self._lock = threading.RLock()  # sources are opened once, whichever question asks first

    @property
    def opened(self) -> bool:
        """Whether the graph's own sources have been opened."""
        return self._base is not None

    def base(self, required: bool = True) -> SourceSet:
        """What the graph was built with (required, when ``required``), else the settings' sources."""
        if self._base is None:
            with self._lock:
                if self._base is None:
                    self._base = as_source_set(self.given, self._settings())
                    self._checked = time.monotonic()
        if required and self.given is not None:  # the graph's own sources= : asked for, so required
            self._base.require()
        return self._base

    def check_client(self, names: list[str], code_only: bool = False) -> None:
        """A run's chosen source names, refused (ConfigError) unless each is registered, named by
        the settings, or one of the sources the graph was built with (never code to import).
        ``code_only``: only the names that would be imported (``module:attr``) are looked at
        (before the graph's own sources are open; an unknown plain name is refused by name later)."""
        from atomgraph.tools.access import client_sources

        if code_only:
            names = [n for n in names if not isinstance(n, str) or ":" in n]
        if names:
            client_sources(names, self._settings(), list(self._given_names()))

    def _given_names(self) -> Iterable[str]:
        """The names of the graph's own sources (``sources=``), once they are open."""
        base = self._base
        return [*base.available, *base.unavailable] if base is not None else []

    def pick(self, names: list[str] | None) -> SourceSet:
        """The sources a run reads: ``names`` (the run's choice, each required) when given, else
        :meth:`base`. A chosen source that was unusable is looked at again (built anew from the
        settings) before the run is refused: it may have been indexed since (``wikipedia_index``
        in the same server)."""
        if not names:
            return self.base()
        key = tuple(names)
        chosen = self._named.get(key)
        if chosen is None or self._stale(key, names):
            with self._lock:
                if key not in self._named:
                    own = self.base(required=False)
                    if all(n in own.available or n in own.unavailable for n in names):  # a subset of the graph's
                        self._named[key] = SourceSet(
                            available={n: own.available[n] for n in names if n in own.available},
                            unavailable={n: own.unavailable[n] for n in names if n in own.unavailable})
                        if self.given is None:  # the base may be older than an index built since
                            self._from_settings.add(key)
                            if self._stale(key, names):
                                self._reopen(key, names)
                    else:  # sources the graph was not built with: built from the settings by name (never code)
                        self.check_client(names)
                        self._named[key] = build_sources(self._settings(), names)
                        self._from_settings.add(key)
                elif self._stale(key, names):
                    self._reopen(key, names)
                chosen = self._named[key]
        return chosen.require(names)

    def _stale(self, key: tuple[str, ...], names: list[str]) -> bool:
        """A chosen set built from the settings with a source it could not use (worth a new look)."""
        chosen = self._named.get(key)
        return (chosen is not None and key in self._from_settings
                and any(n in chosen.unavailable for n in names))

    def _reopen(self, key: tuple[str, ...], names: list[str]) -> None:
        chosen = self._named[key]
        fresh = build_sources(self._settings(), [n for n in names if n in chosen.unavailable])
        for n, source in fresh.available.items():
            chosen.unavailable.pop(n, None)
            chosen.available[n] = source
        chosen.unavailable.update(fresh.unavailable)

    def recheck_due(self) -> bool:
        """Whether the settings' sources hold one that could not be used, last looked at more than
        :attr:`recheck_s` seconds ago (never for the graph's own ``sources=``: those are required)."""
        base = self._base
        return (self.given is None and base is not None and bool(base.unavailable)
                and time.monotonic() - self._checked >= self.recheck_s)

    def recheck(self) -> list[str]:
        """Look again at the settings' sources that could not be used; the names of those usable
        now. The sources already open are kept; the set is replaced, not changed, so a run
        holding the earlier set reads it unchanged."""
        with self._lock:
            base = self._base
            if base is None or self.given is not None or not base.unavailable:
                return []
            self._checked = time.monotonic()
            fresh = build_sources(self._settings(), list(base.unavailable), quiet=True)
            if not fresh.available:
                return []
            held = [*base.available, *base.unavailable]
            order = [n for n in self._settings().sources if n in held] + held  # the settings' order
            available = {n: base.available.get(n) or fresh.available[n] for n in dict.fromkeys(order)
                         if n in base.available or n in fresh.available}
            available.update((n, src) for n, src in fresh.available.items() if n not in available)
            self._base = SourceSet(available=available, unavailable=dict(fresh.unavailable))
            for key in [k for k in self._named if k in self._from_settings and set(k) & set(fresh.available)]:
                self._named.pop(key)  # a run's choice that held a source usable now: built again
            log.info("knowledge source(s) %s usable now (not when this graph first opened its sources)",
                     ", ".join(fresh.available))
            return list(fresh.available)

    async def apick(self, names: list[str] | None) -> SourceSet:
        """:meth:`pick`, opening sources (indexes, stores) off the event loop the first time, and
        looking again at unusable settings' sources when :meth:`recheck_due`."""
        if self.recheck_due():
            await asyncio.to_thread(self.recheck)
        key = tuple(names or ())
        if self._base is None or (names and (key not in self._named or self._stale(key, names))):
            return await asyncio.to_thread(self.pick, names)
        return self.pick(names)


async def retrieve_from(sources: SourceSet, source_names: list[str], *, query: str, k: int,
                        operator: str | None = None, args: list[str] | None = None,
                        question: str = "", drop_suspect: bool = False,
                        ) -> tuple[list[Evidence], list[RetrieverCall], list[str]]:
    """Query the named sources concurrently (an operator call, or a plain search). Failures
    become records and notes; the others' evidence is kept."""

    async def one(name: str) -> tuple[list[Evidence], RetrieverCall]:
        source = sources.get(name)
        if source is None:
            label = f"{operator}({', '.join(args or [])})" if operator else query
            return [], RetrieverCall(source=name, query=label, error="source unavailable")
        return await recorded_retrieval(source, query, k, operator=operator, args=args, question=question,
                                        drop_suspect=drop_suspect)

    results = await at_once(*(one(n) for n in source_names))
    evidence: list[Evidence] = []
    calls: list[RetrieverCall] = []
    notes: list[str] = []
    for hits, call in results:
        evidence.extend(hits)
        calls.append(call)
        if call.error:
            notes.append(f"retrieval failed — {call.source}: {call.error}")
    return evidence, calls, notes
