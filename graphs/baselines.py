"""The ATOMR paper's simple baselines as LangGraph graphs, on the method kit.

- ``standard``: closed-book standard prompting (up to two demonstrations), one LLM call;
- ``cot``: closed-book chain-of-thought (up to two demonstrations), one LLM call;
- ``rag``: standard RAG: one retrieval of the question from every available source
  (top ``k`` from each), then one LLM call over the passages.

>>> graph = build_rag_graph(model=my_model, sources=[my_source])
>>> (await graph.ainvoke({"question": "Who ...?"}, context={"top_k": 5}))["answer"]

Each returns the method output contract (:mod:`atomgraph.state.run`). The module
attributes ``standard``, ``cot`` and ``rag`` (for ``langgraph.json``) are built from
settings; models and sources are resolved when a run starts.
"""

from __future__ import annotations

from typing import Any, Iterable

from langgraph.graph import END, START

from atomgraph.lc import MethodGraph
from atomgraph.models import ModelsArg
from atomgraph.nodes.baselines import make_answer_node, make_retrieve_node
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.baselines import STAGES
from atomgraph.settings import Settings
from atomgraph.state.baselines import BaselineState
from atomgraph.tools.base import KnowledgeSource, SourceSet


def _graph(method: str, rt: MethodRuntime, checkpointer: Any, retrieve: bool) -> MethodGraph:
    g = rt.state_graph(BaselineState)
    g.add_node("answer", make_answer_node(rt, STAGES[method], with_reasoning=method == "cot"))
    if retrieve:
        g.add_node("retrieve", make_retrieve_node(rt))
        g.add_edge(START, "retrieve")
        g.add_edge("retrieve", "answer")
    else:
        g.add_edge(START, "answer")
    g.add_edge("answer", END)
    return MethodGraph(g.compile(checkpointer=checkpointer, name=method))


def build_standard_graph(model: ModelsArg = None, sources: Any = None, settings: Settings | None = None,
                         checkpointer: Any = None) -> MethodGraph:
    """Closed-book standard prompting (``sources`` is accepted and ignored)."""
    return _graph("standard", MethodRuntime.for_method("standard", model, [], settings), checkpointer, False)


def build_cot_graph(model: ModelsArg = None, sources: Any = None, settings: Settings | None = None,
                    checkpointer: Any = None) -> MethodGraph:
    """Closed-book chain-of-thought (``sources`` is accepted and ignored)."""
    return _graph("cot", MethodRuntime.for_method("cot", model, [], settings), checkpointer, False)


def build_rag_graph(model: ModelsArg = None, sources: SourceSet | Iterable[KnowledgeSource] | None = None,
                    settings: Settings | None = None, checkpointer: Any = None) -> MethodGraph:
    """Standard RAG: one retrieval from every available source, then one answer.

    With no available source it still answers (closed book) and says so in its trace.
    """
    return _graph("rag", MethodRuntime.for_method("rag", model, sources, settings), checkpointer, True)


# The graphs `langgraph dev` and LangGraph Studio load (models and sources from settings,
# resolved when a run starts).
standard = build_standard_graph().graph
cot = build_cot_graph().graph
rag = build_rag_graph().graph
graph = rag
