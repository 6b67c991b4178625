"""Usage records: one per LLM call and one per retriever call, kept in a graph's state."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterable

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


class RetrieverCall(BaseModel):
    """One knowledge-source call."""

    source: str
    query: str
    hits: int = 0
    latency_s: float = 0.0
    error: str | None = None


class UsageSummary(BaseModel):
    llm_calls: int = 0
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
