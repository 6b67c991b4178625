"""KAR³'s loop, in one place: why it ends and where it goes after each node.

    propose → retrieve → select ─┐   (on while no exit is set)
       ▲                         │
       └─────────────────────────┘   any exit → answer

Every exit is decided by :func:`loop_exit` (after each node's round) or :func:`refuse_start`
(before the first round), with its text in :data:`EXIT_TEXT`; the nodes report what happened
(proposals, hits, a pick), and the edges (:func:`after_propose`, :func:`after_retrieve`,
:func:`after_select`) follow ``state["exit"]``.
"""

from __future__ import annotations

from typing import Literal

from atomgraph.state.kar3 import AtomHit, ExitReason, Kar3Context, Kar3State, Round

EXIT_TEXT: dict[str, str] = {
    "max_chunks": "N chunks chosen",
    "enough": "the proposer gave an empty list of sub-questions",
    "proposer_unreadable": "the proposer's reply could not be read (the authors end the loop)",
    "nothing_retrieved": "nothing retrieved (proposals, then the backups)",
    "selector_none": "no readable pick, neither among the atomic questions nor among the same candidates as paragraphs",
    "no_index": "no atom index to retrieve from (no answer: KAR³ does not fall back to closed-book)",
    "invalid_question": "the question cannot be asked",
}

Step = Literal["propose", "retrieve", "select"]


def loop_exit(step: Step, r: Round, chosen: list[AtomHit], params: Kar3Context) -> ExitReason | None:
    """Why the loop ends after ``step`` of round ``r`` (None: it goes on). Sets ``r.ended``.

    - propose: the proposer gave an empty list of sub-questions (``enough``), or a reply that
      could not be read (``proposer_unreadable``: the authors' parser reads it as "do not
      decompose"; the switch ``proposer_question_fallback`` asks the question itself instead);
    - retrieve: nothing retrieved, the backups included (``nothing_retrieved``);
    - select: no readable pick (``selector_none``), or N chunks chosen (``max_chunks``).
    """
    reason: ExitReason | None = None
    if step == "propose" and r.enough:
        reason = "enough"
    elif step == "propose" and r.proposer_unreadable:
        reason = "proposer_unreadable"
    elif step == "retrieve" and not r.hits:
        reason = "nothing_retrieved"
    elif step == "select":
        if r.choice is None:
            reason = "selector_none"
        elif len(chosen) >= params.max_chunks:
            reason = "max_chunks"
    r.ended = reason
    return reason


def refuse_start(r: Round, reason: Literal["invalid_question", "no_index"], why: str) -> ExitReason:
    """The loop does not start: the question cannot be asked, or there is no atom index."""
    r.ended = reason
    r.notes.append(why)
    return reason


def after_propose(state: Kar3State) -> Literal["retrieve", "answer"]:
    return "answer" if state.get("exit") else "retrieve"


def after_retrieve(state: Kar3State) -> Literal["select", "answer"]:
    return "answer" if state.get("exit") else "select"


def after_select(state: Kar3State) -> Literal["propose", "answer"]:
    return "answer" if state.get("exit") else "propose"
