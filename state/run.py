"""What every run of every method shares: its parameters, its records, its evidence and its output.

One module, read in the order a run meets them:

1. **Run parameters** — one declared dataclass per method, used three ways: as the method's
   section of the settings (``[atomr]`` in ``atomgraph.toml``, ``ATOMGRAPH_ATOMR__TOP_K`` in the
   environment); as the graph's LangGraph ``context_schema``, which LangGraph Studio draws as a
   form (each field's ``Field(description=...)`` is the form's help text); as the per-run
   parameters a node reads (:func:`resolve_params`). A field is declared
   ``name: Annotated[type, Field(ge=..., description=...)] = default`` on a
   ``@dataclass(kw_only=True)``. Priority, lowest first: the dataclass default, the settings
   section, the run's ``context``, then ``config["configurable"]`` keys of the same names.
2. **Usage records** — one :class:`LLMCall` per model call and one :class:`RetrieverCall` per
   retriever call, kept in a graph's state; their totals (:func:`summarize_usage`) and what they
   cost (prices in USD per 1M input / output tokens: the built-in table covers a few common
   models; ``settings.prices`` is merged over it; a model missing from it costs 0 and is reported
   unpriced). A call answered from the response cache is recorded (``cached=True``) but counts no
   call, token or dollar in the totals: ``cached_calls`` counts it.
3. **Evidence** — one retrieved item from a knowledge source, in a shape every source shares.
4. **The output contract** every method graph returns (and the runner, ``atomgraph ask``,
   reports and the demo read): ``answer``, ``answers``, ``trace``, ``llm_calls`` /
   ``retriever_calls``, ``retrieved_ids`` / ``retrieved_titles``, ``stopped``, ``error``.
"""

from __future__ import annotations

import dataclasses
import time
import typing
from collections import Counter, defaultdict
from typing import Annotated, Any, Callable, Iterable, Mapping, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic (Studio's JSON schemas) needs this one on 3.11

from atomgraph.errors import AtomgraphError, ConfigError

# --- run parameters ---------------------------------------------------------------------------
C = TypeVar("C")

_ADAPTERS: dict[type, TypeAdapter] = {}


def _adapter(cls: type) -> TypeAdapter:
    if cls not in _ADAPTERS:
        if dataclasses.is_dataclass(cls) and "__pydantic_config__" not in vars(cls):
            cls.__pydantic_config__ = ConfigDict(allow_inf_nan=False)  # NaN and infinities are no run parameter
        _ADAPTERS[cls] = TypeAdapter(cls)
    return _ADAPTERS[cls]


def param_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def validate_params(cls: type[C], values: Mapping[str, Any]) -> C:
    """``cls(**values)`` validated (types coerced, bounds checked); ConfigError naming the field."""
    unknown = sorted(set(values) - set(param_names(cls)))
    if unknown:
        raise ConfigError(f"unknown {cls.__name__} parameter(s): {', '.join(unknown)}; "
                          f"known: {', '.join(param_names(cls))}")
    conflict = getattr(cls, "conflicts", None)
    message = conflict(dict(values)) if callable(conflict) else ""
    if message:
        raise ConfigError(f"{cls.__name__} parameters conflict: {message}")
    try:
        return _adapter(cls).validate_python(dict(values))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(x) for x in first["loc"])
        what = f"parameter {field!r} is" if field else "parameters are"  # no field: a rule across fields
        raise ConfigError(f"{cls.__name__} {what} invalid: {first['msg']}") from exc


@dataclasses.dataclass(frozen=True)
class DataPath:
    """Marks a run parameter that names a file or folder (``Annotated[str | None, Field(...),
    DataPath("read")]``): a value a run's client gives (its ``context`` or ``configurable``, a
    recipe) must lie under the operator's ``data_dirs`` (:func:`atomgraph.tools.access.client_path`)."""

    mode: str = "read"  # "read" or "write"


def data_path_fields(cls: type) -> dict[str, str]:
    """The :class:`DataPath` fields of a run-parameter dataclass: name -> mode."""
    if not dataclasses.is_dataclass(cls):
        return {}
    hints = typing.get_type_hints(cls, include_extras=True)
    out = {}
    for f in dataclasses.fields(cls):
        for meta in getattr(hints.get(f.name), "__metadata__", ()):
            if isinstance(meta, DataPath):
                out[f.name] = meta.mode
    return out


@dataclasses.dataclass(kw_only=True)
class RunChoices:
    """What every method's run can choose besides its parameters: the chat model (for every
    role, or per role), its sampling temperature, the knowledge sources, and whether retrieved
    passages that address the model are dropped (on top of the settings'; never off). Blank values keep
    what the graph was built with (or the settings); Studio shows them on every graph's form."""

    model: Annotated[str, Field(description=(
        "Chat model for every role in this run, by name: an OpenAI or OpenAI-compatible model name, "
        "'local' (the bundled in-process model), an init_chat_model string such as "
        "'anthropic:claude-sonnet-4-5', or a model the settings configure; never a file path "
        "(allowed_models, when set, lists the names offered). Blank: the configured model."))] = ""
    models: Annotated[dict[str, str], Field(description=(
        "Chat model per role for this run (e.g. {\"planner\": \"gpt-4o\"}), over 'model'."))] = \
        dataclasses.field(default_factory=dict)
    temperature: Annotated[float | None, Field(ge=0.0, le=2.0, description=(
        "Sampling temperature of this run's model calls (stages with a temperature of their own keep it). "
        "Blank: the settings' temperature."))] = None
    sources: Annotated[list[str], Field(description=(
        "Knowledge sources for this run, by registered or configured name (e.g. [\"wikipedia\", \"wikidata\"]; "
        "never code such as 'module:attr'). "
        "Empty: the sources the graph was built with, or the settings' sources."))] = \
        dataclasses.field(default_factory=list)
    drop_suspect_evidence: Annotated[bool | None, Field(description=(
        "Drop retrieved passages that address the model (instruction phrasing, role markers, 'answer X': "
        "atomgraph.injection) before any prompt sees them; off or blank: the settings' drop_suspect_evidence "
        "(a run turns dropping on, never off where the settings turn it on)."))] = None


def run_context() -> Any:
    """The current graph run's context (LangGraph's ``get_runtime().context``); None outside a run."""
    try:
        from langgraph.runtime import get_runtime

        return get_runtime().context
    except (RuntimeError, KeyError, AttributeError):
        return None


def context_with_defaults(cls: type[C], defaults: C | None, extra: type | None = None,
                          bound_s: Callable[[], float | None] | None = None) -> type[C]:
    """A subclass of ``cls`` (same name) whose field defaults are the values of ``defaults``
    (the settings section), so Studio's form shows, and a partial ``context`` dict keeps,
    what the settings say rather than the paper's defaults; with ``extra``'s fields
    (:class:`RunChoices`) added. Building it with an unknown key raises a ConfigError (a
    ValueError) that lists the valid ones.

    An instance is one run's context: LangGraph builds it from the run's ``context`` dict when
    the run starts (a Python call through :class:`~atomgraph.lc.MethodGraph`, as a LangGraph
    Server run), so building it stamps the run's default deadline, ``bound_s()`` seconds from
    now (``_deadline``; None when ``bound_s`` is unset or gives none), and it holds the run's
    resolved parameters once they are resolved (``_params`` and ``_choices``: :meth:`~atomgraph.nodes.runtime.MethodRuntime.params`,
    :meth:`~atomgraph.nodes.runtime.MethodRuntime.run_choices`)."""
    if extra is None and bound_s is None and (defaults is None or
                                              dataclasses.asdict(defaults) == dataclasses.asdict(cls())):
        return cls
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = [
        (f.name, hints[f.name], dataclasses.field(default=getattr(defaults, f.name)) if defaults is not None
         else _same_default(f))
        for f in dataclasses.fields(cls)
    ]
    if extra is not None:
        extra_hints = typing.get_type_hints(extra, include_extras=True)
        fields += [(f.name, extra_hints[f.name], _same_default(f)) for f in dataclasses.fields(extra)
                   if f.name not in {name for name, *_ in fields}]
    sub = dataclasses.make_dataclass(cls.__name__, fields, bases=(cls,), kw_only=True)
    init = sub.__init__
    names = [name for name, *_ in fields]

    def __init__(self, **kwargs):
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise ConfigError(f"unknown {cls.__name__} parameter(s): {', '.join(unknown)}; "
                              f"known: {', '.join(names)}")
        init(self, **kwargs)
        seconds = bound_s() if bound_s is not None else None
        self._deadline = time.time() + seconds if seconds else None
        self._params = self._choices = None

    sub.__init__ = __init__
    sub.__doc__ = cls.__doc__
    sub.__module__ = cls.__module__
    return sub


def _same_default(f: dataclasses.Field) -> dataclasses.Field:
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return dataclasses.field(default_factory=f.default_factory)  # type: ignore[misc]
    return dataclasses.field(default=f.default)


def resolve_params(cls: type[C], base: C | None, context: Any = None,
                   configurable: Mapping[str, Any] | None = None, ignore: type | None = None) -> C:
    """The parameters of one run: ``base`` (settings) < ``context`` < ``configurable``
    (keys of ``ignore``'s fields in the context are someone else's and are left out)."""
    values: dict[str, Any] = dataclasses.asdict(base) if base is not None else {}
    names = set(param_names(cls))
    others = set(param_names(ignore)) if ignore is not None else set()
    if context is not None:
        if isinstance(context, Mapping):
            values.update({k: v for k, v in context.items() if k not in others or k in names})
        elif dataclasses.is_dataclass(context):
            values.update({f.name: getattr(context, f.name) for f in dataclasses.fields(context)
                           if f.name in names})
        else:
            raise ConfigError(f"run context must be a {cls.__name__} or a dict, not {type(context).__name__}")
    values.update({k: v for k, v in (configurable or {}).items() if k in names and v is not None})
    return validate_params(cls, values)


# --- usage records: one per LLM call and one per retriever call, their totals and cost -----------
# Usage records — one per LLM call and one per retriever call, kept in a graph's state —
# their totals, and what they cost.
#
# A call answered from the response cache is recorded (``cached=True``) but counts no call,
# token or dollar in the totals: ``cached_calls`` counts it.
#
# Prices are USD per 1M input / output tokens: the built-in table below covers a few common
# models; ``settings.prices`` (TOML ``[prices]`` or ``ATOMGRAPH_PRICES='{"my-model": [0.2, 0.8]}'``)
# is merged over it. A model missing from the table costs 0 and is reported as unpriced.

class LLMCall(BaseModel):
    """One chat-model call: who made it, what it cost, how long it took."""

    role: str
    stage: str = ""  # the reasoning stage (e.g. "plan", "search", "child_reasoning")
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    max_tokens: int | None = None  # the output cap the call ran under
    error: str | None = None  # the call failed (network, auth, rate limit after retries)
    parse_error: str | None = None  # the call returned, but its output could not be read
    constraint: str | None = None  # how a constrained call's reply was constrained, or why it was not
    capped: bool = False  # the reply ran past the cap (a server ignoring max_tokens): cut client-side before parsing
    reply_chars: int | None = None  # the reply's length in characters before that cut (set when capped)
    usage_flag: str | None = None  # server usage disagrees with the tokenizer count (nodes/call.py)
    finish_reason: str | None = None  # why the server ended the reply ("stop", "length", "tool_calls", ...)
    cleaned: dict | None = None  # hidden characters removed from the reply: {"removed": [code points], "count": n}
    cut: bool = False  # the reply was cut (the server ended it for length, or it ran past the cap): never an answer
    retry: bool = False  # the stage's one retry at its retry cap (Stage.retry_max_tokens), the call before it cut


class RetrieverCall(BaseModel):
    """One knowledge-source call."""

    source: str
    query: str
    hits: int = 0
    latency_s: float = 0.0
    error: str | None = None
    cut: str | None = None  # the source cut its reply at a bound (rows, bytes, time): what it kept is partial
    suspect: int = 0  # hits that address the model (atomgraph.injection), flagged or dropped
    dropped: int = 0  # of those, dropped before any prompt (drop_suspect_evidence)


def add_records(current: list | None, new: list | None) -> list[dict]:
    """The state reducer of usage records: appends, and keeps each record as a plain dict, so a
    graph's output is JSON as returned (``json.dumps(graph.invoke(...))``) and survives a
    checkpoint unchanged. Nodes may write :class:`LLMCall` / :class:`RetrieverCall` objects."""
    out = list(current or [])
    out.extend(r.model_dump() if isinstance(r, BaseModel) else dict(r) for r in (new or []))
    return out


# A graph state's usage fields: ``llm_calls: CallRecords``, ``retriever_calls: CallRecords``.
CallRecords = Annotated[list[dict], add_records]


class UsageSummary(BaseModel):
    llm_calls: int = 0  # calls that reached a model (cache hits are counted in cached_calls)
    cached_calls: int = 0
    llm_calls_by_role: dict[str, int] = {}
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_by_role: dict[str, tuple[int, int]] = {}
    tokens_by_model: dict[str, tuple[int, int]] = {}
    retriever_calls: int = 0
    retriever_calls_by_source: dict[str, int] = {}
    retriever_failures_by_source: dict[str, int] = {}  # source calls that failed (an error, not "no hits")
    llm_latency_s: float = 0.0
    retriever_latency_s: float = 0.0


def summarize_usage(llm: Iterable[LLMCall | dict], retrieval: Iterable[RetrieverCall | dict]) -> UsageSummary:
    """Totals per role, model and source, for reports and cost."""
    llm = [c if isinstance(c, LLMCall) else LLMCall.model_validate(c) for c in llm]
    retrieval = [c if isinstance(c, RetrieverCall) else RetrieverCall.model_validate(c) for c in retrieval]
    cached = sum(1 for c in llm if c.cached)
    llm = [c for c in llm if not c.cached]
    by_role: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_model: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for c in llm:
        by_role[c.role][0] += c.prompt_tokens
        by_role[c.role][1] += c.completion_tokens
        key = c.model or "unknown"
        by_model[key][0] += c.prompt_tokens
        by_model[key][1] += c.completion_tokens
    return UsageSummary(
        llm_calls=len(llm),
        cached_calls=cached,
        llm_calls_by_role=dict(Counter(c.role for c in llm)),
        prompt_tokens=sum(c.prompt_tokens for c in llm),
        completion_tokens=sum(c.completion_tokens for c in llm),
        tokens_by_role={k: (v[0], v[1]) for k, v in by_role.items()},
        tokens_by_model={k: (v[0], v[1]) for k, v in by_model.items()},
        retriever_calls=len(retrieval),
        retriever_calls_by_source=dict(Counter(c.source for c in retrieval)),
        retriever_failures_by_source=dict(Counter(c.source for c in retrieval if c.error)),
        llm_latency_s=sum(c.latency_s for c in llm),
        retriever_latency_s=sum(c.latency_s for c in retrieval),
    )


def add_usage(summaries: Iterable[dict]) -> UsageSummary:
    """Totals over per-example usage summaries (the ``usage`` of evaluation records)."""
    total = UsageSummary()
    by_role: Counter = Counter()
    by_source: Counter = Counter()
    failed: Counter = Counter()
    tokens: dict[str, dict[str, list[int]]] = {"tokens_by_role": defaultdict(lambda: [0, 0]),
                                                "tokens_by_model": defaultdict(lambda: [0, 0])}
    for u in summaries:
        total.llm_calls += int(u.get("llm_calls", 0))
        total.cached_calls += int(u.get("cached_calls", 0))
        total.prompt_tokens += int(u.get("prompt_tokens", 0))
        total.completion_tokens += int(u.get("completion_tokens", 0))
        total.retriever_calls += int(u.get("retriever_calls", 0))
        by_role.update(u.get("llm_calls_by_role") or {})
        by_source.update(u.get("retriever_calls_by_source") or {})
        failed.update(u.get("retriever_failures_by_source") or {})
        for key, acc in tokens.items():
            for name, (p, c) in (u.get(key) or {}).items():
                acc[name][0] += int(p)
                acc[name][1] += int(c)
    total.llm_calls_by_role = dict(by_role)
    total.retriever_calls_by_source = dict(by_source)
    total.retriever_failures_by_source = dict(failed)
    total.tokens_by_role = {k: (v[0], v[1]) for k, v in tokens["tokens_by_role"].items()}
    total.tokens_by_model = {k: (v[0], v[1]) for k, v in tokens["tokens_by_model"].items()}
    return total


# --- prices ----------------------------------------------------------------------------------

# USD per 1M tokens: (input, output). List prices as published by the providers.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-2024-08-06": (2.50, 10.00),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o-mini-2024-07-18": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-3.5-turbo": (0.50, 1.50),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-3-5-haiku-latest": (0.80, 4.00),
}


def price_table(settings: Any = None, extra: Mapping[str, tuple[float, float]] | None = None) -> dict[str, tuple[float, float]]:
    """Built-in prices, overridden by ``settings.prices`` (a Settings) and then by ``extra``."""
    table = dict(DEFAULT_PRICES)
    if settings is not None:
        table.update({k: (float(v[0]), float(v[1])) for k, v in settings.prices.items()})
    if extra:
        table.update({k: (float(v[0]), float(v[1])) for k, v in extra.items()})
    return table


def lookup_price(model: str | None, table: Mapping[str, tuple[float, float]]) -> tuple[float, float] | None:
    """The price of ``model``: exact name, then without a ``provider:`` prefix."""
    if not model:
        return None
    if model in table:
        return table[model]
    bare = model.split(":", 1)[1] if ":" in model else model
    return table.get(bare)


def tokens_cost(model: str | None, prompt_tokens: int, completion_tokens: int,
                table: Mapping[str, tuple[float, float]]) -> float | None:
    price = lookup_price(model, table)
    if price is None:
        return None
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000


def models_cost(tokens_by_model: Mapping[str, tuple[int, int]], table: Mapping[str, tuple[float, float]]) -> tuple[float, list[str]]:
    """Total dollars of (input, output) token counts per model, and the sorted names of
    models with tokens but no price."""
    total, unpriced = 0.0, set()
    for model, (tin, tout) in tokens_by_model.items():
        cost = tokens_cost(model, tin, tout, table)
        if cost is None:
            if tin or tout:
                unpriced.add(model)
        else:
            total += cost
    return total, sorted(unpriced)


def calls_cost(calls: Iterable[LLMCall | dict], table: Mapping[str, tuple[float, float]]) -> tuple[float, list[str]]:
    """Total dollars of ``calls`` and the sorted names of models with no price."""
    return models_cost(summarize_usage(calls, []).tokens_by_model, table)


# --- Evidence: one retrieved item from a knowledge source.
class Evidence(BaseModel):
    """A passage, web result or KG fact, in a shape every source shares."""

    title: str = ""
    text: str
    source: str  # the knowledge source's registered name
    url: str | None = None  # web link, or None
    id: str | None = None  # passage id / entity id
    score: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    # it addresses the model (instruction phrasing, role markers, "answer X"): atomgraph.injection
    suspect_instruction: bool = False

    def render(self) -> str:
        """'Title | text', the papers' passage format."""
        return f"{self.title} | {self.text}" if self.title else self.text


MAX_EVIDENCE_CHARS = 4000  # an evidence item's text as kept in a trace (outputs, --json, Studio, run records)


def evidence_record(ev: Evidence, max_chars: int = MAX_EVIDENCE_CHARS,
                    fields: Iterable[str] = ("id", "title", "source", "url", "text")) -> dict[str, Any]:
    """An evidence item as a trace keeps it: ``fields`` of it, its text (and title) cut to ``max_chars``
    characters; a cut item says so with its full length (``text_chars``; ``title_chars``). A retriever's
    10 MB passage costs a trace 4,000 characters, not 10 MB per question. An item that addresses the
    model (:mod:`atomgraph.injection`) says ``suspect_instruction: true``."""
    out = ev.model_dump(include=set(fields))
    for key in ("text", "title"):
        value = out.get(key)
        if isinstance(value, str) and len(value) > max_chars:
            out[key] = value[:max_chars]
            out[f"{key}_chars"] = len(value)
    if ev.suspect_instruction:
        out["suspect_instruction"] = True
    return out


def render_evidence(items: list[Evidence], max_chars_per_item: int = 1200) -> str:
    """Numbered lines ``[1] Title | text`` for a prompt, fenced as data (``<evidence>`` ...
    ``</evidence>``: :func:`atomgraph.injection.fence`); ``""`` for none."""
    from atomgraph.injection import fence

    lines = []
    for i, ev in enumerate(items, 1):
        text = ev.render()
        if len(text) > max_chars_per_item:
            text = text[: max_chars_per_item - 3] + "..."
        lines.append(f"[{i}] {text}")
    return fence("\n".join(lines))


# --- The one output contract every method graph returns, and the runner, ``atomgraph ask``,
# reports and the demo read.
#
# - ``answer`` — the final answer text ("" when there is none; never a passage of evidence);
# - ``answers`` — the answer list (several for list questions);
# - ``trace`` — the method's own account of the run (``trace["method"]`` names it);
# - ``llm_calls`` / ``retriever_calls`` — one usage record per call;
# - ``retrieved_ids`` / ``retrieved_titles`` — the objects the answer was drawn from, in order;
# - ``stopped`` — why a limit ended the run early (None when it ran to the end);
# - ``error`` — why the run could not produce an answer (None when it did).

OUTPUT_KEYS = ("answer", "answers", "trace", "llm_calls", "retriever_calls", "retrieved_ids",
               "retrieved_titles", "stopped", "error")


MAX_QUESTION_CHARS = 4000


class MethodInput(TypedDict):
    question: str


class InvalidQuestion(AtomgraphError, ValueError):
    """The question itself cannot be answered (empty, too long)."""


def check_question(question: object) -> str:
    """The input's question with its whitespace collapsed; InvalidQuestion when there is none
    or it is longer than ``MAX_QUESTION_CHARS``. Every method's first node calls it."""
    if not isinstance(question, str):
        raise InvalidQuestion(f"the question must be a string, not {type(question).__name__}")
    q = " ".join(question.split())
    if not q:
        raise InvalidQuestion("the question is empty")
    if len(q) > MAX_QUESTION_CHARS:
        raise InvalidQuestion(f"the question is too long ({len(q)} characters; at most {MAX_QUESTION_CHARS})")
    return q


class MethodOutput(TypedDict, total=False):
    answer: str
    answers: list[str]
    trace: dict
    llm_calls: CallRecords
    retriever_calls: CallRecords
    retrieved_ids: list[str]
    retrieved_titles: list[str]
    stopped: str | None
    error: str | None


def answer_cleaned(llm_calls: Iterable[Any]) -> dict[str, Any] | None:
    """What the run's model replies lost to the answer contract's cleaning (hidden characters:
    :func:`atomgraph.text.clean_hidden`), over its call records: ``{"removed": [code points], "count": n,
    "calls": k}``; None when nothing was removed."""
    removed: set[int] = set()
    count = calls = 0
    for call in llm_calls or ():
        cleaned = call.get("cleaned") if isinstance(call, Mapping) else getattr(call, "cleaned", None)
        if cleaned:
            removed.update(cleaned.get("removed") or ())
            count += int(cleaned.get("count") or 0)
            calls += 1
    return {"removed": sorted(removed), "count": count, "calls": calls} if calls else None


def with_cleaning_noted(values: Any) -> Any:
    """A graph's final values with ``trace["answer_cleaned"]`` (:func:`answer_cleaned`) set when any
    reply lost hidden characters (what ``invoke``, ``ainvoke`` and the runner return)."""
    if not isinstance(values, dict):
        return values
    noted = answer_cleaned(values.get("llm_calls") or ())
    if noted is None:
        return values
    return {**values, "trace": {**(values.get("trace") or {}), "answer_cleaned": noted}}


def output_of(values: dict[str, Any] | None) -> dict[str, Any]:
    """Every contract key of a graph's final values, with its empty default where missing
    (``trace["answer_cleaned"]`` noted: :func:`with_cleaning_noted`)."""
    values = with_cleaning_noted(dict(values or {}))
    empty: dict[str, Any] = {"answer": "", "answers": [], "trace": {}, "llm_calls": [], "retriever_calls": [],
                             "retrieved_ids": [], "retrieved_titles": [], "stopped": None, "error": None}
    return {k: (values.get(k) if values.get(k) is not None else empty[k]) for k in OUTPUT_KEYS}
