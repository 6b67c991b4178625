"""ATOMR (KDD 2025) as a LangGraph workflow.

    START → plan → review_plan → schedule ⇄ {select_sources, run_operator, reason_children,
                                             reason_siblings, direct_rag, closed_book} → finalize → END

``plan`` writes and parses the Atomic Reasoning Tree; ``schedule`` dispatches (with
``Send``) every tree node whose children and referenced siblings are answered, so
independent branches run in the same superstep; each step runs once per referenced answer
(the fan-out) and returns to ``schedule``; ``finalize`` returns the answer and the executed
tree. What a node does after each step (Algorithm 1 of the paper, with atomgraph's
switch) is the table ``ALGORITHM_1`` (``nodes/atomr/execution.py``):

| step | outcome | next |
|---|---|---|
| select | leaf / fallback | operate / rag |
| operate | answered, skipped (empty reference), empty / failed | done / rag |
| children | answered / empty or failed | done / select → rag |
| siblings ([DR]) | any | done |
| rag, closed_book | any | done |
| root | empty | closed_book (``closed_book_root``, on) |

>>> from atomgraph.graphs.atomr import build_atomr_graph
>>> graph = build_atomr_graph(model=my_chat_model, sources=[my_source])
>>> graph.invoke({"question": "Which was founded first, X or Y?"})["answer"]

Run parameters are :class:`~atomgraph.state.atomr.AtomRContext` (the graph's context
schema, drawn as a form in Studio; settings section ``[atomr]``), per run as
``graph.invoke(inp, context={"top_k": 5})`` or ``config={"configurable": {"top_k": 5}}``.
``review_plan`` pauses after planning (needs a checkpointer); see ``nodes/atomr/plan.py``.
"""

from __future__ import annotations

from typing import Iterable

from langgraph.graph import END, START
from langgraph.types import Checkpointer

from atomgraph.lc import MethodGraph
from atomgraph.models import ModelsArg
from atomgraph.nodes.atomr.execution import ALGORITHM_1  # noqa: F401 - the step table, shown above
from atomgraph.nodes.atomr.execution import STEP_NODES, finalize, make_schedule_node
from atomgraph.nodes.atomr.node_reasoning import (make_closed_book_node, make_direct_rag_node,
                                                  make_reason_children_node, make_reason_siblings_node,
                                                  make_run_operator_node, make_select_sources_node)
from atomgraph.nodes.atomr.plan import make_plan_node, make_review_node
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.nodes.sync import on_loop
from atomgraph.settings import Settings
from atomgraph.state.atomr import AtomRState, StepInput
from atomgraph.tools.base import KnowledgeSource, SourceSet


def build_atomr_graph(
    model: ModelsArg = None,
    sources: SourceSet | Iterable[KnowledgeSource] | None = None,
    settings: Settings | None = None,
    checkpointer: Checkpointer = None,
):
    """Compile the ATOMR graph.

    ``model``: one chat model for every role, or ``{"planner": m1, "executor": m2,
    "answerer": m3}``; unset roles come from settings. ``sources``: the knowledge sources
    (default: those settings name). Both are resolved on first use.
    """
    rt = MethodRuntime.for_method("atomr", model, sources, settings)
    builder = rt.state_graph(AtomRState)
    builder.add_node("plan", make_plan_node(rt))
    builder.add_node("review_plan", on_loop(make_review_node(rt)))
    builder.add_node("schedule", make_schedule_node(rt), destinations=(*STEP_NODES.values(), "finalize"))
    builder.add_node("select_sources", make_select_sources_node(rt), input_schema=StepInput)
    builder.add_node("run_operator", make_run_operator_node(rt), input_schema=StepInput)
    builder.add_node("reason_children", make_reason_children_node(rt), input_schema=StepInput)
    builder.add_node("reason_siblings", make_reason_siblings_node(rt), input_schema=StepInput)
    builder.add_node("direct_rag", make_direct_rag_node(rt), input_schema=StepInput)
    builder.add_node("closed_book", make_closed_book_node(rt), input_schema=StepInput)
    builder.add_node("finalize", on_loop(finalize))
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "review_plan")
    builder.add_edge("review_plan", "schedule")
    for step in STEP_NODES.values():
        builder.add_edge(step, "schedule")
    builder.add_edge("finalize", END)
    return MethodGraph(builder.compile(checkpointer=checkpointer, name="atomr"))


# The graph `langgraph dev` and LangGraph Studio load (models and sources from settings,
# resolved when a run starts).
graph = build_atomr_graph().graph
