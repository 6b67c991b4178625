"""ATOMR's prompt stages: each prompt with its parser, structured-output schema and
output-token cap (see :mod:`atomgraph.prompts.stage`).

| stage | role | replies with | value |
|---|---|---|---|
| ``plan`` | planner | the tree as flat JSON | the planner text (the node parses the tree) |
| ``source_selection`` | executor | source names on one line | the reply text |
| ``search`` / ``relate`` / ``filter`` | executor | ATOMR's answer format | :class:`ParsedAnswer` |
| ``child_reasoning`` / ``sibling_reasoning`` / ``direct_rag`` | answerer | ATOMR's answer format | :class:`ParsedAnswer` |
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from atomgraph.errors import ParseError
from atomgraph.prompts.atomr.answer_format import ParsedAnswer, parse_answer
from atomgraph.prompts.atomr.operators import FILTER_PROMPT, RELATE_PROMPT, SEARCH_PROMPT
from atomgraph.prompts.atomr.plan import PLAN_PROMPT
from atomgraph.prompts.atomr.reasoning import CHILD_REASONING_PROMPT, DIRECT_RAG_PROMPT, SIBLING_REASONING_PROMPT
from atomgraph.prompts.atomr.source_selection import SOURCE_SELECTION_PROMPT
from atomgraph.prompts.stage import Stage, text_parser


# --- plan ----------------------------------------------------------------------------------
class PlanNode(BaseModel):
    question: str = Field(description="The question, numbered like '2. Who directed [1]?' except the root.")
    children: list[str] = Field(default_factory=list, description="Numbered child questions, if decomposed.")
    operator: str | None = Field(None, description="One atomic call: Search(...), Relate(...) or Filter(...), or [DR].")


class PlanSchema(BaseModel):
    """The Atomic Reasoning Tree as a list of nodes (root first)."""

    nodes: list[PlanNode]


def plan_from_structured(plan: PlanSchema) -> str:
    """The structured plan as the planner's flat JSON (what the tree parser reads)."""
    flat: dict[str, object] = {}
    for n in plan.nodes:
        flat[n.question] = n.children if n.children else (n.operator or "[DR]")
    if not flat:
        raise ParseError("the structured plan has no nodes")
    return json.dumps(flat, ensure_ascii=False)


def read_plan(text: str) -> str:
    """The planner's reply as text: the plan node parses and repairs the tree
    (``tree_parser.parse_tree``), recording every repair, so nothing is read twice here."""
    if not (text or "").strip():
        raise ParseError("the planner returned an empty reply")
    return text


# --- answers -------------------------------------------------------------------------------
class AnswerSchema(BaseModel):
    reasoning: str = Field(description="One to three short sentences citing what was used.")
    paraphrase: str = Field(description="A sentence restating the question with its answer, or 'Unknown'.")
    answers: list[str] = Field(description="Short clean answer strings; empty when unknown.")


def answer_from_structured(a: AnswerSchema) -> ParsedAnswer:
    items = [x.strip() for x in a.answers if x and x.strip()]
    unknown = not items or a.paraphrase.strip().lower() == "unknown"
    return ParsedAnswer(paraphrase=a.paraphrase.strip(), answers=items, unknown=unknown, raw=a.model_dump_json())


class SourceChoice(BaseModel):
    sources: list[str] = Field(description="Names of the sources to consult, spelled as listed.")


def _answer_stage(name: str, role: str, prompt, max_tokens: int) -> Stage[ParsedAnswer]:
    return Stage(name=name, role=role, prompt=prompt, parser=text_parser(parse_answer, "atomr_answer"),
                 schema=AnswerSchema, from_structured=answer_from_structured, max_tokens=max_tokens)


PLAN_STAGE: Stage[str] = Stage(
    name="plan", role="planner", prompt=PLAN_PROMPT, parser=text_parser(read_plan, "atomr_plan"),
    schema=PlanSchema, from_structured=plan_from_structured, max_tokens=1024,
)
SOURCE_SELECTION_STAGE: Stage[str] = Stage(
    name="source_selection", role="executor", prompt=SOURCE_SELECTION_PROMPT,
    parser=text_parser(lambda t: t, "atomr_sources"), schema=SourceChoice,
    from_structured=lambda c: ", ".join(c.sources), max_tokens=64,
)
SEARCH_STAGE = _answer_stage("search", "executor", SEARCH_PROMPT, 512)
RELATE_STAGE = _answer_stage("relate", "executor", RELATE_PROMPT, 512)
FILTER_STAGE = _answer_stage("filter", "executor", FILTER_PROMPT, 512)
CHILD_REASONING_STAGE = _answer_stage("child_reasoning", "answerer", CHILD_REASONING_PROMPT, 384)
SIBLING_REASONING_STAGE = _answer_stage("sibling_reasoning", "answerer", SIBLING_REASONING_PROMPT, 384)
DIRECT_RAG_STAGE = _answer_stage("direct_rag", "answerer", DIRECT_RAG_PROMPT, 512)

OPERATOR_STAGES = {"search": SEARCH_STAGE, "relate": RELATE_STAGE, "filter": FILTER_STAGE}

STAGES: dict[str, Stage] = {s.name: s for s in (
    PLAN_STAGE, SOURCE_SELECTION_STAGE, SEARCH_STAGE, RELATE_STAGE, FILTER_STAGE,
    CHILD_REASONING_STAGE, SIBLING_REASONING_STAGE, DIRECT_RAG_STAGE,
)}


def operator_stage(name: str) -> Stage[ParsedAnswer]:
    """The executor stage of atomic operator ``name`` (Search, Relate or Filter; any case)."""
    try:
        return OPERATOR_STAGES[str(name).strip().lower()]
    except KeyError:
        raise ValueError(f"unknown atomic operator {name!r}: expected Search, Relate or Filter") from None
