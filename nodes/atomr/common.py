"""Small helpers the ATOMR step nodes share: resolving ``[i]``, reading answers."""

from __future__ import annotations

from atomgraph.nodes.runtime import MethodRuntime, StageResult
from atomgraph.prompts.atomr.answer_format import ParsedAnswer, answer_text
from atomgraph.state.atomr import AtomRContext, NodeRun, Step, StepInput
from atomgraph.state.tree import substitute_refs

AtomRRuntime = MethodRuntime[AtomRContext]


def known_answers(runs: dict[int, NodeRun]) -> dict[int, str]:
    return {i: r.answer for i, r in runs.items() if r.done and r.answer}


def resolve(text: str, runs: dict[int, NodeRun]) -> str:
    """``text`` with every ``[i]`` whose node is answered replaced by that answer."""
    return substitute_refs(text, known_answers(runs))


def current_run(inp: StepInput) -> NodeRun:
    """A private copy of the node's run record, with its question resolved."""
    run = inp["runs"][inp["node_id"]].model_copy(deep=True)
    run.resolved_question = resolve(run.question, inp["runs"])
    return run


def read_answer(result: StageResult) -> tuple[ParsedAnswer | None, str | None]:
    """(parsed answer, None) or (None, why it is unusable)."""
    if not result.ok:
        return None, result.problem
    parsed: ParsedAnswer = result.value
    if parsed.unknown or not parsed.answers:
        return None, "the model answered Unknown"
    return parsed, None


def conclude(run: NodeRun, result: StageResult, *, failure: str, then: Step) -> NodeRun:
    """Settle ``run`` with the model's answer, or record why it failed and send the node to
    its fallback step ``then``."""
    run.llm_calls += 1
    parsed, problem = read_answer(result)
    if parsed is None:
        run.fallback = f"{failure}: {problem}"
        run.step = then
        return run
    return settle(run, parsed)


def settle(run: NodeRun, parsed: ParsedAnswer) -> NodeRun:
    run.paraphrase = parsed.paraphrase
    run.answers = [a for a in parsed.answers if a.strip()]
    run.answer = answer_text(run.answers)
    run.step = None
    return run
