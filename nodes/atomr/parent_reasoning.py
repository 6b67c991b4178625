"""Parent Node Reasoning (ATOMR §3.3.2): child-answer reasoning for decomposed nodes,
sibling-answer reasoning for [DR] nodes, and direct RAG reasoning, the fallback (Algorithm 1,
lines 10 and 19–21), with the closed-book answer when the root ends empty. What happens next
(direct RAG after an Unknown child-reasoning answer; nothing after a [DR] one) is Algorithm 1's
table (:mod:`~atomgraph.nodes.atomr.execution`).

The reasoning prompt carries, as the authors build it, each related question with its answer
list; a question that references others also carries its paraphrase and the referenced
questions' answers, so "Where was [1] born? A: [\"Uppsala\"]" is never ambiguous."""

from __future__ import annotations

import asyncio

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.atomr.execution import (AtomRRuntime, advance, budget_note, collect, current_run, first_problem,
                                             node_outcome, plan_question, read_into, refs_in)
from atomgraph.prompts.atomr.stages import (CHILD_REASONING_STAGE, CLOSED_BOOK_STAGE, DIRECT_RAG_STAGE,
                                            SIBLING_REASONING_STAGE, format_knowledge, format_qa_pairs)
from atomgraph.prompts.stage import Stage
from atomgraph.state.atomr import NodeRun, ReasoningTree, StepInput, SubCall

# --- child and sibling answer reasoning ---------------------------------------------------------


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
        variables = {"question": run.resolved_question, "qa_pairs": pairs, "pack": params.prompt_pack}
        result = await rt.ask(stage, variables, config)
        run.llm_calls += 1
        sub = read_into(SubCall(question=run.resolved_question), result, params.keep_raw_reply, stage, variables)
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


# --- direct RAG reasoning -----------------------------------------------------------------------
# Direct RAG reasoning, ATOMR's fallback (Algorithm 1, lines 10 and 19–21), and the
# closed-book answer when the root ends empty (the authors' ``direct_Answer``).
#
# Direct RAG always retrieves afresh, once per rewritten question: for an operator leaf,
# each failed sub-call's question (its arguments already resolved to one referenced
# answer); for any other node, the node's question fanned out over its references
# (:func:`~atomgraph.nodes.atomr.execution.plan_question`). A failed call or an unreadable reply
# is no answer: the node's answer stays empty and a note gives the reason.

def make_direct_rag_node(rt: AtomRRuntime):
    async def one(run, question: str, params, config):
        sub = SubCall(question=question, query=question)
        evidence, rcalls, notes = await rt.retrieve(run.sources, query=question, k=params.top_k) \
            if run.sources else ([], [], [])
        run.notes += notes
        sub.evidence = len(evidence)
        variables = {"question": question, "knowledge": format_knowledge(evidence), "pack": params.prompt_pack}
        result = await rt.ask(DIRECT_RAG_STAGE, variables, config)
        return read_into(sub, result, params.keep_raw_reply, DIRECT_RAG_STAGE, variables), evidence, rcalls, result.call

    async def direct_rag(inp: StepInput, config: RunnableConfig) -> dict:
        params = rt.params(config)
        run = current_run(inp)
        tree = inp["tree"]
        skipped = None
        if run.kind == "operator" and run.subcalls:  # redo the operator's failed sub-calls
            keep = [s for s in run.subcalls if s.outcome == "answered"]
            questions = [s.question for s in run.subcalls if s.outcome != "answered"]
        else:
            planned = plan_question(run.question, inp["runs"], params.fanout_cap)
            keep, questions, skipped = [], [q for q, _ in planned.calls], planned.skipped
            if planned.capped:
                run.notes.append(f"fanout_cap={params.fanout_cap}: {planned.capped} sub-calls not run")
        if run.fallback is None and run.kind != "open":
            run.fallback = "direct RAG"
        questions = questions[: budget_note(run, len(questions), inp.get("budget", len(questions)))]
        results = await asyncio.gather(*(one(run, q, params, config) for q in questions))
        llm_calls, retriever_calls, redone = [], [], []
        for sub, evidence, rcalls, call in results:
            redone.append(sub)
            run.evidence += evidence
            retriever_calls += rcalls
            llm_calls.append(call)
        run.llm_calls += len(llm_calls)
        run.subcalls = keep + redone
        if skipped:
            run.notes.append(skipped)
        for sub in redone:
            if sub.outcome == "failed":
                run.notes.append(f"direct RAG gave no answer: {sub.problem}")
        collect(run)
        outcome = node_outcome(run.subcalls, skipped if not run.subcalls else None)
        advance(run, "rag", outcome, params, is_root=run.id == tree.root, problem=first_problem(redone))
        return {"runs": {run.id: run}, "llm_calls": llm_calls, "retriever_calls": retriever_calls}

    return direct_rag


def make_closed_book_node(rt: AtomRRuntime):
    async def closed_book(inp: StepInput, config: RunnableConfig) -> dict:
        params = rt.params(config)
        run = current_run(inp)
        variables = {"question": inp["question"], "pack": params.prompt_pack}
        result = await rt.ask(CLOSED_BOOK_STAGE, variables, config)
        sub = read_into(SubCall(question=inp["question"]), result, params.keep_raw_reply, CLOSED_BOOK_STAGE, variables)
        run.llm_calls += 1
        if sub.outcome == "failed":
            run.notes.append(f"closed-book answer failed: {sub.problem}")
        run.notes.append("answered closed-book (the tree found no answer)")
        run.subcalls.append(sub)
        collect(run)
        run.fallback = (run.fallback + "; " if run.fallback else "") + "closed-book answer"
        advance(run, "closed_book", sub.outcome, params, is_root=True)
        return {"runs": {run.id: run}, "llm_calls": [result.call]}

    return closed_book
