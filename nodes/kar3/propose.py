"""The ``propose`` node (the authors' ``_propose_question_decomposition``): atomic
sub-questions given the question and the chunks chosen so far. An empty list ends the loop;
so does an unreadable reply, as the authors' parser turns it into "do not decompose"
(exit ``proposer_unreadable``); the switch ``proposer_question_fallback`` instead makes the
question itself this round's proposal (noted in the round)."""

from __future__ import annotations

from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.kar3.loop import Kar3Runtime, loop_exit, refuse_start
from atomgraph.prompts.kar3.stages import PROPOSE_STAGE
from atomgraph.state.kar3 import Kar3State, Round
from atomgraph.state.run import InvalidQuestion, check_question


def make_propose_node(rt: Kar3Runtime) -> Callable:
    async def propose(state: Kar3State, config: RunnableConfig) -> dict[str, Any]:
        rounds = list(state.get("rounds") or [])
        r = Round(number=len(rounds) + 1)
        try:
            question = check_question(state.get("question"))
        except InvalidQuestion as exc:
            return {"exit": refuse_start(r, "invalid_question", str(exc)), "rounds": rounds + [r],
                    "error": f"invalid question: {exc}"}
        params = rt.params(config)
        if not rounds:
            index, reason = rt.atom_index(params)
            if reason:
                return {"exit": refuse_start(r, "no_index", reason), "rounds": [r], "chosen": []}
        chosen = state.get("chosen") or []
        result = await rt.ask(PROPOSE_STAGE, {"question": question, "chosen": chosen}, config)
        out: dict[str, Any] = {"llm_calls": [result.call]}
        if result.ok:
            r.proposer_thinking = result.value.thinking
            if result.value.enough:
                r.enough = True
            else:
                r.proposals = result.value.questions[: params.max_proposals or None]
                dropped = len(result.value.questions) - len(r.proposals)
                if dropped > 0:
                    r.notes.append(f"{dropped} proposal(s) over max_proposals={params.max_proposals} dropped")
        elif params.proposer_question_fallback:
            r.notes.append(f"proposer: {result.problem}; the question itself is the proposal this round "
                           "(proposer_question_fallback)")
            r.proposals = [question]
        else:  # the authors' parser reads it as "do not decompose": the loop ends (loop_exit)
            r.proposer_unreadable = True
            r.notes.append(f"proposer: {result.problem}; the loop ends (the authors' reading)")
        out["exit"] = loop_exit("propose", r, state.get("chosen") or [], params)
        out["rounds"] = rounds + [r]
        return out

    return propose
