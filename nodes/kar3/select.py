"""The ``select`` node (the authors' ``_select_atom_question``): the selector picks one of the
retrieved atomic questions; its chunk joins the chosen context. When no pick is readable (no
``question_idx``, or a number outside 1..N), the same candidates are shown again as
paragraphs (the chunk-selection backup, ``paragraph_idx``); when that gives no readable pick
either, the loop ends. No hit is ever taken without a pick."""

from __future__ import annotations

from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.kar3.loop import Kar3Runtime, loop_exit
from atomgraph.prompts.kar3.stages import SELECT_OR_REJECT_STAGE, SELECT_PARAGRAPH_STAGE, SELECT_STAGE
from atomgraph.state.kar3 import AtomHit, Kar3State, Round
from atomgraph.state.run import LLMCall


def make_select_node(rt: Kar3Runtime) -> Callable:
    async def select(state: Kar3State, config: RunnableConfig) -> dict[str, Any]:
        params = rt.params(config)
        rounds = list(state.get("rounds") or [])
        r: Round = rounds[-1].model_copy(deep=True)
        chosen: list[AtomHit] = list(state.get("chosen") or [])
        inputs = {"question": state.get("question", ""), "chosen": chosen, "candidates": r.hits,
                  "show_titles": params.show_titles}
        llm: list[LLMCall] = []

        async def pick(stage, what: str) -> AtomHit | None:
            result = await rt.ask(stage, inputs, config)
            llm.append(result.call)
            if not result.ok:
                r.notes.append(f"{stage.name}: {result.problem}")
                return None
            thinking = result.value.thinking
            r.selector_thinking = f"{r.selector_thinking}\n{thinking}".strip() if thinking else r.selector_thinking
            i = result.value.index
            if i is not None and 1 <= i <= len(r.hits):
                return r.hits[i - 1]
            r.notes.append(f"{stage.name}: {'no pick (0 or null)' if i is None else f'{i} is outside 1..{len(r.hits)}'}"
                           f" among the {what}")
            return None

        choice = await pick(SELECT_OR_REJECT_STAGE if params.allow_reject else SELECT_STAGE, "atomic questions")
        if choice is None:
            r.paragraphs_offered = True
            r.notes.append("no readable pick among the atomic questions: the same candidates are shown as paragraphs")
            choice = await pick(SELECT_PARAGRAPH_STAGE, "paragraphs")
        if choice is not None:
            r.choice = choice
            chosen.append(choice)
        exit_reason = loop_exit("select", r, chosen, params)
        return {"rounds": rounds[:-1] + [r], "chosen": chosen, "exit": exit_reason, "llm_calls": llm}

    return select
