"""Iter-RetGen as a LangGraph graph (Shao et al., 2023; a comparison method of the ARM
paper): retrieval-generation rounds.

``retrieve`` → ``generate`` → ``retrieve`` (question + that generation) → … for at most
``rounds`` rounds (all of them, as the paper); with ``stop_when_stable`` (ours) a round that repeats the previous round's
answer ends the run, and running out of rounds first sets ``stopped``. The answer is the
last round's. Bad model output ends the run in ``finish`` with ``error`` set.

>>> graph = build_iter_retgen_graph(model=my_model, sources=[my_source])
>>> (await graph.ainvoke({"question": "..."}, context={"rounds": 2}))["answer"]
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START

from atomgraph.lc import MethodGraph
from atomgraph.models import ModelsArg
from atomgraph.nodes.compare.common import make_finish_node
from atomgraph.nodes.compare.iter_retgen import after_generate, make_generate_node, make_retrieve_node, trace_extra
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.settings import Settings
from atomgraph.state.compare import IterRetGenState


def build_iter_retgen_graph(model: ModelsArg = None, sources: Any = None, settings: Settings | None = None,
                            checkpointer: Any = None) -> MethodGraph:
    """Iter-RetGen (role: answerer generates every round)."""
    rt = MethodRuntime.for_method("iter_retgen", model, sources, settings)
    g = rt.state_graph(IterRetGenState)
    g.add_node("retrieve", make_retrieve_node(rt))
    g.add_node("generate", make_generate_node(rt))
    g.add_node("finish", make_finish_node(rt, "iter_retgen", extra=trace_extra))
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "generate")
    g.add_conditional_edges("generate", after_generate, ["retrieve", "finish"])
    g.add_edge("finish", END)
    return MethodGraph(g.compile(checkpointer=checkpointer, name="iter_retgen"))



# The graph `langgraph dev` and LangGraph Studio load (models and sources from settings,
# resolved when a run starts).
graph = build_iter_retgen_graph().graph
