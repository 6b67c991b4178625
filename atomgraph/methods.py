"""Every method, declared once.

A :class:`Method` names what the rest of atomgraph derives from it:

- ``builder`` — the graph builder (``"module:function"``, imported when first built);
- ``context`` — the run-parameter dataclass: the graph's LangGraph ``context_schema`` (Studio's
  form) and the settings section ``[<section>]`` (``ATOMGRAPH_<SECTION>__<FIELD>``);
- ``roles`` — the model roles its stages use (``ATOMGRAPH_<ROLE>_MODEL``);
- ``description`` — the line ``atomgraph eval methods`` shows;
- ``graph`` — its entry in ``langgraph.json`` (a test holds the file to this table);
- ``kind`` — ``"qa"`` (answers questions: ``ask``, ``eval run``) or ``"index"`` (builds an index).

From this table come the settings sections (:mod:`atomgraph.settings`), the method registry
(:mod:`atomgraph.graphs.registry`: ``build_method``, ``eval methods``, the CLI's method
names), each graph's runtime (``MethodRuntime.for_method(name, ...)``) and Studio's list.
A method of your own is one :class:`Method` passed to
:func:`~atomgraph.graphs.registry.register_method` (see the README's *Adding a method*).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

from atomgraph.state.arm_graph import ArmGraphContext
from atomgraph.state.atomr import AtomRContext
from atomgraph.state.baselines import ClosedBookContext, RagContext
from atomgraph.state.compare import (DecomposedRagContext, IrcotContext, IterRetGenContext, ReactContext,
                                     SelfAskContext)
from atomgraph.state.indexing import WikipediaIndexContext
from atomgraph.state.kar3 import Kar3Context


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

    @property
    def settings_section(self) -> str:
        return self.section or self.name


METHODS: tuple[Method, ...] = (
    Method("atomr", "atomgraph.graphs.atomr:build_atomr_graph", AtomRContext,
           "ATOMR: plan an atomic reasoning tree (Search/Relate/Filter leaves), execute it bottom-up over the sources",
           roles=("planner", "executor", "answerer"), graph="./graphs/atomr.py:graph"),
    Method("arm", "atomgraph.graphs.arm:build_arm_graph", ArmGraphContext,
           "ARM: keywords aligned to corpus n-grams (constrained decoding), MIP drafts over passages and tables, "
           "self-verification, a log-prob weighted vote, then the answer",
           roles=("decoder",), graph="./graphs/arm.py:graph"),
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
           graph="./graphs/self_ask.py:graph"),
    Method("ircot", "atomgraph.graphs.ircot:build_ircot_graph", IrcotContext,
           "IRCoT: one chain-of-thought sentence per step, each the next retrieval query; then answer reading",
           graph="./graphs/ircot.py:graph"),
    Method("react", "atomgraph.graphs.react:build_react_graph", ReactContext,
           "ReAct: a tool-calling agent (LangChain create_agent) searching the sources, bounded model calls",
           graph="./graphs/react.py:graph"),
    Method("iter_retgen", "atomgraph.graphs.iter_retgen:build_iter_retgen_graph", IterRetGenContext,
           "Iter-RetGen: retrieval-generation rounds, each retrieving with question + previous generation",
           graph="./graphs/iter_retgen.py:graph"),
    Method("decomposed_rag", "atomgraph.graphs.decomposed_rag:build_decomposed_rag_graph", DecomposedRagContext,
           "Decomposed RAG: sub-questions, one retrieval each (parallel), merged passages, one answer",
           graph="./graphs/decomposed_rag.py:graph"),
    Method("kar3", "atomgraph.graphs.kar3:build_kar3_graph", Kar3Context,
           "KAR³ (PIKE-RAG): propose atomic sub-questions, retrieve atomic questions, select a chunk; up to N rounds",
           roles=("proposer", "selector", "answerer"), graph="./graphs/kar3.py:graph"),
    Method("wikipedia_index", "atomgraph.graphs.wikipedia_index:build_wikipedia_index_graph", WikipediaIndexContext,
           "Index a corpus into the Wikipedia passage collection (Chroma)", roles=(),
           graph="./graphs/wikipedia_index.py:graph", kind="index"),
    Method("kar3_index", "atomgraph.graphs.kar3_index:build_kar3_index_graph", Kar3Context,
           "KAR³ indexing: atomize chunks into the atomic questions they answer (resumable)", roles=("atomizer",),
           graph="./graphs/kar3_index.py:graph", kind="index", section="kar3"),
)


def declared(name: str) -> Method | None:
    """The built-in declaration of method ``name``, if any."""
    return next((m for m in METHODS if m.name == name), None)


def settings_sections() -> dict[str, Method]:
    """One settings section per declared method (methods may share one, e.g. KAR³'s two graphs)."""
    out: dict[str, Method] = {}
    for m in METHODS:
        out.setdefault(m.settings_section, m)
    return out
