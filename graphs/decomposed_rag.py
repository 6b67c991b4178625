"""Decomposed RAG as a LangGraph graph (the decomposition baseline of the ARM and PIKE-RAG
papers).

``decompose`` → one ``retrieve_sub`` per sub-question, in parallel (``Send``) → ``answer``
over the merged passages → ``finish``. At most ``max_sub_questions`` are kept (``stopped``
says when more were dropped). Bad model output ends the run in ``finish`` with ``error``.

>>> graph = build_decomposed_rag_graph(model=my_model, sources=[my_source])
>>> (await graph.ainvoke({"question": "..."}, context={"top_k": 5}))["answer"]
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START

from atomgraph.lc import MethodGraph
from atomgraph.models import ModelsArg
from atomgraph.nodes.compare.common import make_finish_node
from atomgraph.nodes.compare.decomposed_rag import (fan_out, make_answer_node, make_decompose_node,
                                                    make_retrieve_sub_node, trace_extra)
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.settings import Settings
from atomgraph.state.compare import DecomposedRagState, SubQuestionInput


def build_decomposed_rag_graph(model: ModelsArg = None, sources: Any = None, settings: Settings | None = None,
                               checkpointer: Any = None) -> MethodGraph:
    """Decomposed RAG (roles: planner decomposes, answerer answers)."""
    rt = MethodRuntime.for_method("decomposed_rag", model, sources, settings)
    g = rt.state_graph(DecomposedRagState)
    g.add_node("decompose", make_decompose_node(rt))
    g.add_node("retrieve_sub", make_retrieve_sub_node(rt), input_schema=SubQuestionInput)
    g.add_node("answer", make_answer_node(rt))
    g.add_node("finish", make_finish_node(rt, "decomposed_rag", extra=trace_extra))
    g.add_edge(START, "decompose")
    g.add_conditional_edges("decompose", fan_out, ["retrieve_sub", "finish"])
    g.add_edge("retrieve_sub", "answer")
    g.add_edge("answer", "finish")
    g.add_edge("finish", END)
    return MethodGraph(g.compile(checkpointer=checkpointer, name="decomposed_rag"))



# The graph `langgraph dev` and LangGraph Studio load (models and sources from settings,
# resolved when a run starts).
graph = build_decomposed_rag_graph().graph
