"""Node functions of the baseline graphs: one-shot retrieval and one-call answering."""

from __future__ import annotations

from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.compare.common import shown_reply
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.baselines import examples
from atomgraph.prompts.stage import Stage
from atomgraph.state.run import Evidence, check_question, evidence_record, render_evidence
from atomgraph.state.baselines import BaselineState
from atomgraph.tools.base import retrieval_failure


def make_retrieve_node(rt: MethodRuntime) -> Callable:
    """A node that asks every available source once for the top-``k`` items, concurrently.

    A failing source is recorded on its RetrieverCall; the others still contribute.
    """

    async def retrieve(state: BaselineState, config: RunnableConfig) -> dict[str, Any]:
        k = rt.params(config).top_k
        sources = await rt.asources()  # a requested source that cannot be used raises here
        evidence, calls, _ = await rt.retrieve(list(sources.available), query=state["question"], k=k)
        return {"evidence": evidence, "retriever_calls": calls}

    return retrieve


def make_answer_node(rt: MethodRuntime, stage: Stage[str], *, with_reasoning: bool = False) -> Callable:
    """A node that answers with one call of ``stage`` ('So the answer is: ...')."""

    async def answer(state: BaselineState, config: RunnableConfig) -> dict[str, Any]:
        question = check_question(state.get("question"))
        evidence: list[Evidence] = state.get("evidence") or []
        values = {"question": question,
                  "examples": examples(rt.params(config).demonstrations, with_reasoning=with_reasoning)}
        if "evidence" in stage.prompt.input_variables:
            values["evidence"] = render_evidence(evidence) or "(nothing was retrieved)"
        if "evidence" in values:  # retrieval-augmented: no evidence because every source failed is an error
            failed = retrieval_failure(state.get("retriever_calls") or [])
            if failed is None and not rt.sources().available:
                failed = "no evidence: no knowledge source is available" + "".join(
                    f"; {name}: {why}" for name, why in rt.sources().unavailable.items())
            if failed:
                trace = {"method": stage.name, "response": "", "evidence": [],
                         "unavailable_sources": dict(rt.sources().unavailable)}
                return {"llm_calls": [], "trace": trace, "stopped": None, "retrieved_titles": [],
                        "retrieved_ids": [], "answer": "", "answers": [], "error": failed}
        result = await rt.ask(stage, values, config)  # a restated question is read past there (Stage.reread)
        trace = {
            "method": stage.name,
            "response": shown_reply(result) or "",
            "evidence": [evidence_record(e) for e in evidence],
            "unavailable_sources": dict(rt.sources().unavailable) if "evidence" in values else {},
        }
        out: dict[str, Any] = {
            "llm_calls": [result.call], "trace": trace, "stopped": None,
            "retrieved_titles": list(dict.fromkeys(e.title for e in evidence if e.title)),
            "retrieved_ids": list(dict.fromkeys(e.id for e in evidence if e.id)),
        }
        if not result.ok:
            return {**out, "answer": "", "answers": [], "error": result.problem}
        return {**out, "answer": result.value, "answers": [result.value], "error": None}

    return answer
