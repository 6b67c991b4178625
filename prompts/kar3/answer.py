"""The answerer: the question over the chosen chunks."""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel, Field

from atomgraph.errors import ParseError
from atomgraph.prompts.baselines import extract_answer
from atomgraph.prompts.kar3.parsing import json_object
from atomgraph.prompts.stage import Stage, text_parser

ANSWER_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "You answer questions from the passages given, thinking step by step. Answers are as short "
               "as possible: an entity, a date, a number, yes or no."),
    ("human",
     "Passages:\n{context}\n\nQuestion: {question}\n\n"
     "Reason over the passages, then reply in JSON: {{\"rationale\": \"<your reasoning>\", \"answer\": \"<the answer>\"}}"),
])


class AnswerSchema(BaseModel):
    rationale: str = Field("", description="Step-by-step reasoning over the passages.")
    answer: str = Field(description="The shortest full answer.")


def read_answer(text: str) -> str:
    """The ``answer`` of a JSON reply; else the text after 'So the answer is' / 'Answer:' or
    the last line. ParseError when empty."""
    obj = json_object(text)
    if obj is not None and "answer" in obj:
        value = obj["answer"]
        value = ", ".join(map(str, value)) if isinstance(value, list) else str(value if value is not None else "")
        if value.strip():
            return value.strip()
        raise ParseError("the answer field is empty")
    return extract_answer(text)


def _from_structured(a: AnswerSchema) -> str:
    if not a.answer.strip():
        raise ParseError("the structured answer is empty")
    return a.answer.strip()


ANSWER_STAGE: Stage[str] = Stage(
    name="answer", role="answerer", prompt=ANSWER_PROMPT, parser=text_parser(read_answer, "kar3_answer"),
    schema=AnswerSchema, from_structured=_from_structured, max_tokens=512,
)
