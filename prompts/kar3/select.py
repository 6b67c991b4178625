"""The selector: which retrieved atomic question (and so which chunk) helps most, or none."""

from __future__ import annotations

import re
from dataclasses import dataclass

from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel, Field

from atomgraph.errors import ParseError
from atomgraph.prompts.kar3.parsing import json_object
from atomgraph.prompts.stage import Stage, text_parser

SELECT_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "You choose the next piece of knowledge to read for a multi-hop question."),
    ("human",
     "Below are the question, the passages gathered so far, and {count} candidate questions; each candidate "
     "is answered by a passage we can fetch. Pick the one candidate whose answer helps most with what is "
     "still missing. Skip candidates that the gathered passages already answer. Answer 0 if no candidate "
     "helps.\n"
     "Reply in JSON: {{\"thinking\": \"<why>\", \"question_idx\": <a number from 1 to {count}, or 0>}}\n\n"
     "Passages gathered so far:\n{context}\n\nCandidates:\n{candidates}\n\nQuestion: {question}\n\nJSON:"),
])


@dataclass
class Selection:
    index: int | None  # 1-based; None: no candidate helps
    thinking: str = ""


class SelectionSchema(BaseModel):
    thinking: str = Field("", description="Why this candidate (or none) helps.")
    question_idx: int = Field(description="The chosen candidate's number, or 0 when none helps.")


_KEYS = ("question_idx", "question_index", "index", "idx", "choice", "selected")
_NONE = re.compile(r"\b(none|no candidate|nothing)\b", re.I)


def _index(value) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value) if int(value) > 0 else None
    m = re.search(r"-?\d+", str(value))
    if m:
        n = int(m.group())
        return n if n > 0 else None
    if _NONE.search(str(value)) or not str(value).strip():
        return None
    raise ParseError(f"not a candidate number: {value!r}")


def read_selection(text: str) -> Selection:
    """The chosen number (1-based) from a JSON object, a 'question_idx: N' line, or a lone
    number; None for 0, null or 'none'. ParseError otherwise."""
    obj = json_object(text)
    if obj is not None:
        for key in _KEYS:
            if key in obj:
                return Selection(_index(obj[key]), str(obj.get("thinking") or ""))
    m = re.search(r"(?:question_idx|index|candidate|choice)\W{0,3}\s*(-?\d+)", text or "", re.I) \
        or re.fullmatch(r"\s*\[?(-?\d+)\]?\.?\s*", text or "")
    if m:
        n = int(m.group(1))
        return Selection(n if n > 0 else None)
    if _NONE.search(text or ""):
        return Selection(None, (text or "").strip()[:500])
    raise ParseError(f"no candidate number in the selector's reply: {(text or '')[:200]!r}")


SELECT_STAGE: Stage[Selection] = Stage(
    name="select", role="selector", prompt=SELECT_PROMPT, parser=text_parser(read_selection, "kar3_selection"),
    schema=SelectionSchema, from_structured=lambda s: Selection(_index(s.question_idx), s.thinking), max_tokens=384,
)
