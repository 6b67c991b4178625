"""Self-Ask with retrieval as a LangGraph graph (Press et al., 2023; a comparison method of
the ATOMR paper).

``ask`` → ``search`` → ``intermediate_answer`` → ``ask`` … until the model writes its final
answer; after ``max_follow_ups`` answered follow-ups, ``final_answer`` asks for it with what
was found (``stopped`` says so). Bad model output at any step ends the run in ``finish``
with ``error`` set and the raw reply in the trace.

>>> graph = build_self_ask_graph(model=my_model, sources=[my_source])
>>> (await graph.ainvoke({"question": "..."}, context={"max_follow_ups": 3}))["answer"]
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START

from atomgraph.lc import MethodGraph
from atomgraph.models import ModelsArg
from atomgraph.nodes.compare.common import make_finish_node
from atomgraph.nodes.compare.self_ask import (after_ask, after_intermediate, make_ask_node, make_final_node,
                                              make_intermediate_node, make_search_node)
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.settings import Settings
from atomgraph.state.compare import SelfAskState


def build_self_ask_graph(model: ModelsArg = None, sources: Any = None, settings: Settings | None = None,
                         checkpointer: Any = None) -> MethodGraph:
    """Self-Ask with retrieval (roles: planner asks, executor answers follow-ups, answerer
    gives a forced final answer)."""
    rt = MethodRuntime.for_method("self_ask", model, sources, settings)
    g = rt.state_graph(SelfAskState)
    g.add_node("ask", make_ask_node(rt))
    g.add_node("search", make_search_node(rt))
    g.add_node("intermediate_answer", make_intermediate_node(rt))
    g.add_node("final_answer", make_final_node(rt))
    g.add_node("finish", make_finish_node(rt, "self_ask"))
    g.add_edge(START, "ask")
    g.add_conditional_edges("ask", after_ask, ["search", "finish"])
    g.add_edge("search", "intermediate_answer")
    g.add_conditional_edges("intermediate_answer", after_intermediate, ["ask", "final_answer", "finish"])
    g.add_edge("final_answer", "finish")
    g.add_edge("finish", END)
    return MethodGraph(g.compile(checkpointer=checkpointer, name="self_ask"))



# The graph `langgraph dev` and LangGraph Studio load (models and sources from settings,
# resolved when a run starts).
graph = build_self_ask_graph().graph
