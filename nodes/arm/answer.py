"""The ``answer`` node: the answer from the retrieved objects (skipped with ``answer=False``),
and the run's trace — every stage's typed values as the graph returns them."""

from __future__ import annotations

from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.arm.common import ArmRuntime
from atomgraph.nodes.arm.verbalize import verbalize_object
from atomgraph.prompts.arm import ANSWER
from atomgraph.state.arm import ArmContext
from atomgraph.state.arm_graph import ArmState


def make_answer_node(art: ArmRuntime) -> Callable:
    async def answer(state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        out: dict[str, Any] = {"stopped": None}
        problems: list[str] = []
        if state.get("error"):
            out.update(answer="", answers=[], error=state["error"])
        elif not ctx.answer:
            out.update(answer="", answers=[], error=None)
        else:
            index = await art.aindex(ctx)
            ids = state.get("retrieved_ids") or []
            objects = "\n\n".join(verbalize_object(index, index.objects[index.position(i)], state["question"],
                                                   ctx.verbalize_top_rows) for i in ids) or "(nothing was retrieved)"
            result = await art.ask(ANSWER, {"question": state["question"], "objects": objects}, config)
            out["llm_calls"] = [result.call]
            if result.ok:
                out.update(answer=result.value, answers=[result.value], error=None)
            else:
                problems.append(f"answer: {result.problem}")
                out.update(answer="", answers=[], error=result.problem)
        out["trace"] = trace(state, ctx, problems)
        out["retrieved_ids"] = state.get("retrieved_ids") or []
        out["retrieved_titles"] = state.get("retrieved_titles") or []
        if problems:
            out["problems"] = problems
        return out

    return answer


def trace(state: ArmState, ctx: ArmContext, problems: list[str]) -> dict[str, Any]:
    """What each stage did: keywords, decoding, alignment, candidates, drafts, verdicts, votes."""
    drafts = state.get("drafts") or []
    return {
        "method": "arm",
        "llm": ctx.llm,
        "keywords": state.get("keywords") or [],
        "keyword_source": state.get("keyword_source"),
        "decoding": state.get("decoding") or {},
        "alignment": state.get("alignment") or [],
        "aligned": state.get("aligned") or [],
        "distinct_drafts": len({frozenset(d["ids"]) for d in state.get("drafts") or []}),
        "candidates": state.get("candidates") or [],
        "drafts": state.get("drafts") or [],
        "links": drafts[0]["links"] if drafts else [],  # the first draft's, as solved
        "mip": {k: v for k, v in drafts[0]["mip"].items() if k not in ("time_limited", "time_limit_s")} if drafts else {},
        "verdicts": state.get("verdicts") or [],
        "votes": state.get("votes") or [],
        "retrieved_ids": state.get("retrieved_ids") or [],
        "chosen": state.get("retrieved_ids") or [],
        "answered": bool(ctx.answer and not state.get("error")),
        "problems": list(state.get("problems") or []) + problems,
    }
