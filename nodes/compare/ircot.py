"""IRCoT: retrieve for the question, then alternate one reasoning sentence and one
retrieval with that sentence as the query, until a sentence gives the answer or the step
bound; finally read the answer off every passage gathered."""

from __future__ import annotations

from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.state.run import check_question
from atomgraph.nodes.compare.common import failed, hits, passages, source_names, unique_evidence, shown_reply
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.compare import ircot as P
from atomgraph.state.compare import IrcotState


def context(state: IrcotState, limit: int) -> list:
    """The passages the reasoning sees: the first ``limit`` distinct ones gathered."""
    return unique_evidence(state.get("evidence") or [], limit)


def sentences(state: IrcotState) -> list[str]:
    return [s["sentence"] for s in state.get("steps") or [] if s.get("kind") == "reason" and s.get("sentence")]


def make_retrieve_node(rt: MethodRuntime) -> Callable:
    """Retrieve with the question (first) or the latest reasoning sentence."""

    async def retrieve(state: IrcotState, config: RunnableConfig) -> dict[str, Any]:
        question = check_question(state.get("question"))
        query = state.get("pending") or question
        evidence, calls, notes = await rt.retrieve(source_names(rt), query=query, k=rt.params(config).top_k)
        return {"question": question, "evidence": evidence, "retriever_calls": calls, "pending": None,
                "steps": [{"kind": "retrieve", "query": query, "hits": hits(evidence), "notes": notes}]}

    return retrieve


def make_reason_node(rt: MethodRuntime) -> Callable:
    """One more sentence of reasoning; a sentence without the answer is the next query."""

    async def reason(state: IrcotState, config: RunnableConfig) -> dict[str, Any]:
        params = rt.params(config)
        so_far = sentences(state)
        values = {"question": state["question"], "evidence": passages(context(state, params.max_passages)),
                  "reasoning": "\n".join(so_far)}
        result = await rt.ask(P.STEP, values, config)
        if not result.ok:
            return failed("reason", result)
        sentence, answer = result.value["sentence"], result.value["answer"]
        out: dict[str, Any] = {"llm_calls": [result.call],
                               "steps": [{"kind": "reason", "sentence": sentence, "answer": answer}]}
        if answer is not None:
            return {**out, "done": True}
        if len(so_far) + 1 >= params.max_steps:
            return {**out, "stopped": f"step limit reached ({params.max_steps} reasoning sentences without the "
                                      "answer); the answer was read from the passages gathered"}
        return {**out, "pending": sentence}

    return reason


def make_read_node(rt: MethodRuntime) -> Callable:
    """The reader: answer the question from all gathered passages (chain-of-thought)."""

    async def read_answer(state: IrcotState, config: RunnableConfig) -> dict[str, Any]:
        evidence = context(state, rt.params(config).max_passages)
        result = await rt.ask(P.READ, {"question": state["question"], "evidence": passages(evidence)}, config)
        if not result.ok:
            return failed("read_answer", result)
        return {"llm_calls": [result.call], "answer": result.value,
                "steps": [{"kind": "read_answer", "answer": result.value, "response": shown_reply(result)}]}

    return read_answer


def after_reason(state: IrcotState) -> str:
    if state.get("error"):
        return "finish"
    if state.get("done") or state.get("stopped"):
        return "read_answer"
    return "retrieve"


def trace_extra(state: IrcotState) -> dict:
    return {"reasoning": sentences(state)}
