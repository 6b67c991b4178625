"""Atomic Reasoning Planning (ATOMR §3.2): the planner writes a tree; we parse and check it.

A tree that cannot be parsed, or exceeds the ``max_nodes`` / ``max_depth`` limits, is
replaced by a one-node tree answered by direct RAG, and the reason is kept in the trace.
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from atomgraph.errors import AtomgraphError
from atomgraph.nodes.atomr.runtime import AtomRRuntime
from atomgraph.prompts.atomr.plan import PLAN_PROMPT
from atomgraph.prompts.atomr.tree_parser import parse_tree
from atomgraph.state.atomr import AtomRState, NodeRun
from atomgraph.state.tree import ReasoningTree, TreeNode, TreeParseError

MAX_QUESTION_CHARS = 4000
FIRST_STEP = {"operator": "select", "parent": "children", "direct": "siblings", "open": "select"}


class InvalidQuestion(AtomgraphError, ValueError):
    """The question itself cannot be answered (empty, too long)."""


def check_question(question: object) -> str:
    if not isinstance(question, str):
        raise InvalidQuestion(f"the question must be a string, not {type(question).__name__}")
    q = " ".join(question.split())
    if not q:
        raise InvalidQuestion("the question is empty")
    if len(q) > MAX_QUESTION_CHARS:
        raise InvalidQuestion(f"the question is too long ({len(q)} characters; at most {MAX_QUESTION_CHARS})")
    return q


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


def make_plan_node(rt: AtomRRuntime):
    async def plan(state: AtomRState, config: RunnableConfig) -> dict:
        question = check_question(state.get("question"))
        params = rt.params(config)
        text, record = await rt.ask("planner", "plan", PLAN_PROMPT, {"question": question}, config)
        fallback = None
        tree: ReasoningTree | None = None
        if text is None:
            fallback = f"the planner call failed ({record.error})"
        else:
            try:
                tree = parse_tree(text, question)
            except TreeParseError as exc:
                fallback = f"the plan could not be parsed: {exc.reason}"
            else:
                if len(tree) > params.max_nodes:
                    fallback = f"the plan has {len(tree)} nodes, more than max_nodes={params.max_nodes}"
                elif tree.depth > params.max_depth:
                    fallback = f"the plan is {tree.depth} levels deep, more than max_depth={params.max_depth}"
        if fallback or tree is None:
            tree = single_node_tree(question)
        else:
            tree.nodes[tree.root].question = question  # the user's wording, not the planner's copy
        return {
            "question": question,
            "tree": tree,
            "plan_fallback": fallback,
            "raw_plan": text or "",
            "runs": initial_runs(tree),
            "llm_calls": [record],
            "unavailable_sources": dict(rt.sources().unavailable),
        }

    return plan
