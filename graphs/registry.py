"""Methods by name: each a graph builder
``build(model=None, sources=None, settings=None, checkpointer=None) -> CompiledStateGraph``.

>>> from atomgraph.graphs.registry import register_method, build_method
>>> register_method("mine", build_my_graph)
>>> graph = build_method("mine", model=my_model)
"""

from __future__ import annotations

from typing import Any, Callable

from atomgraph.errors import ConfigError
from atomgraph.imports import import_object

GraphBuilder = Callable[..., Any]

# Built-ins are imported lazily ("module:function") so importing atomgraph stays cheap.
_BUILDERS: dict[str, GraphBuilder | str] = {
    "atomr": "atomgraph.graphs.atomr:build_atomr_graph",
    "arm": "atomgraph.graphs.arm:build_arm_graph",
    "standard": "atomgraph.graphs.baselines:build_standard_graph",
    "cot": "atomgraph.graphs.baselines:build_cot_graph",
    "rag": "atomgraph.graphs.baselines:build_rag_graph",
    "self_ask": "atomgraph.graphs.self_ask:build_self_ask_graph",
    "ircot": "atomgraph.graphs.ircot:build_ircot_graph",
    "react": "atomgraph.graphs.react:build_react_graph",
    "iter_retgen": "atomgraph.graphs.iter_retgen:build_iter_retgen_graph",
    "decomposed_rag": "atomgraph.graphs.decomposed_rag:build_decomposed_rag_graph",
    "kar3": "atomgraph.graphs.kar3:build_kar3_graph",
}
_DESCRIPTIONS: dict[str, str] = {
    "atomr": "ATOMR: plan an atomic reasoning tree (Search/Relate/Filter leaves), execute it bottom-up over the sources",
    "arm": "ARM: keywords aligned to corpus n-grams (constrained decoding), MIP drafts over passages and tables, "
           "self-verification, a log-prob weighted vote, then the answer",
    "standard": "Closed-book standard prompting (two demonstrations), one LLM call",
    "cot": "Closed-book chain-of-thought (two demonstrations), one LLM call",
    "rag": "Standard RAG: one retrieval of the question from every source, then one answer",
    "self_ask": "Self-Ask with retrieval: follow-up questions answered from retrieved passages, then the final answer",
    "ircot": "IRCoT: one chain-of-thought sentence per step, each the next retrieval query; then answer reading",
    "react": "ReAct: a tool-calling agent (LangChain create_agent) searching the sources, bounded model calls",
    "iter_retgen": "Iter-RetGen: retrieval-generation rounds, each retrieving with question + previous generation",
    "decomposed_rag": "Decomposed RAG: sub-questions, one retrieval each (parallel), merged passages, one answer",
    "kar3": "KAR³ (PIKE-RAG): propose atomic sub-questions, retrieve atomic questions, select a chunk; up to N rounds",
}


def register_method(name: str, builder: GraphBuilder | str, description: str = "") -> None:
    """Make ``name`` usable by ``atomgraph eval run --method`` and :func:`build_method`.
    ``builder`` is a callable or a ``"module:function"`` import string; ``description`` is the
    one line ``atomgraph eval methods`` shows."""
    _BUILDERS[name] = builder
    _DESCRIPTIONS[name] = description or _DESCRIPTIONS.get(name, "")


def method_descriptions() -> dict[str, str]:
    """Every registered method with its one-line description, by name."""
    return {name: _DESCRIPTIONS.get(name, "") for name in method_names()}


def method_names() -> list[str]:
    return sorted(_BUILDERS)


def method_builder(name: str) -> GraphBuilder:
    try:
        b = _BUILDERS[name]
    except KeyError:
        raise ConfigError(f"unknown method {name!r}; registered methods: {', '.join(method_names())}") from None
    if isinstance(b, str):
        try:
            b = import_object(b)
        except ConfigError as exc:
            raise ConfigError(f"method {name!r} cannot be loaded: {exc}") from exc
        _BUILDERS[name] = b
    return b


def build_method(name: str, **kwargs: Any):
    """The compiled graph of method ``name`` (kwargs: model, sources, settings, checkpointer)."""
    return method_builder(name)(**kwargs)
