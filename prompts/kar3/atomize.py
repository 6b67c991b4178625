"""The atomizer: a chunk → the atomic questions it answers (one per line), and the filter
that keeps only atoms that are questions (#18).

The ask follows the authors' tagging prompt (``atom_question_tagging_template``): as many
relevant questions as possible that the content answers, diverse, no duplicates, entity
names instead of pronouns, one per line without numbering; the content is shown as
``Title: <title>. Content: <text>``, fenced as data (``<evidence>`` ... ``</evidence>``). In our words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel, Field

from atomgraph.errors import ParseError
from atomgraph.injection import EVIDENCE_RULE, fence
from atomgraph.prompts.kar3.stages import paragraph
from atomgraph.prompts.stage import Stage, text_parser
from atomgraph.text import as_str_list, question_lines, read_object

ATOMIZE_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "You are a helpful assistant who reads content closely and asks good questions about it. "
               + EVIDENCE_RULE),
    ("human",
     "## Task\n"
     "Write as many questions as you can that are relevant to the content below and that it answers. Make them "
     "varied, with no repeated or near-identical questions. Every question names the entities it is about; "
     "never use pronouns or stand-ins such as it, he, she, they, the company or the person.\n\n"
     "## Reply format\n"
     "One question per line, without bullets or numbers.\n\n"
     "## Content\n{content}\n\n"
     "## Your questions:"),
])


class AtomicQuestions(BaseModel):
    questions: list[str] = Field(description="Questions the content answers, naming their entities; as many diverse ones as possible.")


def render_atomize(inputs: dict[str, Any]) -> dict[str, Any]:
    """``{"title", "text"}`` → the atomizer's variables."""
    return {"content": fence(paragraph(str(inputs.get("title") or ""), str(inputs.get("text") or "")))}


def read_atomic_questions(text: str) -> list[str]:
    """Every non-empty line of the reply (bullets and numbering removed), or the
    ``questions`` list of a JSON reply. ParseError when there is none. Which lines are
    atomic questions is :func:`filter_atoms`' call."""
    obj = read_object(text)
    if obj is not None:
        found = as_str_list(obj.get("questions") or obj.get("atomic_questions"))
        if found:
            return found
    found = question_lines(text)
    if not found:
        raise ParseError(f"no lines in the atomizer's reply: {text[:200]!r}")
    return found


@dataclass
class AtomFilter:
    """The atomizer's lines split into atoms and rejects (counted by reason)."""

    kept: list[str] = field(default_factory=list)
    rejected: dict[str, int] = field(default_factory=dict)

    def reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1


_WORD = re.compile(r"\w+")


def _words(s: str) -> list[str]:
    return _WORD.findall(s.lower())


def filter_atoms(lines: list[str], chunk_text: str, max_words: int = 40, check: bool = True) -> AtomFilter:
    """Keep the lines that are atomic questions: ending in a question mark, 3..``max_words``
    words, and not a copy of the chunk (a verbatim run of at least 80% of the chunk's words,
    said back with a question mark). Rejected lines are counted by reason: ``not_question``,
    ``too_short``, ``too_long``, ``copy``. ``check=False`` (the authors' atomizer, the default
    of indexing: switch ``atom_question_filter``) keeps every non-empty line."""
    out = AtomFilter()
    if not check:
        out.kept = [ln.strip() for ln in lines if ln and ln.strip()]
        return out
    chunk_words = _words(chunk_text)
    chunk = " ".join(chunk_words)
    for line in lines:
        words = _words(line)
        if not line.rstrip().endswith("?"):
            out.reject("not_question")
        elif len(words) < 3:
            out.reject("too_short")
        elif len(words) > max_words:
            out.reject("too_long")
        elif len(chunk_words) >= 6 and 5 * len(words) >= 4 * len(chunk_words) and " ".join(words) in chunk:
            out.reject("copy")
        else:
            out.kept.append(line.strip())
    return out


def _from_structured(a: AtomicQuestions) -> list[str]:
    found = as_str_list(a.questions)
    if not found:
        raise ParseError("the structured reply lists no questions")
    return found


ATOMIZE_STAGE: Stage[list[str]] = Stage(
    name="atomize", role="atomizer", prompt=ATOMIZE_PROMPT, parser=text_parser(read_atomic_questions, "kar3_atoms"),
    schema=AtomicQuestions, from_structured=_from_structured, max_tokens=1024, render=render_atomize,
)
