"""Small helpers the ATOMR step nodes share: resolving ``[i]`` for display, reading a
stage's answer into a sub-call, settling a node from its sub-calls."""

from __future__ import annotations

from atomgraph.nodes.call import StageResult
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.errors import ParseError
from atomgraph.prompts.answer_contract import refusal_reason
from atomgraph.prompts.atomr.answer_format import answer_text, read_as_authors
from atomgraph.state.atomr import AtomRContext, NodeRun, StepInput, SubCall
from atomgraph.state.tree import substitute_refs

AtomRRuntime = MethodRuntime[AtomRContext]


def known_answers(runs: dict[int, NodeRun]) -> dict[int, str]:
    """Answered nodes' answers as text; a node with no answer is left out (its ``[i]`` stays)."""
    return {i: r.answer for i, r in runs.items() if r.done and r.answers}


def resolve(text: str, runs: dict[int, NodeRun]) -> str:
    """``text`` with every ``[i]`` whose node has an answer replaced by that answer."""
    return substitute_refs(text, known_answers(runs))


def current_run(inp: StepInput) -> NodeRun:
    """A private copy of the node's run record, with its question resolved (for the trace)."""
    run = inp["runs"][inp["node_id"]].model_copy(deep=True)
    run.resolved_question = resolve(run.question, inp["runs"])
    return run


def read_into(sub: SubCall, result: StageResult, keep_raw: bool = False) -> SubCall:
    """Fill ``sub`` from a stage result: answered, empty (the model said Unknown), or failed
    (the call failed, its reply could not be read, or the answer contract refused it: Algorithm
    1's operator execution failure). ``keep_raw`` (the switch ``keep_raw_reply``, the authors'
    reading): an unreadable reply that was not refused is read as the authors read every reply
    (:func:`~atomgraph.prompts.atomr.answer_format.read_as_authors`), its items still held to
    the answer contract; the sub-call's ``problem`` keeps what our reader said."""
    sub.stage = result.call.stage
    parsed = result.value
    if not result.ok:
        error = result.call.parse_error
        if not (keep_raw and result.text and not result.call.error and error and refusal_reason(error) is None):
            sub.outcome, sub.problem = "failed", result.problem
            return sub
        try:
            parsed = read_as_authors(result.text)
        except ParseError as exc:  # an item the contract refuses: still a failure
            sub.outcome, sub.problem = "failed", f"{result.problem}; the authors' reading: {exc}"
            return sub
        sub.problem = f"kept the raw reply as the authors do (keep_raw_reply): {result.problem}"
    sub.paraphrase = parsed.paraphrase if not parsed.unknown else ""
    sub.answers = [a for a in parsed.answers if a.strip()]
    sub.outcome = "answered" if sub.answers else "empty"
    return sub


def node_outcome(subs: list[SubCall], skipped: str | None = None) -> str:
    """A node's outcome from its sub-calls: failed if any failed (those go to direct RAG),
    else answered if any answered, else empty; skipped when no call was made."""
    if skipped is not None or not subs:
        return "skipped"
    if any(s.outcome == "failed" for s in subs):
        return "failed"
    return "answered" if any(s.answers for s in subs) else "empty"


def collect(run: NodeRun) -> NodeRun:
    """The node's answers and paraphrase: its sub-calls' answers concatenated in order."""
    answers = [a for s in run.subcalls for a in s.answers]
    run.answers = answers
    run.answer = answer_text(answers)
    run.paraphrase = "; ".join(s.paraphrase for s in run.subcalls if s.paraphrase)
    return run


def first_problem(subs: list[SubCall]) -> str | None:
    return next((s.problem for s in subs if s.problem), None)


def budget_note(run: NodeRun, planned: int, budget: int) -> int:
    """How many of ``planned`` sub-calls fit the step's budget; a note for the rest."""
    if planned > budget:
        run.notes.append(f"LLM-call budget: {planned - budget} of {planned} sub-calls not run")
    return min(planned, budget)
