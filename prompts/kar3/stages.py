"""KAR³'s question path as prompt stages (see :mod:`atomgraph.prompts.stage`), in the loop's order:
how knowledge is shown, then propose, select, answer. Each stage keeps its prompt, its
``render_*`` function (the node's inputs → the prompt's variables), its reader and its schema
together. The atomizer, which builds the index and is not on the question path, is
:mod:`atomgraph.prompts.kar3.atomize`.

| stage | role | replies with | value |
|---|---|---|---|
| ``propose`` | proposer | JSON ``{"thinking", "sub_questions"}`` (an empty list: stop) | :class:`Proposal` |
| ``select`` | selector | JSON ``{"thinking", "question_idx"}`` (1..N) | :class:`Selection` |
| ``select_paragraph`` | selector | JSON ``{"thinking", "paragraph_idx"}`` (1..N) | :class:`Selection` |
| ``answer`` | answerer | JSON ``{"answer", "rationale"}`` | ``str`` |

Asks, options and field order follow the authors' prompts (``question_decomposition_template``,
``atom_question_selection_template``, ``chunk_selection_template``,
``generation_qa_with_reference_template``), in our words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol

from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel, Field

from atomgraph.errors import ParseError
from atomgraph.injection import EVIDENCE_RULE, fence
from atomgraph.prompts.stage import Stage, text_parser
from atomgraph.prompts.stage import read_answer as read_reply
from atomgraph.text import as_str_list, question_lines, read_object


# --- how knowledge is shown ------------------------------------------------------------------
# The layout is the authors' (``pikerag/prompts/decomposition/atom_based.py``): a chunk is
# ``Title: <title>. Content: <text>``, each chunk once, in the order chosen, up to a total
# length; atomic-question candidates are ``Question i: <atom>`` (no titles); paragraph
# candidates ``Paragraph i: Title: <title>. Content: <text>``. Each list is fenced as data
# (``<evidence>`` ... ``</evidence>``: :func:`atomgraph.injection.fence`), and every prompt
# that shows one says so in its system message (``EVIDENCE_RULE``).

NONE_YET = "(none yet)"
CONTEXT_LIMIT = 80_000  # characters of chosen chunks shown (the authors' limit)


class ChunkLike(Protocol):
    chunk_id: str
    title: str
    text: str
    atom: str


def paragraph(title: str, text: str) -> str:
    return f"Title: {title}. Content: {text}" if title else text


def render_known(chosen: Iterable[ChunkLike], limit: int = CONTEXT_LIMIT) -> str:
    """The chosen chunks, each once, blank-line separated (``(none yet)`` when there are none)."""
    seen: set[str] = set()
    parts: list[str] = []
    size = 0
    for h in chosen:
        if h.chunk_id in seen:
            continue
        seen.add(h.chunk_id)
        parts.append(paragraph(h.title, h.text))
        size += len(parts[-1]) + 2
        if size >= limit:
            break
    return fence("\n\n".join(parts)) if parts else NONE_YET


def render_atom_candidates(hits: Iterable[ChunkLike]) -> str:
    """``Question i: <atom>`` per candidate. A chunk-backup hit of a chunk without atoms shows
    the start of its text instead."""
    lines = []
    for i, h in enumerate(hits, 1):
        label = h.atom or (h.text[:200] + ("..." if len(h.text) > 200 else ""))
        lines.append(f"Question {i}: {label}")
    return fence("\n".join(lines))


def render_paragraph_candidates(hits: Iterable[ChunkLike]) -> str:
    """``Paragraph i: Title: <title>. Content: <text>`` per candidate (the chunk-selection backup)."""
    return fence("\n".join(f"Paragraph {i}: {paragraph(h.title, h.text)}" for i, h in enumerate(hits, 1)))


# --- propose (``_propose_question_decomposition``) ----------------------------------------------
# As many diverse atomic sub-questions as the proposer can raise, given the question and what
# is known so far (``thinking``, then ``sub_questions``). Only an empty list ends the loop.
PROPOSE_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "You break questions down into the pieces of knowledge needed to answer them. " + EVIDENCE_RULE),
    ("human",
     "## Task\n"
     "Study the question and the knowledge we already have, then write atomic sub-questions asking for "
     "knowledge that would help you answer the question better. Come at it from different directions and "
     "write as many different sub-questions as you can.\n\n"
     "## Reply format\n"
     "Reply with this JSON:\n"
     "{{\n"
     "    \"thinking\": <a string: your analysis of the question and of the knowledge we have>,\n"
     "    \"sub_questions\": <a list of strings: the sub-questions, saying what you need>\n"
     "}}\n\n"
     "## Knowledge we already have\n{context}\n\n"
     "## Question\n{question}\n\n"
     "## Your reply:"),
])


@dataclass
class Proposal:
    questions: list[str] = field(default_factory=list)
    thinking: str = ""

    @property
    def enough(self) -> bool:
        """The proposer gave an empty list: the loop ends (the authors' only stop)."""
        return not self.questions


class ProposalSchema(BaseModel):
    thinking: str = Field("", description="Analysis of the question and of the knowledge already gathered.")
    sub_questions: list[str] = Field(description="Atomic sub-questions for the knowledge needed; as many diverse ones as possible.")


_KEYS = ("sub_questions", "subquestions", "sub-questions", "questions")


def render_propose(inputs: dict[str, Any]) -> dict[str, Any]:
    """``{"question", "chosen"}`` → the prompt's variables."""
    return {"question": " ".join(str(inputs["question"]).split()), "context": render_known(inputs.get("chosen") or [])}


def read_proposal(text: str) -> Proposal:
    """The ``sub_questions`` list of a JSON reply (an empty list: stop); without JSON, the
    reply's lines that end in a question mark. Prose without questions is unreadable (never
    read as a stop: "not enough" is not an empty list)."""
    obj = read_object(text)
    if obj is not None:
        for key in _KEYS:
            if key in obj:
                return Proposal(as_str_list(obj[key]), str(obj.get("thinking") or ""))
    asked = [ln for ln in question_lines(text) if ln.endswith("?") and not ln.lower().startswith(("question:", "thinking"))]
    if asked:
        return Proposal(asked)
    raise ParseError(f"no sub_questions list in the proposer's reply: {(text or '')[:200]!r}")


PROPOSE_STAGE: Stage[Proposal] = Stage(
    name="propose", role="proposer", prompt=PROPOSE_PROMPT, parser=text_parser(read_proposal, "kar3_proposal"),
    schema=ProposalSchema, from_structured=lambda p: Proposal(as_str_list(p.sub_questions), p.thinking),
    max_tokens=1024, render=render_propose,
)


# --- select (``_select_atom_question``) ------------------------------------------------------
# Which retrieved atomic question (and so which chunk) to read next (``thinking``, then
# ``question_idx`` from 1 to N), and the backup that shows the same candidates as paragraphs
# (``paragraph_idx``). A pick is read only from its field: a reply without it, or with a value
# that is not a whole number, is unreadable; 0 or a number outside 1..N is no pick (the node
# then offers the paragraphs, then stops).
_SYSTEM = "You are a helpful assistant that answers questions. " + EVIDENCE_RULE
_FORMAT = ("## Reply format\n"
           "Reply with this JSON:\n"
           "{{{{\n"
           "    \"thinking\": <a string: your reasoning for this choice>,\n"
           "    \"{field}\": <an integer: {what}>\n"
           "}}}}\n\n")
_TAIL = "## Knowledge we already have\n{{context}}\n\n## {heading}\n{{candidates}}\n\n## Question\n{{question}}\n\n## Your reply:"


SELECT_PROMPT = ChatPromptTemplate.from_messages([
    ("system", _SYSTEM),
    ("human",
     "## Task\n"
     "Study the knowledge we already have, then decide which of the sub-questions below would be useful to "
     "answer before you answer the question. Choose the single most relevant sub-question from the list; do "
     "not choose one that the knowledge we have, or your own knowledge, already answers.\n\n"
     + _FORMAT.format(field="question_idx", what="the number of a sub-question, from 1 to {count}")
     + _TAIL.format(heading="Sub-questions to choose from")),
])

SELECT_PARAGRAPH_PROMPT = ChatPromptTemplate.from_messages([
    ("system", _SYSTEM),
    ("human",
     "## Task\n"
     "Study the knowledge we already have, then decide which paragraph of the list below would help you answer "
     "the question. Choose the single most relevant paragraph from the list.\n\n"
     + _FORMAT.format(field="paragraph_idx", what="the number of a paragraph, from 1 to {count}")
     + _TAIL.format(heading="Paragraphs to choose from")),
])


@dataclass
class Selection:
    index: int | None  # 1-based as written; None: no pick (0 or null)
    thinking: str = ""


class SelectionSchema(BaseModel):
    thinking: str = Field("", description="Reasoning for the choice.")
    question_idx: int = Field(description="The chosen sub-question's number, from 1 to N.")


class ParagraphSelectionSchema(BaseModel):
    thinking: str = Field("", description="Reasoning for the choice.")
    paragraph_idx: int = Field(description="The chosen paragraph's number, from 1 to N.")


def render_select(inputs: dict[str, Any]) -> dict[str, Any]:
    """``{"question", "chosen", "candidates"}`` → the atom selector's variables."""
    hits = inputs["candidates"]
    return {"question": " ".join(str(inputs["question"]).split()), "context": render_known(inputs.get("chosen") or []),
            "candidates": render_atom_candidates(hits), "count": len(hits)}


def render_select_paragraph(inputs: dict[str, Any]) -> dict[str, Any]:
    """``{"question", "chosen", "candidates"}`` → the paragraph selector's variables."""
    hits = inputs["candidates"]
    return {"question": " ".join(str(inputs["question"]).split()), "context": render_known(inputs.get("chosen") or []),
            "candidates": render_paragraph_candidates(hits), "count": len(hits)}


def _whole_number(value: Any, key: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ParseError(f"{key} is not a number: {value!r}")
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, float) and value.is_integer():
        return int(value) if value > 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        n = int(value.strip())
        return n if n > 0 else None
    raise ParseError(f"{key} is not a whole number: {value!r}")


def field_reader(key: str):
    """A parser reading the pick from field ``key`` of the reply's JSON object only (None for
    0 or null). ParseError when there is no such field or it is not a whole number: numbers
    mentioned in the thinking are never read as the pick."""

    def read(text: str) -> Selection:
        obj = read_object(text)
        if obj is None or key not in obj:
            raise ParseError(f"no {key!r} field in the selector's reply: {(text or '')[:200]!r}")
        return Selection(_whole_number(obj[key], key), str(obj.get("thinking") or ""))
    read.__name__ = f"read_{key}"
    return read


read_selection = field_reader("question_idx")
read_paragraph_selection = field_reader("paragraph_idx")


def _stage(name: str, prompt: ChatPromptTemplate, key: str, schema: type[BaseModel], render) -> Stage[Selection]:
    return Stage(name=name, role="selector", prompt=prompt, parser=text_parser(field_reader(key), f"kar3_{key}"),
                 schema=schema, from_structured=lambda s: Selection(_whole_number(getattr(s, key), key), s.thinking),
                 max_tokens=1024, render=render)


SELECT_STAGE = _stage("select", SELECT_PROMPT, "question_idx", SelectionSchema, render_select)
SELECT_PARAGRAPH_STAGE = _stage("select_paragraph", SELECT_PARAGRAPH_PROMPT, "paragraph_idx", ParagraphSelectionSchema,
                                render_select_paragraph)


# --- answer ------------------------------------------------------------------------------------
# The question over the chosen chunks. The default follows the authors' final-QA prompt
# (``generation_qa_with_reference_template``): a neutral task, ``answer`` first, then
# ``rationale``, and "step by step" at the end.
ANSWER_PROMPT = ChatPromptTemplate.from_messages([
    ("system", _SYSTEM),
    ("human",
     "## Task\n"
     "Answer the question at the end using the context given, if there is any: read the context first, then "
     "give your final answer.\n\n"
     "## Reply format\n"
     "Reply with exactly this JSON, so that Python's json module can read it:\n"
     "{{\n"
     "    \"answer\": <a string: your answer>,\n"
     "    \"rationale\": <a string: the reasoning behind your answer>\n"
     "}}\n\n"
     "## Context, if any\n{context}\n\n"
     "## Question\n{question}\n\n"
     "Work through it step by step."),
])


def _fixed_text(prompt: ChatPromptTemplate) -> list[str]:
    return [m.prompt.template for m in prompt.messages if hasattr(m, "prompt")]


# what an echoing model sends back: the answer prompts' own sentences
INSTRUCTIONS = _fixed_text(ANSWER_PROMPT)


def extract_answer(text: str) -> str:
    """The answer in a reply's text (after 'So the answer is:', else its first line), refused
    when the reply echoes the answer prompts (answer contract)."""
    return read_reply(text, instructions=INSTRUCTIONS)


class AnswerSchema(BaseModel):
    answer: str = Field(description="The answer.")
    rationale: str = Field("", description="The reasoning behind the answer.")


def render_answer(inputs: dict[str, Any]) -> dict[str, Any]:
    """``{"question", "chosen"}`` → the answerer's variables."""
    return {"question": " ".join(str(inputs["question"]).split()), "context": render_known(inputs.get("chosen") or [])}


def read_answer(text: str) -> str:
    """The ``answer`` of a JSON reply (read as a reply is: the text after a 'So the answer is:'
    written into it); else the text after 'So the answer is' / 'Answer:' or the first line. Held
    to the answer contract (``prompts/stage.py``); ParseError when empty or refused."""
    obj = read_object(text)
    if obj is not None and "answer" in obj:
        value = obj["answer"]
        value = ", ".join(map(str, value)) if isinstance(value, list) else str(value if value is not None else "")
        if value.strip():
            return extract_answer(value)
        raise ParseError("the answer field is empty")
    return extract_answer(text)


def _from_structured(a: AnswerSchema) -> str:
    if not a.answer.strip():
        raise ParseError("the structured answer is empty")
    return extract_answer(a.answer)


ANSWER_STAGE: Stage[str] = Stage(
    name="answer", role="answerer", prompt=ANSWER_PROMPT, parser=text_parser(read_answer, "kar3_answer"),
    schema=AnswerSchema, from_structured=_from_structured, max_tokens=1024, render=render_answer, answers=True,
)


STAGES = {s.name: s for s in (PROPOSE_STAGE, SELECT_STAGE, SELECT_PARAGRAPH_STAGE, ANSWER_STAGE)}
