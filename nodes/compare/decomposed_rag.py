"""Decomposed RAG: decompose the question, retrieve for each sub-question in parallel
(``Send`` fan-out), merge the passages, answer once."""

from __future__ import annotations

from typing import Any, Callable

from langchain_core.runnables import RunnableConfig
from langgraph.types import Send

from atomgraph.state.run import check_question
from atomgraph.nodes.compare.common import failed, hits, passages, source_names, unique_evidence, shown_reply
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.compare import decomposed_rag as P
from atomgraph.state.compare import DecomposedRagState, SubQuestionInput


def make_decompose_node(rt: MethodRuntime) -> Callable:
    """The sub-questions (the first ``max_sub_questions``; dropping more sets ``stopped``). An
    unreadable decomposition falls back to the question as the one sub-question (recorded in
    the step's ``fallback`` and the trace's ``fallbacks``); a failed call ends the run."""

    async def decompose(state: DecomposedRagState, config: RunnableConfig) -> dict[str, Any]:
        question = check_question(state.get("question"))
        result = await rt.ask(P.PLAN, {"question": question}, config)
        if not result.ok and (result.call.error or not rt.params(config).fallback_to_question):
            return {**failed("decompose", result), "question": question}
        limit = rt.params(config).max_sub_questions
        step: dict[str, Any] = {"kind": "decompose", "response": shown_reply(result)}
        if result.ok:
            subs: list[str] = result.value
        else:  # an unreadable decomposition: retrieve for the question itself (the fallback keeps the question)
            subs = [question]
            step["fallback"] = f"retrieval on the question: {result.problem}"
        step["sub_questions"] = subs[:limit]
        out: dict[str, Any] = {"question": question, "llm_calls": [result.call], "sub_questions": subs[:limit],
                               "steps": [step]}
        if len(subs) > limit:
            out["stopped"] = f"sub-question limit reached ({limit}): {len(subs) - limit} more were dropped"
            out["steps"][0]["dropped"] = subs[limit:]
        return out

    return decompose


def fan_out(state: DecomposedRagState) -> list[Send] | str:
    """One ``retrieve_sub`` branch per sub-question (or straight to ``finish`` on an error)."""
    if state.get("error") or not state.get("sub_questions"):
        return "finish"
    return [Send("retrieve_sub", {"question": state["question"], "index": i, "sub_question": q})
            for i, q in enumerate(state["sub_questions"])]


def make_retrieve_sub_node(rt: MethodRuntime) -> Callable:
    """Retrieve for one sub-question from every available source."""

    async def retrieve_sub(state: SubQuestionInput, config: RunnableConfig) -> dict[str, Any]:
        query = state["sub_question"]
        evidence, calls, notes = await rt.retrieve(source_names(rt), query=query, k=rt.params(config).top_k)
        return {"retriever_calls": calls,
                "retrievals": [{"index": state["index"], "query": query, "evidence": evidence, "notes": notes}]}

    return retrieve_sub


def make_answer_node(rt: MethodRuntime) -> Callable:
    """Merge the sub-questions' passages (in sub-question order, without repeats) and answer."""

    async def answer(state: DecomposedRagState, config: RunnableConfig) -> dict[str, Any]:
        retrievals = sorted(state.get("retrievals") or [], key=lambda r: r["index"])
        merged = unique_evidence(e for r in retrievals for e in r["evidence"])
        steps = [{"kind": "retrieve", "sub_question": r["query"], "hits": hits(r["evidence"]), "notes": r["notes"]}
                 for r in retrievals]
        values = {"question": state["question"], "sub_questions": P.numbered(state.get("sub_questions") or []),
                  "evidence": passages(merged)}
        result = await rt.ask(P.ANSWER, values, config)
        if not result.ok:
            fail = failed("answer", result)
            return {**fail, "evidence": merged, "steps": steps + fail["steps"]}
        return {"llm_calls": [result.call], "evidence": merged, "answer": result.value,
                "steps": steps + [{"kind": "answer", "answer": result.value, "response": shown_reply(result)}]}

    return answer


def trace_extra(state: DecomposedRagState) -> dict:
    fallbacks = [{"stage": P.PLAN.name, "reason": s["fallback"]} for s in state.get("steps") or [] if s.get("fallback")]
    return {"sub_questions": list(state.get("sub_questions") or []), "fallbacks": fallbacks}
