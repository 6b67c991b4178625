"""Atomic Reasoning Planning (ATOMR §3.2): the planner writes a tree; the plan stage parses
it (``prompts/atomr/stages.py``); this node checks it against the question and the limits.

A plan that cannot be read, or whose root is not the question asked (``ROOT_MATCH_THRESHOLD``
of the question's content words), is no tree; of several plans in one reply (a small model
copies a demonstration's plan next to its own) the one whose root is the question asked is
kept, and none such is no tree: as the authors score it, the run ends with
an empty answer and ``error`` set. A
tree larger than ``max_nodes`` / ``max_depth`` (our limits) is answered by direct RAG.

With ``review_plan`` on, :func:`make_review_node` pauses the run after planning
(``interrupt``): the pending interrupt carries the tree as the planner's flat JSON; resuming
with ``Command(resume=True)`` (or None) keeps it, resuming with an edited tree (a dict or a
JSON string in the same format) runs the edited tree instead.
"""

from __future__ import annotations

import asyncio

from langchain_core.runnables import RunnableConfig

from langgraph.types import Overwrite, interrupt

from atomgraph.nodes.atomr.execution import AtomRRuntime
from atomgraph.prompts.atomr.stages import (
    PLAN_STAGE, ROOT_MATCH_THRESHOLD, plan_constraint, plan_reply_problem, root_overlap,
)
from atomgraph.prompts.atomr.tree_parser import parse_tree
from atomgraph.state.atomr import AtomRState, NodeRun, ReasoningTree, TreeNode, TreeParseError
from atomgraph.state.run import check_question

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
            fallback="the plan was replaced by direct RAG" if n.kind == "open" else None,
        )
        for i, n in tree.nodes.items()
    }


def check_tree(tree: ReasoningTree, question: str) -> tuple[ReasoningTree | None, str | None]:
    """(tree, None), or (None, why the planned tree is not a plan for ``question``)."""
    root = tree.nodes[tree.root].question
    overlap = root_overlap(root, question)
    if overlap < ROOT_MATCH_THRESHOLD:
        return None, (f"the plan could not be parsed: its root {root!r} is not the question asked "
                      f"({overlap:.0%} of its content words, below {ROOT_MATCH_THRESHOLD:.0%})")
    tree.question = question
    tree.nodes[tree.root].question = question  # the user's wording, not the planner's copy
    return tree, None


def pick_plan(trees: list[ReasoningTree], question: str) -> tuple[ReasoningTree | None, str | None]:
    """Of the plans a reply holds, the one for ``question``: the plan whose root shares the
    most of the question's content words, at least ``ROOT_MATCH_THRESHOLD`` (the first among
    equals); (None, why) when none does. The plans left out are named in the kept tree's
    repairs."""
    if len(trees) == 1:
        return check_tree(trees[0], question)
    roots = [t.nodes[t.root].question for t in trees]
    scores = [root_overlap(r, question) for r in roots]
    best = max(range(len(trees)), key=lambda i: (scores[i], -i))
    if scores[best] < ROOT_MATCH_THRESHOLD:
        listed = "; ".join(f"{r!r} ({s:.0%})" for r, s in zip(roots, scores))
        return None, (f"the plan could not be parsed: none of the {len(trees)} plans in the reply has the question "
                      f"asked as its root (at least {ROOT_MATCH_THRESHOLD:.0%} of its content words; copied "
                      f"demonstrations or plans for other questions): {listed}")
    tree, problem = check_tree(trees[best], question)
    if tree is not None:
        others = ", ".join(repr(r) for i, r in enumerate(roots) if i != best)
        tree.repairs.insert(0, f"the reply holds {len(trees)} plans; kept the one for the question asked "
                               f"(root {roots[best]!r}), left out the plans for {others}")
    return tree, problem


def within_limits(tree: ReasoningTree, max_nodes: int, max_depth: int) -> str | None:
    if len(tree) > max_nodes:
        return f"the plan has {len(tree)} nodes, more than max_nodes={max_nodes}"
    if tree.depth > max_depth:
        return f"the plan is {tree.depth} levels deep, more than max_depth={max_depth}"
    return None


def checked_tree(raw, question: str, max_nodes: int, max_depth: int) -> tuple[ReasoningTree | None, str | None]:
    """A reviewer's edited tree (a dict or JSON text): (tree, None) or (None, why not)."""
    try:
        tree = parse_tree(raw, question)
    except TreeParseError as exc:
        return None, f"the plan could not be parsed: {exc.reason}"
    tree, problem = check_tree(tree, question)
    if tree is not None:
        problem = within_limits(tree, max_nodes, max_depth)
    return (None, problem) if problem else (tree, None)


async def plan_constraint_for(rt: AtomRRuntime, question: str, switch: str) -> tuple[object | None, str]:
    """(the constraint the planner's reply is decoded under, the backend it is asked of) for
    the ``plan_constraint`` switch: :func:`~atomgraph.prompts.atomr.stages.plan_constraint`
    (the question pinned as the root, operator-call leaves), or (None, "auto")."""
    if switch == "off":
        return None, "auto"
    from atomgraph.backends import backend

    model = await rt.amodel(PLAN_STAGE.role)
    _, local = rt.model_facts(model)
    if switch == "auto" and not (local or rt.settings().structured_output):
        return None, "auto"
    kind, _ = await asyncio.to_thread(backend, model)  # may ask a server who it is (HTTP, cached)
    constraint = plan_constraint(question, kind)
    return constraint, (kind if constraint is not None else "auto")


def make_plan_node(rt: AtomRRuntime):
    async def plan(state: AtomRState, config: RunnableConfig) -> dict:
        question = check_question(state.get("question"))
        params = rt.params(config)
        constraint, kind = await plan_constraint_for(rt, question, params.plan_constraint)
        result = await rt.ask(PLAN_STAGE, {"question": question, "pack": params.prompt_pack}, config,
                              constraint=constraint, backend_kind=kind)
        tree: ReasoningTree | None = None
        unreadable = None
        if not result.ok:
            unreadable = f"the planner call failed ({result.call.error})" if result.call.error else \
                f"unreadable model output ({result.call.parse_error or 'the plan could not be parsed'})"
        else:
            tree, unreadable = pick_plan(result.value, question)
        if tree is None and not result.call.error:  # say what the reply was, where it shows (an echo, an injection, ...)
            why = plan_reply_problem(result.text, question, params.prompt_pack)
            unreadable = f"{unreadable}; {why}" if why else unreadable
        # the sources are built on first use (a store may open files), and unusable ones looked at
        # again in a long-lived graph (rt.asources): off the event loop
        unavailable = dict((await rt.asources()).unavailable)
        update = {"question": question, "raw_plan": result.text or "", "llm_calls": result.calls,
                  "unavailable_sources": unavailable}
        if tree is not None:
            oversize = within_limits(tree, params.max_nodes, params.max_depth)
            if oversize is None:
                return {**update, "tree": tree, "plan_fallback": None, "runs": initial_runs(tree)}
            fallback = oversize
        else:  # the authors score an unreadable plan empty
            return {**update, "tree": None, "plan_fallback": unreadable, "runs": {}, "error": unreadable}
        tree = single_node_tree(question)
        return {**update, "tree": tree, "plan_fallback": fallback, "runs": initial_runs(tree)}

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
