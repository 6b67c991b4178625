"""The proposer: atomic sub-questions for what the chosen chunks do not yet tell, or enough."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel, Field

from atomgraph.errors import ParseError
from atomgraph.prompts.kar3.parsing import as_str_list, json_object, question_lines
from atomgraph.prompts.stage import Stage, text_parser

PROPOSE_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "You plan the retrieval for a multi-hop question: you ask for the facts still missing."),
    ("human",
     "Read the question and the passages gathered so far. Then write short, self-contained sub-questions, "
     "each about a single fact, for the knowledge still missing to answer the question. Phrase the same need "
     "in several ways where the wording of the passages is unknown, and do not ask what the passages already "
     "say. If the passages are already enough to answer, give an empty list.\n"
     "Reply in JSON: {{\"thinking\": \"<what is known and what is missing>\", \"sub_questions\": [\"...\", ...]}}\n\n"
     "Passages gathered so far:\n{context}\n\nQuestion: {question}\n\nJSON:"),
])


@dataclass
class Proposal:
    questions: list[str] = field(default_factory=list)
    thinking: str = ""

    @property
    def enough(self) -> bool:
        return not self.questions


class ProposalSchema(BaseModel):
    thinking: str = Field("", description="What the passages already say and what is missing.")
    sub_questions: list[str] = Field(description="Atomic sub-questions for the missing facts; empty when enough.")


_ENOUGH = re.compile(r"\b(enough|sufficient|no (?:more|further) (?:sub-?)?(?:questions|information)|nothing (?:more|else))\b", re.I)
_KEYS = ("sub_questions", "subquestions", "sub-questions", "questions", "queries")


def read_proposal(text: str) -> Proposal:
    """Sub-questions from a JSON object (an empty list: enough), else question lines, else an
    'enough' remark. ParseError when none of these is there."""
    obj = json_object(text)
    if obj is not None:
        for key in _KEYS:
            if key in obj:
                return Proposal(as_str_list(obj[key]), str(obj.get("thinking") or ""))
    asked = [ln for ln in question_lines(text) if ln.endswith("?") and not ln.lower().startswith(("question:", "thinking"))]
    if asked:
        return Proposal(asked)
    if _ENOUGH.search(text or ""):
        return Proposal([], (text or "").strip()[:500])
    raise ParseError(f"no sub-questions and no 'enough' in the proposer's reply: {(text or '')[:200]!r}")


PROPOSE_STAGE: Stage[Proposal] = Stage(
    name="propose", role="proposer", prompt=PROPOSE_PROMPT, parser=text_parser(read_proposal, "kar3_proposal"),
    schema=ProposalSchema, from_structured=lambda p: Proposal(as_str_list(p.sub_questions), p.thinking), max_tokens=512,
)
