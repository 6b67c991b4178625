"""The answerer: the question over the chosen chunks.

The default follows the authors' final-QA prompt (``generation_qa_with_reference_template``):
a neutral task, ``answer`` first, then ``rationale``, and "step by step" at the end, in our
words. ``short_answers`` (a switch, ours before) asks for the shortest answer with the
rationale first; EM/F1 under it are not comparable with the paper's Tables 1–2.
"""

from __future__ import annotations

from typing import Any

from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel, Field

from atomgraph.errors import ParseError
from atomgraph.prompts.stage import read_answer as read_reply
from atomgraph.prompts.kar3.context import render_known
from atomgraph.prompts.stage import Stage, text_parser
from atomgraph.text import read_object

ANSWER_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "You are a helpful assistant that answers questions."),
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

SHORT_ANSWER_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "You answer questions from the passages given, thinking step by step. Answers are as short "
               "as possible: an entity, a date, a number, yes or no."),
    ("human",
     "## Context, if any\n{context}\n\n## Question\n{question}\n\n"
     "Reason over the passages, then reply in JSON: {{\"rationale\": \"<your reasoning>\", \"answer\": \"<the answer>\"}}"),
])


def _fixed_text(prompt: ChatPromptTemplate) -> list[str]:
    return [m.prompt.template for m in prompt.messages if hasattr(m, "prompt")]


# what an echoing model sends back: the answer prompts' own sentences
INSTRUCTIONS = _fixed_text(ANSWER_PROMPT) + _fixed_text(SHORT_ANSWER_PROMPT)


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
SHORT_ANSWER_STAGE: Stage[str] = Stage(
    name="answer", role="answerer", prompt=SHORT_ANSWER_PROMPT, parser=text_parser(read_answer, "kar3_answer"),
    schema=AnswerSchema, from_structured=_from_structured, max_tokens=1024, render=render_answer, answers=True,
)
