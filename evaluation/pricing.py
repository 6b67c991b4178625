"""Dollar cost of LLM calls from a price table (USD per 1M input / output tokens).

The built-in table below covers a few common models; ``settings.prices`` (TOML
``[prices]`` or ``ATOMGRAPH_PRICES='{"my-model": [0.2, 0.8]}'``) is merged over it.
A model missing from the table costs 0 and is reported as unpriced.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from atomgraph.settings import Settings
from atomgraph.state.usage import LLMCall, summarize_usage

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


def price_table(settings: Settings | None = None, extra: Mapping[str, tuple[float, float]] | None = None) -> dict[str, tuple[float, float]]:
    """Built-in prices, overridden by ``settings.prices`` and then by ``extra``."""
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
