"""Parent-node reasoning (ATOMR §3.3.2): child-answer reasoning for decomposed nodes and
sibling-answer reasoning for [DR] nodes. An Unknown (or unreadable) answer sends the node
to direct RAG: source selection, retrieval, then RAG."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.atomr.common import AtomRRuntime, conclude, current_run, resolve
from atomgraph.prompts.atomr.reasoning import format_qa_pairs
from atomgraph.prompts.atomr.stages import CHILD_REASONING_STAGE, SIBLING_REASONING_STAGE
from atomgraph.prompts.stage import Stage
from atomgraph.state.atomr import StepInput


def sibling_refs(inp: StepInput) -> list[int]:
    """The siblings a [DR] node reasons over: those it references, else its earlier siblings."""
    tree, i = inp["tree"], inp["node_id"]
    node = tree.nodes[i]
    if node.refs:
        return node.refs
    if node.parent is None:
        return []
    return [s for s in tree.nodes[node.parent].children if s < i]


def _make(rt: AtomRRuntime, stage: Stage, related):
    async def reason(inp: StepInput, config: RunnableConfig) -> dict:
        run = current_run(inp)
        runs, tree = inp["runs"], inp["tree"]
        pairs = [(j, resolve(tree.nodes[j].question, runs), runs[j].answer or "Unknown") for j in related(inp)]
        result = await rt.ask(stage, {"question": run.resolved_question, "qa_pairs": format_qa_pairs(pairs)}, config)
        conclude(run, result, failure=stage.name.replace("_", " "), then="select")
        return {"runs": {run.id: run}, "llm_calls": [result.call]}

    reason.__name__ = stage.name
    return reason


def make_reason_children_node(rt: AtomRRuntime):
    return _make(rt, CHILD_REASONING_STAGE, lambda inp: inp["tree"].nodes[inp["node_id"]].children)


def make_reason_siblings_node(rt: AtomRRuntime):
    return _make(rt, SIBLING_REASONING_STAGE, sibling_refs)
