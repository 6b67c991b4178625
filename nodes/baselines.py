"""Node functions of the baseline graphs: one-shot retrieval and one-call answering."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from langchain_core.language_models import BaseChatModel
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableConfig

from atomgraph.errors import ParseError
from atomgraph.models import ainvoke_recorded, message_text
from atomgraph.prompts.baselines import extract_answer
from atomgraph.state.evidence import Evidence, render_evidence
from atomgraph.tools.base import KnowledgeSource, recorded_retrieval


def make_retrieve_node(sources: list[KnowledgeSource], k: int) -> Callable:
    """A node that asks every source once for the top-``k`` items, concurrently.

    A failing source is recorded on its RetrieverCall; the others still contribute.
    """

    async def retrieve(state: dict) -> dict[str, Any]:
        question = state["question"]
        results = await asyncio.gather(*(recorded_retrieval(s, question, k) for s in sources))
        evidence = [e for hits, _ in results for e in hits]
        calls = [c for _, c in results]
        return {
            "evidence": evidence,
            "retriever_calls": calls,
            "retrieved_titles": [e.title for e in evidence if e.title],
        }

    return retrieve


def make_answer_node(model: BaseChatModel, prompt: ChatPromptTemplate, method: str) -> Callable:
    """A node that answers with one model call and reads 'So the answer is: ...'."""

    async def answer(state: dict, config: RunnableConfig) -> dict[str, Any]:
        evidence: list[Evidence] = state.get("evidence") or []
        values = {"question": state["question"]}
        if "evidence" in prompt.input_variables:
            values["evidence"] = render_evidence(evidence) or "(nothing was retrieved)"
        messages = prompt.format_messages(**values)
        msg, call = await ainvoke_recorded(model, messages, role="answerer", stage=method, config=config)
        raw = message_text(msg)
        trace = {
            "method": method,
            "response": raw,
            "evidence": [e.model_dump(include={"title", "source", "url", "text"}) for e in evidence],
        }
        out: dict[str, Any] = {"llm_calls": [call], "trace": trace, "stopped": None,
                               "retrieved_titles": [e.title for e in evidence if e.title]}
        if msg is None:
            return {**out, "answer": "", "answers": [], "error": f"model call failed: {call.error}"}
        try:
            text = extract_answer(raw)
        except ParseError as exc:
            return {**out, "answer": "", "answers": [], "error": str(exc)}
        return {**out, "answer": text, "answers": [text], "error": None}

    return answer
