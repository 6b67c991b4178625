"""Prompts of the paper's simple baselines: closed-book standard prompting and
chain-of-thought (two demonstrations each), and standard RAG over one retrieval.

Every prompt asks the model to end with ``So the answer is: <answer>``;
:func:`read_answer` reads the first such line back (after cutting the reply where the model
starts inventing the next demonstration; the stages stop there too) and holds it to the
answer contract (:mod:`atomgraph.prompts.stage`). Each prompt takes ``examples`` (the first
``demonstrations`` worked examples, :func:`examples`) and ``question``; RAG also ``evidence``.
"""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel, Field

from atomgraph.errors import ParseError
from atomgraph.injection import EVIDENCE_RULE
from atomgraph.prompts.stage import FEW_SHOT_STOPS, Stage, answer_parser, read_answer, without_restated_question

_SYSTEM = (
    "You answer knowledge-intensive questions. Give the shortest answer that fully answers "
    "the question: an entity, a date, a number, yes or no. Finish with a line of the form "
    "'So the answer is: <answer>'."
)

# Two demonstrations on train questions of ../shared/data (never test questions), the reasoning
# written by us from each question's supporting facts there. Each is (question, reasoning, answer);
# DEMONSTRATION_SOURCES names the file and id each comes from.
DEMONSTRATIONS: list[tuple[str, str, str]] = [
    (  # hipporag/hotpotqa_train.json, _id 5ab26ce1554299449642c89c (comparison)
        "Who is the oldest, Sid Haig or Vic Darchinyan?",
        "The actor Sid Haig was born on July 14, 1939. The boxer Vic Darchinyan was born on 7 January 1976. "
        "1939 is earlier than 1976.",
        "Sid Haig",
    ),
    (  # hipporag/musique_train.json, id 2hop__410650_500443 (two hops)
        "Who is the sibling of the performer of Decade?",
        "Decade is a compilation album by the Canadian musician Neil Young. The writer Scott Young was the father "
        "of Neil Young and of Astrid Young, so Astrid Young is Neil Young's sister.",
        "Astrid Young",
    ),
]
DEMONSTRATION_SOURCES: list[str] = ["hipporag/hotpotqa_train.json#5ab26ce1554299449642c89c",
                                    "hipporag/musique_train.json#2hop__410650_500443"]


def examples(n: int = len(DEMONSTRATIONS), *, with_reasoning: bool = False) -> str:
    """The first ``n`` demonstrations as prompt text ("" for none)."""
    blocks = []
    for q, why, a in DEMONSTRATIONS[: max(0, n)]:
        body = f"{why}\nSo the answer is: {a}" if with_reasoning else f"So the answer is: {a}"
        blocks.append(f"Question: {q}\nAnswer: {body}")
    return ("Examples:\n\n" + "\n\n".join(blocks) + "\n\n") if blocks else ""


STANDARD_PROMPT = ChatPromptTemplate.from_messages([
    ("system", _SYSTEM + " Answer directly, without explanation."),
    ("human", "{examples}Question: {question}\nAnswer:"),
])

COT_PROMPT = ChatPromptTemplate.from_messages([
    ("system", _SYSTEM + " First reason step by step in a few short sentences."),
    ("human", "{examples}Question: {question}\nAnswer: Let's think step by step."),
])

RAG_PROMPT = ChatPromptTemplate.from_messages([
    ("system", _SYSTEM + " Use the retrieved passages below; where they do not hold the answer, "
               "answer from what you know. " + EVIDENCE_RULE),
    ("human", "{examples}Retrieved passages:\n{evidence}\n\nQuestion: {question}\nAnswer:"),
])

PROMPTS = {"standard": STANDARD_PROMPT, "cot": COT_PROMPT, "rag": RAG_PROMPT}

DEMONSTRATION_PAIRS: list[tuple[str, str]] = [(q, a) for q, _why, a in DEMONSTRATIONS]


class FinalAnswer(BaseModel):
    reasoning: str = Field("", description="Short reasoning (may be empty).")
    answer: str = Field(description="The shortest full answer: an entity, date, number, yes or no.")


# Chain-of-thought's structured reply: the reasoning is required, so a grammar built from the schema
# (grammar converters write required fields first) has the model reason before it answers.
class ReasonedAnswer(FinalAnswer):
    reasoning: str = Field(description="Step-by-step reasoning, in a few short sentences, before the answer.")


def _structured_answer(a: FinalAnswer) -> str:
    """The ``answer`` field read as a reply is (a small model writes 'So the answer is: X' there
    too: X is the answer), held to the answer contract."""
    if not a.answer.strip():
        raise ParseError("the structured answer is empty")
    return read_answer(a.answer)


def _stage(name: str, max_tokens: int) -> Stage[str]:
    system = PROMPTS[name].messages[0].prompt.template
    parser = answer_parser([system], DEMONSTRATION_PAIRS, require_marker=(name == "cot"))
    schema = ReasonedAnswer if name == "cot" else FinalAnswer
    return Stage(name=name, role="answerer", prompt=PROMPTS[name], parser=parser, schema=schema,
                 from_structured=_structured_answer, max_tokens=max_tokens, stop=FEW_SHOT_STOPS, answers=True,
                 demonstrations=tuple(DEMONSTRATIONS),
                 reread=lambda text, inputs: without_restated_question(text, str(inputs.get("question") or "")))


STAGES: dict[str, Stage[str]] = {"standard": _stage("standard", 128), "cot": _stage("cot", 512), "rag": _stage("rag", 256)}
