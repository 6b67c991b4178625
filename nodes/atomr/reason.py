"""Parent-node reasoning (ATOMR §3.3.2): child-answer reasoning for decomposed nodes and
sibling-answer reasoning for [DR] nodes. An Unknown (or unreadable) answer sends the node
to direct RAG: source selection, retrieval, then RAG."""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.atomr.common import conclude, current_run, resolve
from atomgraph.nodes.atomr.runtime import AtomRRuntime
from atomgraph.prompts.atomr.reasoning import (
    CHILD_REASONING_PROMPT,
    SIBLING_REASONING_PROMPT,
    format_qa_pairs,
)
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


def _make(rt: AtomRRuntime, stage: str, prompt: ChatPromptTemplate, related):
    async def reason(inp: StepInput, config: RunnableConfig) -> dict:
        run = current_run(inp)
        runs, tree = inp["runs"], inp["tree"]
        pairs = [(j, resolve(tree.nodes[j].question, runs), runs[j].answer or "Unknown") for j in related(inp)]
        text, record = await rt.ask(
            "answerer", stage, prompt, {"question": run.resolved_question, "qa_pairs": format_qa_pairs(pairs)}, config
        )
        conclude(run, text, failure=stage.replace("_", " "), then="select")
        return {"runs": {run.id: run}, "llm_calls": [record]}

    reason.__name__ = stage
    return reason


def make_reason_children_node(rt: AtomRRuntime):
    return _make(rt, "child_reasoning", CHILD_REASONING_PROMPT, lambda inp: inp["tree"].nodes[inp["node_id"]].children)


def make_reason_siblings_node(rt: AtomRRuntime):
    return _make(rt, "sibling_reasoning", SIBLING_REASONING_PROMPT, sibling_refs)
