"""ReAct with the knowledge sources as tools, as a LangGraph graph (Yao et al., 2023; a
comparison method of the ATOMR and ARM papers).

The loop is LangChain's own agent (``langchain.agents.create_agent``), bounded by
``ModelCallLimitMiddleware(run_limit=max_steps)``; this graph wraps it so it takes the
method input and returns the method output contract, with every model call and retrieval
recorded. The model must support tool calling (``bind_tools``); one that does not ends the
run with a clear ``error``.

>>> graph = build_react_graph(model=ChatOpenAI(model="gpt-4o"), sources=[my_source])
>>> (await graph.ainvoke({"question": "..."}, context={"max_steps": 8}))["answer"]
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START

from atomgraph.lc import MethodGraph
from atomgraph.models import ModelsArg
from atomgraph.nodes.compare.react import make_agent_node
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.settings import Settings
from atomgraph.state.compare import ReactState


def build_react_graph(model: ModelsArg = None, sources: Any = None, settings: Settings | None = None,
                      checkpointer: Any = None) -> MethodGraph:
    """ReAct (role: executor drives the agent)."""
    rt = MethodRuntime.for_method("react", model, sources, settings)
    g = rt.state_graph(ReactState)
    g.add_node("agent", make_agent_node(rt))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    return MethodGraph(g.compile(checkpointer=checkpointer, name="react"))



# The graph `langgraph dev` and LangGraph Studio load (models and sources from settings,
# resolved when a run starts).
graph = build_react_graph().graph
