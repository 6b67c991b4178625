"""The one output contract every method graph returns, and the runner, ``atomgraph ask``,
reports and the demo read.

- ``answer`` — the final answer text ("" when there is none; never a passage of evidence);
- ``answers`` — the answer list (several for list questions);
- ``trace`` — the method's own account of the run (``trace["method"]`` names it);
- ``llm_calls`` / ``retriever_calls`` — one usage record per call;
- ``retrieved_ids`` / ``retrieved_titles`` — the objects the answer was drawn from, in order;
- ``stopped`` — why a limit ended the run early (None when it ran to the end);
- ``error`` — why the run could not produce an answer (None when it did).
"""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict  # pydantic (Studio's JSON schemas) needs this one on 3.11

from atomgraph.errors import AtomgraphError
from atomgraph.state.usage import CallRecords

OUTPUT_KEYS = ("answer", "answers", "trace", "llm_calls", "retriever_calls", "retrieved_ids",
               "retrieved_titles", "stopped", "error")


MAX_QUESTION_CHARS = 4000


class MethodInput(TypedDict):
    question: str


class InvalidQuestion(AtomgraphError, ValueError):
    """The question itself cannot be answered (empty, too long)."""


def check_question(question: object) -> str:
    """The input's question with its whitespace collapsed; InvalidQuestion when there is none
    or it is longer than ``MAX_QUESTION_CHARS``. Every method's first node calls it."""
    if not isinstance(question, str):
        raise InvalidQuestion(f"the question must be a string, not {type(question).__name__}")
    q = " ".join(question.split())
    if not q:
        raise InvalidQuestion("the question is empty")
    if len(q) > MAX_QUESTION_CHARS:
        raise InvalidQuestion(f"the question is too long ({len(q)} characters; at most {MAX_QUESTION_CHARS})")
    return q


class MethodOutput(TypedDict, total=False):
    answer: str
    answers: list[str]
    trace: dict
    llm_calls: CallRecords
    retriever_calls: CallRecords
    retrieved_ids: list[str]
    retrieved_titles: list[str]
    stopped: str | None
    error: str | None


def output_of(values: dict[str, Any] | None) -> dict[str, Any]:
    """Every contract key of a graph's final values, with its empty default where missing."""
    values = dict(values or {})
    empty: dict[str, Any] = {"answer": "", "answers": [], "trace": {}, "llm_calls": [], "retriever_calls": [],
                             "retrieved_ids": [], "retrieved_titles": [], "stopped": None, "error": None}
    return {k: (values.get(k) if values.get(k) is not None else empty[k]) for k in OUTPUT_KEYS}
