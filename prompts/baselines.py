"""Prompts of the paper's simple baselines: closed-book standard prompting and
chain-of-thought (two demonstrations each), and standard RAG over one retrieval.

Every prompt asks the model to end with ``So the answer is: <answer>``;
:func:`extract_answer` reads that line back. Each prompt takes ``examples`` (the first
``demonstrations`` worked examples, :func:`examples`) and ``question``; RAG also ``evidence``.
"""

from __future__ import annotations

import re

from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel, Field

from atomgraph.errors import ParseError
from atomgraph.prompts.stage import Stage, text_parser

_SYSTEM = (
    "You answer knowledge-intensive questions. Give the shortest answer that fully answers "
    "the question: an entity, a date, a number, yes or no. Finish with a line of the form "
    "'So the answer is: <answer>'."
)

# Two demonstrations, written for this project. Each is (question, reasoning, answer).
DEMONSTRATIONS: list[tuple[str, str, str]] = [
    (
        "Who was born first, Ada Lovelace or Charles Babbage?",
        "Ada Lovelace was born in 1815. Charles Babbage was born in 1791. 1791 is earlier than 1815.",
        "Charles Babbage",
    ),
    (
        "What is the capital of the country where the engineer who designed the Eiffel Tower was born?",
        "The Eiffel Tower was designed by the company of Gustave Eiffel, who was born in Dijon, France. "
        "The capital of France is Paris.",
        "Paris",
    ),
]


def examples(n: int = len(DEMONSTRATIONS), *, with_reasoning: bool = False) -> str:
    """The first ``n`` demonstrations as prompt text ("" for none)."""
    blocks = []
    for q, why, a in DEMONSTRATIONS[: max(0, n)]:
        body = f"{why}\nSo the answer is: {a}" if with_reasoning else f"So the answer is: {a}"
        blocks.append(f"Question: {q}\nAnswer: {body}")
    return ("Examples:\n\n" + "\n\n".join(blocks) + "\n\n") if blocks else ""


STANDARD_PROMPT = ChatPromptTemplate.from_messages([
    ("system", _SYSTEM + " Answer directly, without explanation."),
    ("human", "{examples}Question: {question}\nAnswer:"),
])

COT_PROMPT = ChatPromptTemplate.from_messages([
    ("system", _SYSTEM + " First reason step by step in a few short sentences."),
    ("human", "{examples}Question: {question}\nAnswer: Let's think step by step."),
])

RAG_PROMPT = ChatPromptTemplate.from_messages([
    ("system", _SYSTEM + " Use the retrieved passages below; where they do not hold the answer, "
               "answer from what you know."),
    ("human", "{examples}Retrieved passages:\n{evidence}\n\nQuestion: {question}\nAnswer:"),
])

PROMPTS = {"standard": STANDARD_PROMPT, "cot": COT_PROMPT, "rag": RAG_PROMPT}

_MARKER = re.compile(r"(?:so\s+)?the\s+(?:final\s+)?answer\s+is\s*[:：]?\s*", re.I)


def extract_answer(text: str) -> str:
    """The answer after the last 'So the answer is:' marker; else the last non-empty line.

    Raises ParseError for an empty response.
    """
    text = (text or "").strip()
    if not text:
        raise ParseError("the model returned an empty response")
    matches = list(_MARKER.finditer(text))
    if matches:
        tail = text[matches[-1].end():].strip()
        answer = tail.splitlines()[0].strip() if tail else ""
    else:
        answer = [ln for ln in text.splitlines() if ln.strip()][-1].strip()
        answer = re.sub(r"^(answer|final answer)\s*[:：]\s*", "", answer, flags=re.I)
    answer = answer.strip().strip("*").strip()
    if answer.endswith(".") and not re.search(r"\b[A-Z]\.$", answer):
        answer = answer[:-1]
    answer = answer.strip().strip('"').strip()
    if not answer:
        raise ParseError(f"no answer after 'So the answer is:' in: {text[:200]!r}")
    return answer


class FinalAnswer(BaseModel):
    reasoning: str = Field("", description="Short reasoning (may be empty).")
    answer: str = Field(description="The shortest full answer: an entity, date, number, yes or no.")


def _structured_answer(a: FinalAnswer) -> str:
    if not a.answer.strip():
        raise ParseError("the structured answer is empty")
    return a.answer.strip()


def _stage(name: str, max_tokens: int) -> Stage[str]:
    return Stage(name=name, role="answerer", prompt=PROMPTS[name], parser=text_parser(extract_answer, "final_answer"),
                 schema=FinalAnswer, from_structured=_structured_answer, max_tokens=max_tokens)


STAGES: dict[str, Stage[str]] = {"standard": _stage("standard", 128), "cot": _stage("cot", 512), "rag": _stage("rag", 256)}
