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
  sources (:mod:`atomgraph.nodes.sources`), queried concurrently, each call recorded.

Elsewhere: the sync/async bridge (:func:`dual`, :func:`run_sync`, :func:`call_model`) in
:mod:`atomgraph.nodes.sync`; reply cutting (:func:`cut_reply`) in :mod:`atomgraph.nodes.replies`.
"""

from __future__ import annotations

import asyncio
from dataclasses import fields
from typing import Any, Generic, Iterable, Mapping, TypeVar

from langchain_core.runnables import RunnableConfig

from atomgraph.errors import ConfigError
from atomgraph.methods import Method, declaration
from atomgraph.models import ModelsArg, chat_model_named, is_model_like, model_name, resolve_models, with_temperature
from atomgraph.nodes.call import RunBounds, StageResult, call_stage, deadline_of
from atomgraph.nodes.recorder import CallRecorder
from atomgraph.nodes.replies import cut_message, cut_reply, reply_chars
from atomgraph.nodes.sources import RunSources, retrieve_from
from atomgraph.nodes.sync import call_model, dual, in_sync_run, run_sync, sync_loop
from atomgraph.prompts.constraints import Applied, Constraint, backend, constrain, is_local
from atomgraph.prompts.stage import Stage
from atomgraph.settings import Settings, get_settings
from atomgraph.state.context import RunChoices, context_with_defaults, resolve_params, run_context
from atomgraph.state.evidence import Evidence
from atomgraph.state.output import MethodInput, MethodOutput
from atomgraph.state.usage import RetrieverCall
from atomgraph.tools.base import KnowledgeSource
from atomgraph.tools.registry import SourceSet

__all__ = ["MethodRuntime", "StageResult", "call_model", "cut_message", "cut_reply", "dual", "in_sync_run",
           "reply_chars", "run_sync", "sync_loop"]

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
        self._settings = settings
        self._sourcing = RunSources(sources, self.settings)
        self._chains: dict[tuple, Any] = {}  # (stage, role, model, cap, mode, temperature) -> capped model
        self._bounds: dict[int, RunBounds] = {}

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
        return await self._sourcing.apick(self.run_choices().sources)

    def sources(self) -> SourceSet:
        """The knowledge sources of this run: the run's choice (context ``sources``), else what
        the graph was built with, else the settings' sources. Sources the user asked for (the run's
        choice, the graph's ``sources=``) are required: one that cannot be used raises
        :class:`~atomgraph.errors.SourceUnavailable` (see :mod:`atomgraph.nodes.sources`)."""
        return self._sourcing.pick(self.run_choices().sources)

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

        g = MethodStateGraph(state, context_schema=self.context_schema(), input_schema=input_schema,
                             output_schema=output_schema)
        g.default_bound_s = self.default_bound_s
        return g

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
    def _run_bounds(self) -> RunBounds:
        ctx = run_context()
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
        Never raises for a failed call or an unreadable reply: each comes back on the result and
        its record. A missing or invalid model configuration raises ConfigError (a ValueError
        whose text says what to set)."""
        role = role or stage.role
        settings = self.settings()
        cap = settings.stage_cap(stage.name, stage.max_tokens)
        recorder = CallRecorder(role=role, stage=stage.name, cap=cap)
        bounds = self._run_bounds()
        refusal = bounds.refusal(deadline_of(config))
        if refusal:
            return StageResult(None, None, recorder.refused(refusal))
        model = await self.amodel(role)  # a missing or invalid model configuration raises ConfigError (a ValueError)
        # Nodes read rt.sources() synchronously: open them off the loop first. A source the user
        # asked for that cannot be used raises here, before the call.
        await self.asources()
        recorder.defaults["model"] = model_name(model)
        if temperature is None:
            temperature = self.run_choices().temperature
        if constraint is not None:  # may ask the server who it is (HTTP, cached): not on the event loop
            await asyncio.to_thread(backend, model, backend_kind)
        runnable, applied = self._runnable(stage, role, model, cap, temperature, constraint, logprobs, backend_kind)
        result = await call_stage(stage, variables, runnable, config, recorder, cap, constraint=constraint,
                                  applied=applied, bound_s=self.request_bound())
        bounds.settle(result.call, settings.max_consecutive_failures)
        return result

    def _runnable(self, stage: Stage, role: str, model: Any, cap: int, temperature: float | None,
                  constraint: Constraint | None, logprobs: bool, backend_kind: str) -> tuple[Any, Applied | None]:
        """The model as this stage calls it (capped, sampled, structured or constrained); the
        unconstrained forms are built once per stage and model."""
        # An in-process model decodes a schema-declaring stage under its JSON-schema grammar by default,
        # except where it continues a stage's text demonstrations (text_reply).
        settings = self.settings()
        structured = (settings.structured_output or is_local(model)) and constraint is None
        if structured and text_reply(stage, model, settings):
            structured = False
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
        return await retrieve_from(await self.asources(), source_names, query=query, k=k, operator=operator,
                                   args=args, question=question)
