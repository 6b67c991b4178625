"""The scheduler: after every superstep, send each tree node whose dependencies are
answered to its next step, all at once (independent branches run in parallel), until the
root is answered or a limit stops the run.

A step may make several model calls (one per referenced answer: the fan-out), and the
scheduler knows beforehand how many; it shares the remaining LLM-call budget out among the
steps it sends (each gets ``budget``), so the budget is enforced exactly.
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Send

from atomgraph.nodes.atomr.common import AtomRRuntime
from atomgraph.nodes.atomr.fanout import plan_operator, plan_question
from atomgraph.nodes.atomr.select_sources import selection_calls
from atomgraph.state.atomr import AtomRState

STEP_NODES = {
    "select": "select_sources",
    "operate": "run_operator",
    "children": "reason_children",
    "siblings": "reason_siblings",
    "rag": "direct_rag",
    "closed_book": "closed_book",
}


def ready_nodes(state: AtomRState) -> list[int]:
    """Unanswered nodes whose dependencies are answered, in post-order."""
    tree, runs = state["tree"], state["runs"]
    return [
        i for i in tree.topological_order()
        if not runs[i].done and all(runs[d].done for d in tree.nodes[i].dependencies)
    ]


def planned_calls(state: AtomRState, i: int, n_sources: int, cap: int | None,
                  program_sources: frozenset[str] = frozenset()) -> int:
    """The model calls node ``i``'s next step will make (``program_sources``: the sources that
    answer a model-written query program, with ``kg_program_by_model`` on)."""
    tree, runs = state["tree"], state["runs"]
    run = runs[i]
    if run.step == "select":
        return selection_calls(n_sources)
    if run.step == "operate":
        op = tree.nodes[i].operator
        calls = len(plan_operator(run.question, op, runs, cap).calls)
        return calls * (2 if op.name == "Relate" and program_sources & set(run.sources) else 1)
    if run.step == "rag":
        if run.kind == "operator" and run.subcalls:
            return sum(1 for s in run.subcalls if s.outcome != "answered")
        return len(plan_question(run.question, runs, cap).calls)
    return 1


def make_schedule_node(rt: AtomRRuntime):
    def schedule(state: AtomRState, config: RunnableConfig) -> Command:
        tree, runs = state["tree"], state["runs"]
        if tree is None or runs[tree.root].done:
            return Command(goto="finalize")
        ready = ready_nodes(state)
        if not ready:
            return Command(goto="finalize", update={"error": "no tree node can run (unresolvable dependencies)"})
        params = rt.params(config)
        budget = params.max_llm_calls
        remaining = budget - len(state.get("llm_calls", []))
        n_sources = len(rt.sources().available)
        programmed = frozenset(n for n, src in rt.sources().available.items() if hasattr(src, "answer_program")) \
            if params.kg_program_by_model else frozenset()
        sends = []
        for i in ready:
            if params.max_parallel and len(sends) >= params.max_parallel:
                break
            need = planned_calls(state, i, n_sources, params.fanout_cap, programmed)
            if need > remaining:
                if remaining <= 0:
                    continue
                need = remaining
            remaining -= need
            sends.append(Send(STEP_NODES[runs[i].step],
                              {"question": state["question"], "tree": tree, "runs": runs, "node_id": i, "budget": need}))
        if not sends:
            return Command(
                goto="finalize",
                update={"stopped": f"LLM-call budget reached ({budget} calls); no prediction (the partial tree is the trace)"},
            )
        return Command(goto=sends)

    return schedule
