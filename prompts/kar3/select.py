"""The selectors: which retrieved atomic question (and so which chunk) to read next, and
the backup that shows the same candidates as paragraphs when no atom pick is readable.

Asks, options and field order follow the authors' prompts (``atom_question_selection_template``:
``thinking``, then ``question_idx`` from 1 to N; ``chunk_selection_template``: ``thinking``,
then ``paragraph_idx``), in our words. A pick is read only from its field: a reply without
it, or with a value that is not a whole number, is unreadable; 0 or a number outside 1..N
is no pick (the node then offers the paragraphs, then stops).

``allow_reject`` (a switch, ours before): the atom selector may answer 0 for "none helps".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel, Field

from atomgraph.errors import ParseError
from atomgraph.prompts.kar3.context import render_atom_candidates, render_known, render_paragraph_candidates
from atomgraph.prompts.stage import Stage, text_parser
from atomgraph.text import read_object

_SYSTEM = "You are a helpful assistant that answers questions."
_FORMAT = ("## Reply format\n"
           "Reply with this JSON:\n"
           "{{{{\n"
           "    \"thinking\": <a string: your reasoning for this choice>,\n"
           "    \"{field}\": <an integer: {what}>\n"
           "}}}}\n\n")
_TAIL = "## Knowledge we already have\n{{context}}\n\n## {heading}\n{{candidates}}\n\n## Question\n{{question}}\n\n## Your reply:"


def _atom_prompt(allow_reject: bool) -> ChatPromptTemplate:
    task = ("## Task\n"
            "Study the knowledge we already have, then decide which of the sub-questions below would be useful to "
            "answer before you answer the question. Choose the single most relevant sub-question from the list; do "
            "not choose one that the knowledge we have, or your own knowledge, already answers."
            + (" Answer 0 if none of them helps." if allow_reject else "") + "\n\n")
    what = "the number of a sub-question, from 1 to {count}" + (", or 0 if none helps" if allow_reject else "")
    return ChatPromptTemplate.from_messages([
        ("system", _SYSTEM),
        ("human", task + _FORMAT.format(field="question_idx", what=what)
         + _TAIL.format(heading="Sub-questions to choose from")),
    ])


SELECT_PROMPT = _atom_prompt(allow_reject=False)
SELECT_OR_REJECT_PROMPT = _atom_prompt(allow_reject=True)

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
    """``{"question", "chosen", "candidates", "show_titles"?}`` → the atom selector's variables."""
    hits = inputs["candidates"]
    return {"question": " ".join(str(inputs["question"]).split()), "context": render_known(inputs.get("chosen") or []),
            "candidates": render_atom_candidates(hits, bool(inputs.get("show_titles"))), "count": len(hits)}


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
SELECT_OR_REJECT_STAGE = _stage("select", SELECT_OR_REJECT_PROMPT, "question_idx", SelectionSchema, render_select)
SELECT_PARAGRAPH_STAGE = _stage("select_paragraph", SELECT_PARAGRAPH_PROMPT, "paragraph_idx", ParagraphSelectionSchema,
                                render_select_paragraph)
