"""IRCoT as a LangGraph graph (Trivedi et al., 2023; a comparison method of the ATOMR and
ARM papers): interleaved chain-of-thought and retrieval.

``retrieve`` (the question) → ``reason`` (one sentence) → ``retrieve`` (that sentence) → …
until a sentence gives the answer or ``max_steps`` sentences were written (``stopped`` says
so); then ``read_answer`` answers from every passage gathered. Bad model output ends the run
in ``finish`` with ``error`` set.

>>> graph = build_ircot_graph(model=my_model, sources=[my_source])
>>> (await graph.ainvoke({"question": "..."}, context={"max_steps": 4, "top_k": 4}))["answer"]
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START

from atomgraph.lc import MethodGraph
from atomgraph.models import ModelsArg
from atomgraph.nodes.compare.common import make_finish_node
from atomgraph.nodes.compare.ircot import after_reason, make_read_node, make_reason_node, make_retrieve_node, trace_extra
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.settings import Settings
from atomgraph.state.compare import IrcotState


def build_ircot_graph(model: ModelsArg = None, sources: Any = None, settings: Settings | None = None,
                      checkpointer: Any = None) -> MethodGraph:
    """IRCoT (roles: executor writes reasoning sentences, answerer reads the answer)."""
    rt = MethodRuntime.for_method("ircot", model, sources, settings)
    g = rt.state_graph(IrcotState)
    g.add_node("retrieve", make_retrieve_node(rt))
    g.add_node("reason", make_reason_node(rt))
    g.add_node("read_answer", make_read_node(rt))
    g.add_node("finish", make_finish_node(rt, "ircot", extra=trace_extra))
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "reason")
    g.add_conditional_edges("reason", after_reason, ["retrieve", "read_answer", "finish"])
    g.add_edge("read_answer", "finish")
    g.add_edge("finish", END)
    return MethodGraph(g.compile(checkpointer=checkpointer, name="ircot"))



# The graph `langgraph dev` and LangGraph Studio load (models and sources from settings,
# resolved when a run starts).
graph = build_ircot_graph().graph
