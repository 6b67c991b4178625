"""The proposer: as many diverse atomic sub-questions as it can raise, given the question
and what is known so far. Only an empty list ends the loop.

Asks, options and field order follow the authors' decomposition prompt
(``question_decomposition_template``: ``thinking``, then ``sub_questions``), in our words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel, Field

from atomgraph.errors import ParseError
from atomgraph.prompts.kar3.context import render_known
from atomgraph.prompts.stage import Stage, text_parser
from atomgraph.text import as_str_list, question_lines, read_object

PROPOSE_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "You break questions down into the pieces of knowledge needed to answer them."),
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
