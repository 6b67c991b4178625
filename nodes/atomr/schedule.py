"""The scheduler: after every superstep, send each tree node whose dependencies are
answered to its next step, all at once (independent branches run in parallel), until the
root is answered or a limit stops the run.

Every step makes at most one LLM call, so the LLM-call budget is enforced exactly: no more
steps are dispatched than calls remain.
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Send

from atomgraph.nodes.atomr.common import AtomRRuntime
from atomgraph.state.atomr import AtomRState

STEP_NODES = {
    "select": "select_sources",
    "operate": "run_operator",
    "children": "reason_children",
    "siblings": "reason_siblings",
    "rag": "direct_rag",
}


def ready_nodes(state: AtomRState) -> list[int]:
    """Unanswered nodes whose dependencies are answered, in post-order."""
    tree, runs = state["tree"], state["runs"]
    return [
        i for i in tree.topological_order()
        if not runs[i].done and all(runs[d].done for d in tree.nodes[i].dependencies)
    ]


def make_schedule_node(rt: AtomRRuntime):
    def schedule(state: AtomRState, config: RunnableConfig) -> Command:
        tree, runs = state["tree"], state["runs"]
        if runs[tree.root].done:
            return Command(goto="finalize")
        ready = ready_nodes(state)
        if not ready:
            return Command(goto="finalize", update={"error": "no tree node can run (unresolvable dependencies)"})
        params = rt.params(config)
        budget = params.max_llm_calls
        remaining = budget - len(state.get("llm_calls", []))
        if remaining <= 0:
            return Command(
                goto="finalize",
                update={"stopped": f"LLM-call budget reached ({budget} calls); the answer is the best found so far"},
            )
        sends = [
            Send(STEP_NODES[runs[i].step], {"question": state["question"], "tree": tree, "runs": runs, "node_id": i})
            for i in ready[: min(remaining, params.max_parallel or remaining)]
        ]
        return Command(goto=sends)

    return schedule
