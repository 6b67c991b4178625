"""Atomic Reasoning Planning (ATOMR §3.2): the planner writes a tree; we parse and check it.

A tree that cannot be parsed, or exceeds the ``max_nodes`` / ``max_depth`` limits, is
replaced by a one-node tree answered by direct RAG, and the reason is kept in the trace.

With ``review_plan`` on, :func:`make_review_node` pauses the run after planning
(``interrupt``): the pending interrupt carries the tree as the planner's flat JSON; resuming
with ``Command(resume=True)`` (or None) keeps it, resuming with an edited tree (a dict or a
JSON string in the same format) runs the edited tree instead.
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from langgraph.types import Overwrite, interrupt

from atomgraph.nodes.atomr.common import AtomRRuntime
from atomgraph.prompts.atomr.stages import PLAN_STAGE
from atomgraph.prompts.atomr.tree_parser import parse_tree
from atomgraph.state.atomr import AtomRState, NodeRun
from atomgraph.state.output import InvalidQuestion, check_question  # noqa: F401 - InvalidQuestion re-exported
from atomgraph.state.tree import ReasoningTree, TreeNode, TreeParseError

FIRST_STEP = {"operator": "select", "parent": "children", "direct": "siblings", "open": "select"}


def single_node_tree(question: str) -> ReasoningTree:
    return ReasoningTree(question=question, nodes={0: TreeNode(id=0, question=question, kind="open", depth=1)})


def initial_runs(tree: ReasoningTree) -> dict[int, NodeRun]:
    return {
        i: NodeRun(
            id=i,
            kind=n.kind,
            question=n.question,
            operator=n.operator.render() if n.operator else None,
            step=FIRST_STEP[n.kind],
        )
        for i, n in tree.nodes.items()
    }


def checked_tree(raw, question: str, max_nodes: int, max_depth: int) -> tuple[ReasoningTree | None, str | None]:
    """(tree, None), or (None, why the planned tree cannot run)."""
    try:
        tree = parse_tree(raw, question)
    except TreeParseError as exc:
        return None, f"the plan could not be parsed: {exc.reason}"
    if len(tree) > max_nodes:
        return None, f"the plan has {len(tree)} nodes, more than max_nodes={max_nodes}"
    if tree.depth > max_depth:
        return None, f"the plan is {tree.depth} levels deep, more than max_depth={max_depth}"
    tree.nodes[tree.root].question = question  # the user's wording, not the planner's copy
    return tree, None


def make_plan_node(rt: AtomRRuntime):
    async def plan(state: AtomRState, config: RunnableConfig) -> dict:
        question = check_question(state.get("question"))
        params = rt.params(config)
        result = await rt.ask(PLAN_STAGE, {"question": question}, config)
        tree: ReasoningTree | None = None
        if not result.ok:
            fallback = f"the planner call failed ({result.call.error})" if result.call.error else \
                f"the plan could not be parsed: {result.call.parse_error}"
        else:
            tree, fallback = checked_tree(result.value, question, params.max_nodes, params.max_depth)
        if tree is None:
            tree = single_node_tree(question)
        return {
            "question": question,
            "tree": tree,
            "plan_fallback": fallback,
            "raw_plan": result.text or "",
            "runs": initial_runs(tree),
            "llm_calls": [result.call],
            "unavailable_sources": dict(rt.sources().unavailable),
        }

    return plan


def make_review_node(rt: AtomRRuntime):
    """Plan review (``review_plan``): pause with the tree; resume with it kept or edited."""

    def review_plan(state: AtomRState, config: RunnableConfig) -> dict:
        params = rt.params(config)
        if not params.review_plan or state.get("plan_fallback"):
            return {}
        tree: ReasoningTree = state["tree"]
        problem = None
        while True:
            edited = interrupt({
                "question": state["question"],
                "plan": tree.to_planner_json(),
                "problem": problem,
                "how": "resume with True (or None) to run this tree, or with an edited tree in the same "
                       "JSON format (a dict or a JSON string) to run that instead",
            })
            if edited is None or edited is True:
                return {}
            new, problem = checked_tree(edited, state["question"], params.max_nodes, params.max_depth)
            if new is not None:
                new.repairs.insert(0, "plan edited in review")
                return {"tree": new, "runs": Overwrite(initial_runs(new))}

    return review_plan
