"""Direct RAG reasoning, ATOMR's fallback (Algorithm 1, lines 10 and 19–21), and the
closed-book answer when the root ends empty (the authors' ``direct_Answer``).

Direct RAG always retrieves afresh, once per rewritten question: for an operator leaf,
each failed sub-call's question (its arguments already resolved to one referenced
answer); for any other node, the node's question fanned out over its references
(:func:`~atomgraph.nodes.atomr.fanout.plan_question`). A failed call or an unreadable reply
is no answer: the node's answer stays empty and a note gives the reason.
"""

from __future__ import annotations

import asyncio

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.atomr.algorithm import advance
from atomgraph.nodes.atomr.common import (
    AtomRRuntime, budget_note, collect, current_run, first_problem, node_outcome, read_into,
)
from atomgraph.nodes.atomr.fanout import plan_question
from atomgraph.prompts.atomr.knowledge import format_knowledge
from atomgraph.prompts.atomr.stages import CLOSED_BOOK_STAGE, DIRECT_RAG_STAGE
from atomgraph.state.atomr import StepInput, SubCall


def make_direct_rag_node(rt: AtomRRuntime):
    async def one(run, question: str, params, config):
        sub = SubCall(question=question, query=question)
        evidence, rcalls, notes = await rt.retrieve(run.sources, query=question, k=params.top_k) \
            if run.sources else ([], [], [])
        run.notes += notes
        sub.evidence = len(evidence)
        result = await rt.ask(DIRECT_RAG_STAGE, {"question": question, "knowledge": format_knowledge(evidence),
                                                 "pack": params.prompt_pack}, config)
        return read_into(sub, result, params.keep_raw_reply), evidence, rcalls, result.call

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
        result = await rt.ask(CLOSED_BOOK_STAGE, {"question": inp["question"], "pack": params.prompt_pack}, config)
        sub = read_into(SubCall(question=inp["question"]), result, params.keep_raw_reply)
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
