"""The ``answer`` node: the question over the chosen chunks; the trace of every round, why
the loop ended, and the LLM calls and tokens this question used. Without an atom index
there is no answer (an error, no model call). With an index but no chunk chosen (nothing
retrieved, or the loop ended before a selection) the answer is closed-book: recorded in
``trace["fallbacks"]`` as "KAR³ closed-book", counted in every summary."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.kar3.loop import EXIT_TEXT, Kar3Runtime
from atomgraph.prompts.kar3.stages import ANSWER_STAGE, SHORT_ANSWER_STAGE
from atomgraph.state.kar3 import AtomHit, Kar3State, Round
from atomgraph.state.run import LLMCall


def usage_of(calls: list[LLMCall | dict]) -> dict[str, Any]:
    calls = [LLMCall.model_validate(c) if isinstance(c, dict) else c for c in calls]
    return {
        "llm_calls": len(calls),
        "prompt_tokens": sum(c.prompt_tokens for c in calls),
        "completion_tokens": sum(c.completion_tokens for c in calls),
        "calls_by_stage": dict(Counter(c.stage for c in calls)),
        "unreadable": sum(1 for c in calls if c.parse_error),
        "failed": sum(1 for c in calls if c.error),
    }


def make_answer_node(rt: Kar3Runtime) -> Callable:
    async def answer(state: Kar3State, config: RunnableConfig) -> dict[str, Any]:
        params = rt.params(config)
        rounds: list[Round] = list(state.get("rounds") or [])
        chosen: list[AtomHit] = list(state.get("chosen") or [])
        exit_reason = state.get("exit") or (rounds[-1].ended if rounds else None)
        index, _ = rt.atom_index(params) if exit_reason != "invalid_question" else (None, None)
        calls = list(state.get("llm_calls") or [])
        out: dict[str, Any] = {"stopped": None,
                               "retrieved_ids": [h.chunk_id for h in chosen],
                               "retrieved_titles": list(dict.fromkeys(h.title for h in chosen if h.title))}
        response = ""
        if exit_reason == "invalid_question":
            out.update(answer="", answers=[], error=state.get("error"))
        elif exit_reason == "no_index":
            out.update(answer="", answers=[],
                       error=f"no atom index: {'; '.join(rounds[-1].notes) if rounds else ''} (KAR³ does not answer closed-book)")
        else:
            stage = SHORT_ANSWER_STAGE if params.short_answers else ANSWER_STAGE
            result = await rt.ask(stage, {"question": state["question"], "chosen": chosen}, config)
            calls.append(result.call)
            out["llm_calls"] = [result.call]
            response = result.text or ""
            if result.ok:
                out.update(answer=result.value, answers=[result.value], error=None)
            else:
                out.update(answer="", answers=[], error=f"answer: {result.problem}")
        fallbacks = []
        if not chosen and exit_reason not in ("invalid_question", "no_index"):
            # nothing was chosen (nothing retrieved, or every round ended first): the answer is
            # closed-book, a fallback the summaries count
            fallbacks.append({"stage": "answer", "kind": "KAR³ closed-book", "final": True,
                              "reason": f"closed-book: no chunk was chosen ({EXIT_TEXT.get(exit_reason or '', '') or exit_reason})"})
        out["trace"] = {
            "method": "kar3",
            "fallbacks": fallbacks,
            "collection": getattr(index, "name", None),
            "params": dataclasses.asdict(params),
            "rounds": [r.model_dump() for r in rounds],
            "exit": exit_reason,
            "exit_text": EXIT_TEXT.get(exit_reason or "", ""),
            "chosen": [h.model_dump(include={"chunk_id", "title", "atom", "score", "via"}) for h in chosen],
            "response": response,
            "usage": usage_of(calls),
        }
        return out

    return answer
