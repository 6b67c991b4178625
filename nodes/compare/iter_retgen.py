"""Iter-RetGen: rounds of retrieval and generation; each round after the first retrieves
with the question followed by the previous round's generation."""

from __future__ import annotations

from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.state.run import check_question
from atomgraph.nodes.compare.common import failed, hits, passages, same_answer, source_names
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.compare import iter_retgen as P
from atomgraph.state.compare import IterRetGenState


def rounds(state: IterRetGenState) -> list[dict]:
    return [s for s in state.get("steps") or [] if s.get("kind") == "generate"]


def make_retrieve_node(rt: MethodRuntime) -> Callable:
    """This round's retrieval: the question, then question + previous generation."""

    async def retrieve(state: IterRetGenState, config: RunnableConfig) -> dict[str, Any]:
        question = check_question(state.get("question"))
        previous = state.get("generation") or ""
        query = f"{question} {previous}".strip() if previous else question
        evidence, calls, notes = await rt.retrieve(source_names(rt), query=query, k=rt.params(config).top_k)
        return {"question": question, "evidence": evidence, "fresh": evidence, "retriever_calls": calls,
                "steps": [{"kind": "retrieve", "round": len(rounds(state)) + 1, "query": query,
                           "hits": hits(evidence), "notes": notes}]}

    return retrieve


def make_generate_node(rt: MethodRuntime) -> Callable:
    """This round's generation (reasoning and answer) from this round's passages."""

    async def generate(state: IterRetGenState, config: RunnableConfig) -> dict[str, Any]:
        params = rt.params(config)
        done_rounds = rounds(state)
        n = len(done_rounds) + 1
        result = await rt.ask(P.GENERATE, {"question": state["question"], "evidence": passages(state.get("fresh") or [])},
                              config)
        if not result.ok:
            return failed("generate", result, round=n)
        text, answer = result.value["text"], result.value["answer"]
        out: dict[str, Any] = {"llm_calls": [result.call], "generation": text, "answer": answer,
                               "steps": [{"kind": "generate", "round": n, "generation": text, "answer": answer}]}
        previous = done_rounds[-1]["answer"] if done_rounds else None
        if params.stop_when_stable and previous is not None and same_answer(previous, answer):
            return {**out, "done": True}
        if n >= params.rounds:
            if params.stop_when_stable and params.rounds > 1:
                out["stopped"] = f"round limit reached ({params.rounds}) before two rounds agreed on the answer"
            return {**out, "done": True}
        return out

    return generate


def after_generate(state: IterRetGenState) -> str:
    return "finish" if state.get("done") else "retrieve"


def trace_extra(state: IterRetGenState) -> dict:
    return {"rounds": len(rounds(state))}
