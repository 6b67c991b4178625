"""Decomposed RAG, the baseline of the ARM and PIKE-RAG papers: ``decomposed_rag_plan``
splits the question into simple sub-questions, each is retrieved for separately, and
``decomposed_rag_answer`` answers the question over the merged passages."""

from __future__ import annotations

import re

from langchain_core.prompts import ChatPromptTemplate

from atomgraph.errors import ParseError
from atomgraph.prompts.stage import clean_reply as contract_reply
from atomgraph.text import read_json
from atomgraph.prompts.compare.common import (ANSWER_RULE, FEW_SHOT_STOPS, clean_reply, final_answer_parser,
                                              instructions_of, strip_label)
from atomgraph.injection import EVIDENCE_RULE
from atomgraph.prompts.stage import Stage, text_parser

PLAN_PROMPT = ChatPromptTemplate.from_messages([
    ("system",
     "Break the question into the simple sub-questions whose answers together answer it, in the order "
     "they should be looked up. Write one sub-question per line, numbered '1.', '2.', ...; a later "
     "sub-question may mention what an earlier one asks for in words. A question that needs no "
     "breaking up is its own single sub-question. Write nothing else."),
    ("human", "Question: {question}\nSub-questions:"),
])

ANSWER_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "Answer the question using the passages retrieved for its sub-questions. First reason "
     "step by step in a few short sentences. " + ANSWER_RULE + " " + EVIDENCE_RULE),
    ("human", "Sub-questions:\n{sub_questions}\n\nPassages:\n{evidence}\n\nQuestion: {question}\n"
     "Answer: Let's think step by step."),
])

_ITEM = re.compile(r"^\s*(?:(?:sub[\s-]*question|q)\s*)?(?:\d+|[a-z])\s*[.):：]\s*(.+)$|^\s*[-*•]\s+(.+)$", re.I)


def read_sub_questions(text: str) -> list[str]:
    """The sub-questions of a reply: a JSON list, numbered or bulleted lines, or else the lines
    that end with a question mark. Duplicates, and items that neither end with "?" nor hold three words, are dropped.
    A reply that restates the question as a new 'Question:' or repeats the instructions is
    refused (the answer contract's :func:`clean_reply`). ParseError when there are none."""
    text = contract_reply(clean_reply(text), instructions=instructions_of(PLAN_PROMPT))
    items: list[str] = []
    data = read_json(text, want=list)
    if data:
        items = [str(x.get("question", "") if isinstance(x, dict) else x) for x in data if x is not None]
    if not items:
        for line in text.splitlines():
            m = _ITEM.match(line)
            if m:
                items.append(m.group(1) or m.group(2))
    if not items:
        items = [ln for ln in text.splitlines() if ln.strip().endswith("?")]
    items = [strip_label(x, "sub-question", "question") for x in items]
    out = list(dict.fromkeys(x for x in (i.strip() for i in items) if x.endswith("?") or len(x.split()) >= 3))
    if not out:
        raise ParseError(f"no sub-questions in: {text[:200]!r}")
    return out


def numbered(questions: list[str]) -> str:
    return "\n".join(f"{i}. {q}" for i, q in enumerate(questions, 1))


PLAN = Stage(name="decomposed_rag_plan", role="planner", prompt=PLAN_PROMPT,
             parser=text_parser(read_sub_questions, "sub_questions"), max_tokens=256, stop=FEW_SHOT_STOPS)
ANSWER = Stage(name="decomposed_rag_answer", role="answerer", prompt=ANSWER_PROMPT,
               parser=final_answer_parser(ANSWER_PROMPT), max_tokens=384, stop=FEW_SHOT_STOPS, answers=True)
