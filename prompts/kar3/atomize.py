"""The atomizer: a chunk → the atomic questions it answers (one per line)."""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel, Field

from atomgraph.errors import ParseError
from atomgraph.prompts.kar3.parsing import as_str_list, json_object, question_lines
from atomgraph.prompts.stage import Stage, text_parser

ATOMIZE_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "You index passages for a question-answering system by writing the questions each passage answers."),
    ("human",
     "Write every distinct question that the passage below answers by itself. Each question asks about one "
     "fact, names its people, places, works and organisations in full (never 'it', 'he', 'she', 'they', "
     "'the company', 'the film' and the like), and differs from the others.\n"
     "Reply with one question per line, without numbers or bullets.\n\n"
     "Passage:\n{content}\n\nQuestions:"),
])


class AtomicQuestions(BaseModel):
    questions: list[str] = Field(description="Self-contained questions the passage answers, one fact each.")


def read_atomic_questions(text: str) -> list[str]:
    """The questions of an atomizer reply: a JSON list/object or one question per line. Lines
    with a question mark win when some have one (headings and remarks are dropped)."""
    obj = json_object(text)
    if obj is not None:
        found = as_str_list(obj.get("questions") or obj.get("atomic_questions"))
        if found:
            return found
    lines = [ln for ln in question_lines(text) if not (ln.endswith(":") and "?" not in ln)]
    asked = [ln for ln in lines if "?" in ln]
    found = asked or [ln for ln in lines if len(ln.split()) >= 3]
    if not found:
        raise ParseError(f"no atomic questions in the atomizer's reply: {text[:200]!r}")
    return found


def _from_structured(a: AtomicQuestions) -> list[str]:
    found = as_str_list(a.questions)
    if not found:
        raise ParseError("the structured reply lists no questions")
    return found


ATOMIZE_STAGE: Stage[list[str]] = Stage(
    name="atomize", role="atomizer", prompt=ATOMIZE_PROMPT, parser=text_parser(read_atomic_questions, "kar3_atoms"),
    schema=AtomicQuestions, from_structured=_from_structured, max_tokens=768,
)
