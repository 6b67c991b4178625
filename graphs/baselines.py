"""The ATOMR paper's simple baselines as LangGraph graphs.

- ``standard``: closed-book standard prompting (two demonstrations), one LLM call;
- ``cot``: closed-book chain-of-thought (two demonstrations), one LLM call;
- ``rag``: standard RAG: one retrieval of the question from every configured source
  (top ``settings.top_k`` from each), then one LLM call over the passages.

>>> graph = build_rag_graph(model=my_model, sources=[my_source])
>>> (await graph.ainvoke({"question": "Who ...?"}))["answer"]

Each returns the method contract's output keys: ``answer``, ``answers``, ``llm_calls``,
``retriever_calls``, ``trace``, ``retrieved_titles``, ``stopped``, ``error``.
The module attribute ``graph`` (for ``langgraph.json``) is the RAG graph built from settings
on first access.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Iterable, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from atomgraph.models import ModelsArg, resolve_models
from atomgraph.nodes.baselines import make_answer_node, make_retrieve_node
from atomgraph.prompts.baselines import PROMPTS
from atomgraph.settings import Settings, get_settings
from atomgraph.state.evidence import Evidence
from atomgraph.state.usage import LLMCall, RetrieverCall
from atomgraph.tools.base import KnowledgeSource
from atomgraph.tools.registry import SourceSet, as_source_set


class BaselineInput(TypedDict):
    question: str


class BaselineOutput(TypedDict, total=False):
    answer: str
    answers: list[str]
    llm_calls: Annotated[list[LLMCall], operator.add]
    retriever_calls: Annotated[list[RetrieverCall], operator.add]
    trace: dict[str, Any]
    retrieved_titles: list[str]
    stopped: str | None
    error: str | None


class BaselineState(BaselineInput, BaselineOutput, total=False):
    evidence: list[Evidence]


def _closed_book(method: str, model: ModelsArg, settings: Settings | None, checkpointer: Any) -> CompiledStateGraph:
    settings = settings or get_settings()
    answerer = resolve_models(model, settings)["answerer"]
    g = StateGraph(BaselineState, input_schema=BaselineInput, output_schema=BaselineOutput)
    g.add_node("answer", make_answer_node(answerer, PROMPTS[method], method))
    g.add_edge(START, "answer")
    g.add_edge("answer", END)
    return g.compile(checkpointer=checkpointer, name=method)


def build_standard_graph(model: ModelsArg = None, sources: Any = None, settings: Settings | None = None,
                         checkpointer: Any = None) -> CompiledStateGraph:
    """Closed-book standard prompting (``sources`` is accepted and ignored)."""
    return _closed_book("standard", model, settings, checkpointer)


def build_cot_graph(model: ModelsArg = None, sources: Any = None, settings: Settings | None = None,
                    checkpointer: Any = None) -> CompiledStateGraph:
    """Closed-book chain-of-thought (``sources`` is accepted and ignored)."""
    return _closed_book("cot", model, settings, checkpointer)


def build_rag_graph(model: ModelsArg = None, sources: SourceSet | Iterable[KnowledgeSource] | None = None,
                    settings: Settings | None = None, checkpointer: Any = None) -> CompiledStateGraph:
    """Standard RAG: one retrieval from every available source, then one answer.

    With no available source it still answers (closed book) and says so in its trace.
    """
    settings = settings or get_settings()
    answerer = resolve_models(model, settings)["answerer"]
    source_list = list(as_source_set(sources, settings))
    g = StateGraph(BaselineState, input_schema=BaselineInput, output_schema=BaselineOutput)
    g.add_node("retrieve", make_retrieve_node(source_list, settings.top_k))
    g.add_node("answer", make_answer_node(answerer, PROMPTS["rag"], "rag"))
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "answer")
    g.add_edge("answer", END)
    return g.compile(checkpointer=checkpointer, name="rag")


def __getattr__(name: str):
    # ``graph`` is built on first access, so importing this module never needs a model.
    if name == "graph":
        global graph
        graph = build_rag_graph()
        return graph
    raise AttributeError(name)
