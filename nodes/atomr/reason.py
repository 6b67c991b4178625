"""Parent-node reasoning (ATOMR §3.3.2): child-answer reasoning for decomposed nodes and
sibling-answer reasoning for [DR] nodes. What happens next (direct RAG after an Unknown
child-reasoning answer; nothing after a [DR] one) is Algorithm 1's table.

The prompt carries, as the authors build it, each related question with its answer list;
a question that references others also carries its paraphrase and the referenced
questions' answers, so "Where was [1] born? A: [\"Uppsala\"]" is never ambiguous."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.atomr.algorithm import advance
from atomgraph.nodes.atomr.common import AtomRRuntime, collect, current_run, read_into
from atomgraph.nodes.atomr.fanout import refs_in
from atomgraph.prompts.atomr.reasoning import format_qa_pairs
from atomgraph.prompts.atomr.stages import CHILD_REASONING_STAGE, SIBLING_REASONING_STAGE
from atomgraph.prompts.stage import Stage
from atomgraph.state.atomr import NodeRun, StepInput, SubCall
from atomgraph.state.tree import ReasoningTree


def sibling_refs(inp: StepInput) -> list[int]:
    """The siblings a [DR] node reasons over: those it references, else its earlier siblings."""
    tree, i = inp["tree"], inp["node_id"]
    node = tree.nodes[i]
    if node.refs:
        return node.refs
    if node.parent is None:
        return []
    return [s for s in tree.nodes[node.parent].children if s < i]


def qa_pairs(related: list[int], tree: ReasoningTree, runs: dict[int, NodeRun]) -> list[tuple]:
    """(id, question, answers, paraphrase) for the related nodes and the nodes they reference."""
    pairs: dict[int, tuple] = {}
    for j in related:
        q = tree.nodes[j].question
        refs = refs_in(q, runs)
        pairs[j] = (j, q, runs[j].answers, runs[j].paraphrase if refs else "")
        for r in refs:
            if r in runs and r not in pairs and r not in related:
                pairs[r] = (r, tree.nodes[r].question, runs[r].answers, "")
    return list(pairs.values())


def _make(rt: AtomRRuntime, stage: Stage, step: str, related):
    async def reason(inp: StepInput, config: RunnableConfig) -> dict:
        params = rt.params(config)
        run = current_run(inp)
        runs, tree = inp["runs"], inp["tree"]
        pairs = format_qa_pairs(qa_pairs(related(inp), tree, runs))
        result = await rt.ask(stage, {"question": run.resolved_question, "qa_pairs": pairs,
                                      "pack": params.prompt_pack}, config)
        run.llm_calls += 1
        sub = read_into(SubCall(question=run.resolved_question), result, params.keep_raw_reply)
        run.subcalls = [sub]
        collect(run)
        advance(run, step, sub.outcome, params, is_root=run.id == tree.root, problem=sub.problem)
        if run.step == "select":  # its answer is direct RAG's now
            run.subcalls, run.answers, run.answer, run.paraphrase = [], [], "", ""
        return {"runs": {run.id: run}, "llm_calls": [result.call]}

    reason.__name__ = stage.name
    return reason


def make_reason_children_node(rt: AtomRRuntime):
    return _make(rt, CHILD_REASONING_STAGE, "children", lambda inp: inp["tree"].nodes[inp["node_id"]].children)


def make_reason_siblings_node(rt: AtomRRuntime):
    return _make(rt, SIBLING_REASONING_STAGE, "siblings", sibling_refs)
