"""Builders for the per-stage demonstrations of the crag and blendqa packs.

Each builder returns a :class:`~atomgraph.prompts.atomr.packs.common.Demo`: the example as ATOMR's
stage shows it (``Retrieved Knowledge:`` blocks as
:func:`atomgraph.prompts.atomr.stages.format_knowledge` renders them, the question, the
reasoning and the answer line) and the dataset question it was written on (file, id, question).
The planner demonstrations' sources are recorded beside them (``PLAN_SOURCES`` of each pack:
question -> (file, id)). Evaluation leaves every such question out of the split evaluated
(``eval run`` says how many); ``tests/test_demonstration_sources.py`` checks each source against
the data files."""

from __future__ import annotations

import json
from typing import Sequence

from atomgraph.prompts.atomr.packs.common import Demo

CRAG_DEV = "atomr/questions/multi_source/CRAG/CRAG_dev_100.jsonl"
BLENDQA_FILES = {
    "kg-web_132": "atomr/questions/multi_source/BlendQA/kg-web_132.jsonl",
    "text-kg_163": "atomr/questions/multi_source/BlendQA/text-kg_163.jsonl",
    "web-text_150": "atomr/questions/multi_source/BlendQA/web-text_150.jsonl",
}
Source = tuple[str, str, str]  # (file relative to ../shared/data, question id, the question)

_HEADINGS = {"wikipedia": "Wikipedia Passages", "google": "Google Results", "wikidata": "Wikidata Facts"}


def blendqa_file(example_id: str) -> str:
    """The BlendQA file of an example id (``kg-web_132-5``: ``.../kg-web_132.jsonl``)."""
    return BLENDQA_FILES[example_id.rsplit("-", 1)[0]]


def knowledge(**blocks: Sequence[tuple[str, str]]) -> str:
    """Retrieved-knowledge blocks: ``wikipedia=[(title, text)]``, ``google=[...]``,
    ``wikidata=[(entity, "property: value")]``; none given reads as nothing retrieved."""
    parts = []
    for source, items in blocks.items():
        lines = [f"{_HEADINGS[source]}:"] + [f"[{i}] {title} | {text}" for i, (title, text) in enumerate(items, 1)]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) if parts else "(no knowledge retrieved)"


def _answer(reasoning: str, paraphrase: str, answers: list[str]) -> str:
    return (f"Answer: {reasoning} So the answer is: (1) Paraphrase Answer: {paraphrase}; "
            f"(2) Answer List: {json.dumps(answers, ensure_ascii=False)}")


def retrieved(source: Source, known: str, question: str, reasoning: str, paraphrase: str,
              answers: list[str], *, condition: str | None = None) -> Demo:
    """An operator or direct-RAG example: retrieved knowledge, (the Filter condition), the question, the answer."""
    cond = f"Condition: {condition}\n" if condition else ""
    text = f"Retrieved Knowledge:\n{known}\n\n{cond}Question: {question}\n{_answer(reasoning, paraphrase, answers)}"
    return Demo(text, *source)


def from_pairs(source: Source, heading: str, pairs: Sequence[str], question: str, reasoning: str,
               paraphrase: str, answers: list[str]) -> Demo:
    """A child or sibling reasoning example: the answered questions (``Q: 1. ... A: ...`` lines) and the question."""
    text = f"{heading}:\n" + "\n".join(pairs) + f"\n\nQuestion: {question}\n{_answer(reasoning, paraphrase, answers)}"
    return Demo(text, *source)


def closed(source: Source, question: str, reasoning: str, paraphrase: str, answers: list[str]) -> Demo:
    """A closed-book example: the question and the answer from the model's own knowledge."""
    return Demo(f"Question: {question}\n{_answer(reasoning, paraphrase, answers)}", *source)


CHILD = "Child questions and answers"
SIBLING = "Referenced questions and answers"
