"""Usage records — one per LLM call and one per retriever call, kept in a graph's state —
their totals, and what they cost.

A call answered from the response cache is recorded (``cached=True``) but counts no call,
token or dollar in the totals: ``cached_calls`` counts it.

Prices are USD per 1M input / output tokens: the built-in table below covers a few common
models; ``settings.prices`` (TOML ``[prices]`` or ``ATOMGRAPH_PRICES='{"my-model": [0.2, 0.8]}'``)
is merged over it. A model missing from the table costs 0 and is reported as unpriced.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Annotated, Any, Iterable, Mapping

from pydantic import BaseModel


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
    usage_flag: str | None = None  # server usage disagrees with the tokenizer count (nodes/recorder.py)
    finish_reason: str | None = None  # why the server ended the reply ("stop", "length", "tool_calls", ...)
    cut: bool = False  # the reply was cut (the server ended it for length, or it ran past the cap): never an answer


class RetrieverCall(BaseModel):
    """One knowledge-source call."""

    source: str
    query: str
    hits: int = 0
    latency_s: float = 0.0
    error: str | None = None


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
        llm_latency_s=sum(c.latency_s for c in llm),
        retriever_latency_s=sum(c.latency_s for c in retrieval),
    )


def add_usage(summaries: Iterable[dict]) -> UsageSummary:
    """Totals over per-example usage summaries (the ``usage`` of evaluation records)."""
    total = UsageSummary()
    by_role: Counter = Counter()
    by_source: Counter = Counter()
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
        for key, acc in tokens.items():
            for name, (p, c) in (u.get(key) or {}).items():
                acc[name][0] += int(p)
                acc[name][1] += int(c)
    total.llm_calls_by_role = dict(by_role)
    total.retriever_calls_by_source = dict(by_source)
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
