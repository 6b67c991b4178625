"""ATOMR's prompt stages: each prompt with its parser, structured-output schema and
output-token cap (see :mod:`atomgraph.prompts.stage`).

| stage | role | replies with | value |
|---|---|---|---|
| ``plan`` | planner | the tree as flat JSON | a list of :class:`ReasoningTree` (each plan the reply holds, parsed and repaired) |
| ``source_selection`` | executor | source names on one line | the chosen names as keys |
| ``search`` / ``relate`` / ``filter`` | executor | ATOMR's answer format | :class:`ParsedAnswer` |
| ``child_reasoning`` / ``sibling_reasoning`` / ``direct_rag`` / ``closed_book`` | answerer | ATOMR's answer format | :class:`ParsedAnswer` |
| ``kg_program`` | executor | a JSON object (asked under ``kg_program.PROGRAM_CONSTRAINT``) | :class:`QueryProgram` |
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from atomgraph.errors import ParseError
from atomgraph.prompts.atomr.answer_format import ParsedAnswer, parse_answer
from atomgraph.prompts.atomr.operators import FILTER_PROMPT, RELATE_PROMPT, SEARCH_PROMPT
from atomgraph.prompts.atomr.kg_program import KG_PROGRAM_PROMPT, read_program
from atomgraph.prompts.atomr.packs import render_for
from atomgraph.tools.wikidata_source import QueryProgram
from atomgraph.prompts.atomr.plan import PLAN_PROMPT
from atomgraph.prompts.atomr.reasoning import (
    CHILD_REASONING_PROMPT, CLOSED_BOOK_PROMPT, DIRECT_RAG_PROMPT, SIBLING_REASONING_PROMPT,
)
from atomgraph.prompts.atomr.tree_parser import parse_tree, split_plans
from atomgraph.state.atomr import ReasoningTree, TreeParseError
from atomgraph.text import content_words
from atomgraph.prompts.atomr.source_selection import SOURCE_SELECTION_PROMPT, read_source_choice, source_key
from atomgraph.prompts.stage import Stage, text_parser


# --- plan ----------------------------------------------------------------------------------
class PlanNode(BaseModel):
    question: str = Field(description="The question, numbered like '2. Who directed [1]?' except the root.")
    children: list[str] = Field(default_factory=list, description="Numbered child questions, if decomposed.")
    operator: str | None = Field(None, description="One atomic call: Search(...), Relate(...) or Filter(...), or [DR].")


class PlanSchema(BaseModel):
    """The Atomic Reasoning Tree as a list of nodes (root first)."""

    nodes: list[PlanNode]


def plan_from_structured(plan: PlanSchema | dict) -> str:
    """The structured plan as the planner's flat JSON (what the tree parser reads): a
    :class:`PlanSchema`, or a dict of :func:`~atomgraph.prompts.atomr.plan.plan_schema`'s shape
    (``{"root": node, "nodes": [node, ...]}``, the root first)."""
    if isinstance(plan, dict):
        nodes = ([plan["root"]] if isinstance(plan.get("root"), dict) else []) + \
            [n for n in plan.get("nodes") or [] if isinstance(n, dict)]
        nodes = [PlanNode.model_validate(n) for n in nodes]
    else:
        nodes = list(plan.nodes)
    flat: dict[str, object] = {}
    for n in nodes:
        flat[n.question] = n.children if n.children else (n.operator or "[DR]")
    if not flat:
        raise ParseError("the structured plan has no nodes")
    return json.dumps(flat, ensure_ascii=False)


def _structured_plan_text(text: str) -> str:
    """``text`` itself, or, when it is one JSON object of :func:`plan_schema`'s shape (a reply
    made under that schema), the same plan as the planner's flat JSON."""
    stripped = (text or "").strip()
    if not (stripped.startswith("{") and '"nodes"' in stripped and '"root"' in stripped):
        return text
    try:
        obj = json.loads(stripped)
    except ValueError:
        return text
    if isinstance(obj, dict) and set(obj) == {"root", "nodes"} and isinstance(obj["root"], dict):
        try:
            return plan_from_structured(obj)
        except (ParseError, ValueError):
            return text
    return text


def plan_constraint(question: str, backend_kind: str):
    """The constraint that keeps a plan for ``question`` whole on a backend (:mod:`~atomgraph.
    prompts.constraints`): :func:`~atomgraph.prompts.atomr.plan.plan_grammar` where the backend
    takes GBNF grammars (the in-process model, vLLM, a llama.cpp server), the root-pinned
    :func:`~atomgraph.prompts.atomr.plan.plan_schema` on OpenAI, None elsewhere."""
    from atomgraph.prompts.atomr.plan import PLAN_CLOSE_RESERVE, plan_grammar, plan_schema
    from atomgraph.prompts.constraints import Grammar, JsonSchema

    if backend_kind in ("local", "vllm", "llamacpp"):
        return Grammar(plan_grammar(question), close_reserve=PLAN_CLOSE_RESERVE)
    if backend_kind == "openai":
        return JsonSchema(plan_schema(question), name="atomic_reasoning_tree")
    return None


def read_plan(text: str) -> ReasoningTree:
    """The planner's reply as a tree (``tree_parser.parse_tree``, every repair recorded on
    the tree). Raises ParseError when no tree can be read."""
    if not (text or "").strip():
        raise ParseError("the planner returned an empty reply")
    try:
        return parse_tree(text)
    except TreeParseError as exc:
        raise ParseError(f"the plan could not be parsed: {exc.reason}") from None


def read_plans(text: str) -> list[ReasoningTree]:
    """Every plan the planner's reply holds, as trees, in order (``tree_parser.split_plans``:
    a small model writes a copied demonstration's plan next to its own; the plan node keeps
    the one whose root is the question asked). A reply with one plan gives one tree, read
    exactly as :func:`read_plan` reads it. Raises ParseError when no plan can be read."""
    if not (text or "").strip():
        raise ParseError("the planner returned an empty reply")
    text = _structured_plan_text(text)
    trees, problems = [], []
    for part in split_plans(text):
        try:
            trees.append(parse_tree(part))
        except TreeParseError as exc:
            problems.append(exc.reason)
    if not trees:
        raise ParseError(f"the plan could not be parsed: {problems[0]}")
    return trees


# Root check: the planner's root must be the question asked. At least half of the
# question's content words must appear in the root (a planner that copied an example's
# question, or planned a different question, fails this). Of several plans in one reply, the
# one whose root shares the most passes; none passing is a parse failure.
ROOT_MATCH_THRESHOLD = 0.5


def root_overlap(root: str, question: str) -> float:
    """Share of the question's content words found in the planner's root question."""
    q = content_words(question)
    return len(q & content_words(root)) / len(q) if q else 1.0


def plan_reply_problem(text: str | None, question: str, pack: str | None = None) -> str | None:
    """Why a planner reply that gave no tree for ``question`` is no plan at all, in words
    (``stage.reply_problem`` against the plan prompt's instructions and the pack's
    demonstrations), e.g. ``the reply is no plan but instructions to the reader (injection)``;
    None when the reply shows no such sign."""
    from atomgraph.prompts.stage import reply_problem
    from atomgraph.prompts.atomr.packs import get_pack
    from atomgraph.prompts.atomr.plan import PLAN_SYSTEM

    try:
        demos = [q for q, _ in get_pack(pack).plan_examples]
    except ValueError:
        demos = []
    kind = reply_problem(text, question=question, instructions=[PLAN_SYSTEM], demonstrations=demos)
    if kind is None or kind == "empty":  # an empty reply's parse error says so already
        return None
    return f"the reply is no plan but {_NOT_A_PLAN[kind]} ({kind})"


_NOT_A_PLAN = {"echo": "an echo of the prompt (its instructions and demonstrations)",
               "injection": "instructions to the reader", "demonstration": "a copy of a demonstration, or one of its own",
               "template_token": "chat-template tokens"}


# --- answers -------------------------------------------------------------------------------
class AnswerSchema(BaseModel):
    reasoning: str = Field(description="One to three short sentences citing what was used.")
    paraphrase: str = Field(description="A sentence restating the question with its answer, or 'Unknown'.")
    answers: list[str] = Field(description="Short clean answer strings; empty when unknown.")


def answer_from_structured(a: AnswerSchema) -> ParsedAnswer:
    """The structured answer; every item held to the answer contract, as :func:`parse_answer` does."""
    from atomgraph.prompts.atomr.answer_format import read_items

    items = read_items(a.answers)
    unknown = not items or a.paraphrase.strip().lower() == "unknown"
    return ParsedAnswer(paraphrase=a.paraphrase.strip(), answers=items, unknown=unknown, raw=a.model_dump_json())


class SourceChoice(BaseModel):
    sources: list[str] = Field(description="Names of the sources to consult, spelled as listed.")


# Stop sequences: where a few-shot reply ends and an invented next demonstration would begin.
ANSWER_STOP = ("\nQuestion:", "\nRetrieved Knowledge:", "\nExample ", "\nChild questions and answers:",
               "\nReferenced questions and answers:")
PLAN_STOP = ("\nQuestion:",)
SOURCE_STOP = ("\nQ:",)


def _answer_stage(name: str, role: str, prompt, max_tokens: int, answers: bool = True) -> Stage[ParsedAnswer]:
    # ``answers``: held to the question too (check_answer_to) — not the operators: Search("Wild
    # Strawberries", "1957 film") rightly answers with the question's own words
    return Stage(name=name, role=role, prompt=prompt, parser=text_parser(parse_answer, "atomr_answer"),
                 schema=AnswerSchema, from_structured=answer_from_structured, max_tokens=max_tokens, answers=answers,
                 stop=ANSWER_STOP, render=render_for(name))


PLAN_STAGE: Stage[list[ReasoningTree]] = Stage(
    name="plan", role="planner", prompt=PLAN_PROMPT, parser=text_parser(read_plans, "atomr_plan"),
    schema=PlanSchema, from_structured=lambda p: read_plans(plan_from_structured(p)), max_tokens=1024,
    stop=PLAN_STOP, render=render_for("plan"),
)
SOURCE_SELECTION_STAGE: Stage[list[str]] = Stage(
    name="source_selection", role="executor", prompt=SOURCE_SELECTION_PROMPT,
    parser=text_parser(read_source_choice, "atomr_sources"), schema=SourceChoice,
    from_structured=lambda c: [source_key(s) for s in c.sources], max_tokens=64, stop=SOURCE_STOP,
)
SEARCH_STAGE = _answer_stage("search", "executor", SEARCH_PROMPT, 512, answers=False)
RELATE_STAGE = _answer_stage("relate", "executor", RELATE_PROMPT, 512, answers=False)
FILTER_STAGE = _answer_stage("filter", "executor", FILTER_PROMPT, 512, answers=False)
CHILD_REASONING_STAGE = _answer_stage("child_reasoning", "answerer", CHILD_REASONING_PROMPT, 384)
SIBLING_REASONING_STAGE = _answer_stage("sibling_reasoning", "answerer", SIBLING_REASONING_PROMPT, 384)
DIRECT_RAG_STAGE = _answer_stage("direct_rag", "answerer", DIRECT_RAG_PROMPT, 512)
CLOSED_BOOK_STAGE = _answer_stage("closed_book", "answerer", CLOSED_BOOK_PROMPT, 384)

KG_PROGRAM_STAGE = Stage(
    name="kg_program", role="executor", prompt=KG_PROGRAM_PROMPT, parser=text_parser(read_program, "atomr_kg_program"),
    schema=QueryProgram, max_tokens=128, stop=("\nQuestion:",),
)

OPERATOR_STAGES = {"search": SEARCH_STAGE, "relate": RELATE_STAGE, "filter": FILTER_STAGE}

STAGES: dict[str, Stage] = {s.name: s for s in (
    PLAN_STAGE, SOURCE_SELECTION_STAGE, SEARCH_STAGE, RELATE_STAGE, FILTER_STAGE,
    CHILD_REASONING_STAGE, SIBLING_REASONING_STAGE, DIRECT_RAG_STAGE, CLOSED_BOOK_STAGE, KG_PROGRAM_STAGE,
)}


def operator_stage(name: str) -> Stage[ParsedAnswer]:
    """The executor stage of atomic operator ``name`` (Search, Relate or Filter; any case)."""
    try:
        return OPERATOR_STAGES[str(name).strip().lower()]
    except KeyError:
        raise ValueError(f"unknown atomic operator {name!r}: expected Search, Relate or Filter") from None
