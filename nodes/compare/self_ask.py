"""Self-Ask with retrieval: ask a follow-up, search for it, answer it from the passages,
repeat; the model ends with its final answer, or the follow-up bound asks for it."""

from __future__ import annotations

from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.state.run import check_question
from atomgraph.nodes.compare.common import failed, hits, passages, source_names, shown_reply
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.compare import self_ask as P
from atomgraph.state.compare import SelfAskState


def turns(state: SelfAskState) -> list[dict]:
    """The answered follow-ups so far: ``{"follow_up", "answer"}`` each."""
    return [s for s in state.get("steps") or [] if s.get("kind") == "intermediate_answer"]


def make_ask_node(rt: MethodRuntime) -> Callable:
    """The model's next line: a follow-up question (``pending``) or the final answer."""

    async def ask(state: SelfAskState, config: RunnableConfig) -> dict[str, Any]:
        question = check_question(state.get("question"))
        result = await rt.ask(P.STEP, {"question": question, "scratchpad": P.scratchpad(turns(state))}, config)
        if not result.ok:
            return failed("follow_up", result)
        step = result.value
        out: dict[str, Any] = {"llm_calls": [result.call], "question": question}
        if step["kind"] == "final":
            return {**out, "answer": step["text"], "done": True, "pending": None,
                    "steps": [{"kind": "final_answer", "answer": step["text"], "response": shown_reply(result)}]}
        return {**out, "pending": step["text"], "steps": [{"kind": "follow_up", "text": step["text"]}]}

    return ask


def make_search_node(rt: MethodRuntime) -> Callable:
    """Retrieve for the pending follow-up question from every available source."""

    async def search(state: SelfAskState, config: RunnableConfig) -> dict[str, Any]:
        query = state["pending"]
        evidence, calls, notes = await rt.retrieve(source_names(rt), query=query, k=rt.params(config).top_k)
        return {"evidence": evidence, "fresh": evidence, "retriever_calls": calls,
                "steps": [{"kind": "search", "query": query, "hits": hits(evidence), "notes": notes}]}

    return search


def make_intermediate_node(rt: MethodRuntime) -> Callable:
    """Answer the pending follow-up from the passages just retrieved."""

    async def intermediate_answer(state: SelfAskState, config: RunnableConfig) -> dict[str, Any]:
        follow_up = state["pending"]
        result = await rt.ask(P.ANSWER, {"question": follow_up, "evidence": passages(state.get("fresh") or [])}, config)
        if not result.ok:
            return failed("intermediate_answer", result, follow_up=follow_up)
        out: dict[str, Any] = {"llm_calls": [result.call], "pending": None,
                               "steps": [{"kind": "intermediate_answer", "follow_up": follow_up, "answer": result.value}]}
        limit = rt.params(config).max_follow_ups
        if len(turns(state)) + 1 >= limit:
            out["stopped"] = f"follow-up limit reached ({limit}); the final answer was asked for with what was found"
        return out

    return intermediate_answer


def make_final_node(rt: MethodRuntime) -> Callable:
    """The final answer, asked for when the follow-up bound ends the loop."""

    async def final_answer(state: SelfAskState, config: RunnableConfig) -> dict[str, Any]:
        result = await rt.ask(P.FINAL, {"question": state["question"], "scratchpad": P.scratchpad(turns(state))}, config)
        if not result.ok:
            return failed("final_answer", result)
        return {"llm_calls": [result.call], "answer": result.value, "done": True,
                "steps": [{"kind": "final_answer", "answer": result.value, "forced": True}]}

    return final_answer


def after_ask(state: SelfAskState) -> str:
    return "finish" if state.get("done") else "search"


def after_intermediate(state: SelfAskState) -> str:
    if state.get("done"):
        return "finish"
    return "final_answer" if state.get("stopped") else "ask"
