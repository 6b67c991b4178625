"""Every method, declared once.

A :class:`Method` names what the rest of atomgraph derives from it:

- ``builder`` — the graph builder (``"module:function"``, imported when first built);
- ``context`` — the run-parameter dataclass: the graph's LangGraph ``context_schema`` (Studio's
  form) and the settings section ``[<section>]`` (``ATOMGRAPH_<SECTION>__<FIELD>``);
- ``roles`` — the model roles its stages use: each is a settings field ``<role>_model``
  (``ATOMGRAPH_<ROLE>_MODEL``), a key of ``models=``, and the only roles its runtime resolves;
- ``description`` — the line ``atomgraph eval methods`` shows;
- ``graph`` — its entry in ``langgraph.json`` (a test holds the file to this table);
- ``kind`` — ``"qa"`` (answers questions: ``ask``, ``eval run``) or ``"index"`` (builds an index);
- ``retriever`` — optional: a LangChain retriever class over the graph (``"module:Class"``), offered
  by ``graph.as_retriever()``;
- ``render`` — optional: the function that draws its trace for ``atomgraph ask`` (``"module:function"``).

From this table come the settings sections and per-role model fields (:mod:`atomgraph.settings`),
the missing-model help (:mod:`atomgraph.models`), the registry below (``build_method`` in
:mod:`atomgraph.graphs.registry`, ``eval methods``, the CLI's method names), each graph's runtime
(``MethodRuntime.for_method(name, ...)``: the declared roles only) and Studio's list; tests hold
``langgraph.json`` and the package list in ``pyproject.toml`` to it. A method of your own is one
:class:`Method` passed to :func:`register_method` (docs: *Adding a method*).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Literal

from atomgraph.errors import ConfigError

from atomgraph.state.arm import ArmContext
from atomgraph.state.atomr import AtomRContext
from atomgraph.state.baselines import ClosedBookContext, RagContext
from atomgraph.state.compare import (DecomposedRagContext, IrcotContext, IterRetGenContext, ReactContext,
                                     SelfAskContext)
from atomgraph.state.indexing import WikipediaIndexContext
from atomgraph.state.kar3 import Kar3Context, Kar3IndexContext


@dataclass(frozen=True)
class Method:
    """One method's declaration (see the module docstring)."""

    name: str
    builder: str | Callable[..., Any]
    context: type
    description: str
    roles: tuple[str, ...] = ("answerer",)
    graph: str | None = None
    kind: Literal["qa", "index"] = "qa"
    section: str | None = None
    retriever: str | None = None
    render: str | None = None

    @property
    def settings_section(self) -> str:
        return self.section or self.name


METHODS: tuple[Method, ...] = (
    Method("atomr", "atomgraph.graphs.atomr:build_atomr_graph", AtomRContext,
           "ATOMR: plan an atomic reasoning tree (Search/Relate/Filter leaves), execute it bottom-up over the sources",
           roles=("planner", "executor", "answerer"), graph="./graphs/atomr.py:graph",
           render="atomgraph.render:render_atomr_trace"),
    Method("arm", "atomgraph.graphs.arm:build_arm_graph", ArmContext,
           "ARM: keywords aligned to corpus n-grams (constrained decoding), MIP drafts over passages and tables, "
           "self-verification, a log-prob weighted vote, then the answer",
           roles=("decoder", "answerer"), graph="./graphs/arm.py:graph",
           retriever="atomgraph.retrievers:ArmRetriever", render="atomgraph.render:render_arm_trace"),
    Method("standard", "atomgraph.graphs.baselines:build_standard_graph", ClosedBookContext,
           "Closed-book standard prompting (two demonstrations), one LLM call",
           graph="./graphs/baselines.py:standard"),
    Method("cot", "atomgraph.graphs.baselines:build_cot_graph", ClosedBookContext,
           "Closed-book chain-of-thought (two demonstrations), one LLM call", graph="./graphs/baselines.py:cot"),
    Method("rag", "atomgraph.graphs.baselines:build_rag_graph", RagContext,
           "Standard RAG: one retrieval of the question from every source, then one answer",
           graph="./graphs/baselines.py:rag"),
    Method("self_ask", "atomgraph.graphs.self_ask:build_self_ask_graph", SelfAskContext,
           "Self-Ask with retrieval: follow-up questions answered from retrieved passages, then the final answer",
           roles=("planner", "executor", "answerer"), graph="./graphs/self_ask.py:graph"),
    Method("ircot", "atomgraph.graphs.ircot:build_ircot_graph", IrcotContext,
           "IRCoT: one chain-of-thought sentence per step, each the next retrieval query; then answer reading",
           roles=("executor", "answerer"), graph="./graphs/ircot.py:graph"),
    Method("react", "atomgraph.graphs.react:build_react_graph", ReactContext,
           "ReAct: a tool-calling agent (LangChain create_agent) searching the sources, bounded model calls",
           roles=("executor",), graph="./graphs/react.py:graph"),
    Method("iter_retgen", "atomgraph.graphs.iter_retgen:build_iter_retgen_graph", IterRetGenContext,
           "Iter-RetGen: retrieval-generation rounds, each retrieving with question + previous generation",
           graph="./graphs/iter_retgen.py:graph"),
    Method("decomposed_rag", "atomgraph.graphs.decomposed_rag:build_decomposed_rag_graph", DecomposedRagContext,
           "Decomposed RAG: sub-questions, one retrieval each (parallel), merged passages, one answer",
           roles=("planner", "answerer"), graph="./graphs/decomposed_rag.py:graph"),
    Method("kar3", "atomgraph.graphs.kar3:build_kar3_graph", Kar3Context,
           "KAR³ (PIKE-RAG): propose atomic sub-questions, retrieve atomic questions, select a chunk; up to N rounds",
           roles=("proposer", "selector", "answerer"), graph="./graphs/kar3.py:graph",
           retriever="atomgraph.retrievers:Kar3Retriever", render="atomgraph.render:render_kar3_trace"),
    Method("wikipedia_index", "atomgraph.graphs.wikipedia_index:build_wikipedia_index_graph", WikipediaIndexContext,
           "Index a corpus into the Wikipedia passage collection (Chroma)", roles=(),
           graph="./graphs/wikipedia_index.py:graph", kind="index"),
    Method("kar3_index", "atomgraph.graphs.kar3_index:build_kar3_index_graph", Kar3IndexContext,
           "KAR³ indexing: atomize chunks into the atomic questions they answer (resumable)", roles=("atomizer",),
           graph="./graphs/kar3_index.py:graph", kind="index"),
)


def declared(name: str) -> Method | None:
    """The built-in declaration of method ``name``, if any."""
    return next((m for m in METHODS if m.name == name), None)


def roles_of(methods: Iterable[Method] = METHODS) -> tuple[str, ...]:
    """Every role the methods declare, in declaration order, each once."""
    return tuple(dict.fromkeys(r for m in methods for r in m.roles))


# --- the registry: the built-in declarations plus those registered at run time -------------
_REGISTERED: dict[str, Method] = {m.name: m for m in METHODS}


def register_method(method: Method | str, builder: Callable[..., Any] | str | None = None,
                    description: str = "") -> None:
    """Make a method usable by ``atomgraph eval run --method`` and ``build_method``: a :class:`Method`
    declaration, or (shorthand) a name with its builder (a callable or a ``"module:function"`` import
    string) and the one line ``eval methods`` shows."""
    if isinstance(method, Method):
        _REGISTERED[method.name] = method
        return
    if builder is None:
        raise ConfigError("register_method needs a Method declaration, or a name and its builder")
    known = _REGISTERED.get(method)
    base = known or Method(method, builder, object, description)
    _REGISTERED[method] = dataclasses.replace(base, builder=builder, description=description or base.description)


def declaration(name: str) -> Method:
    """The declaration of method (or indexing graph) ``name``; ConfigError listing the known ones."""
    try:
        return _REGISTERED[name]
    except KeyError:
        raise ConfigError(f"unknown method {name!r}; registered methods: {', '.join(method_names())}") from None


def replace_declaration(method: Method) -> None:
    """Keep ``method`` (e.g. with its builder imported) in place of its registered declaration."""
    _REGISTERED[method.name] = method


def registered() -> tuple[Method, ...]:
    """Every registered declaration (built-in first, then run-time registrations)."""
    return tuple(_REGISTERED.values())


def known_roles() -> tuple[str, ...]:
    """The roles of every registered method: the keys ``models=`` accepts."""
    return roles_of(registered())


def method_descriptions() -> dict[str, str]:
    """Every registered question-answering method with its one-line description, by name."""
    return {name: _REGISTERED[name].description for name in method_names()}


def method_names() -> list[str]:
    """The question-answering methods (``ask``, ``eval run``), sorted."""
    return sorted(n for n, m in _REGISTERED.items() if m.kind == "qa")


def settings_sections() -> dict[str, Method]:
    """One settings section per declared method (methods may share one, e.g. KAR³'s two graphs)."""
    out: dict[str, Method] = {}
    for m in METHODS:
        out.setdefault(m.settings_section, m)
    return out
