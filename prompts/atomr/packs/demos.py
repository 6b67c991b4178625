"""A demonstration with its source, and builders for the per-stage demonstrations of a pack.

:class:`Demo` is the demonstration's text (a ``str``: packs and prompts use it as text) that also
names the dataset question it was written on: ``source_file`` (relative to ``../shared/data``) and
``source_id`` (the id ``evaluation.datasets`` gives that question). A planner demonstration's
question is a ``Demo``; so is each operator/reasoning example. Evaluation leaves every source
question of the pack in use out of the split evaluated (``eval run`` says how many), and
``tests/test_demonstration_sources.py`` checks each source against the data files.

The builders write an example in the shape ATOMR's stages show it (``Retrieved Knowledge:``
blocks as :func:`atomgraph.prompts.atomr.knowledge.format_knowledge` renders them, the question,
the reasoning, and the answer line)."""

from __future__ import annotations

import json
from typing import Sequence

CRAG_DEV = "atomr/questions/multi_source/CRAG/CRAG_dev_100.jsonl"
BLENDQA_FILES = {
    "kg-web_132": "atomr/questions/multi_source/BlendQA/kg-web_132.jsonl",
    "text-kg_163": "atomr/questions/multi_source/BlendQA/text-kg_163.jsonl",
    "web-text_150": "atomr/questions/multi_source/BlendQA/web-text_150.jsonl",
}

_HEADINGS = {"wikipedia": "Wikipedia Passages", "google": "Google Results", "wikidata": "Wikidata Facts"}


class Demo(str):
    """A demonstration's text that names its source question (``source_file``, ``source_id``)."""

    source_file: str
    source_id: str

    def __new__(cls, text: str, source_file: str, source_id: str) -> "Demo":
        obj = super().__new__(cls, text)
        obj.source_file = source_file
        obj.source_id = source_id
        return obj

    def __getnewargs__(self) -> tuple[str, str, str]:  # pickling keeps the source
        return str(self), self.source_file, self.source_id

    @property
    def source(self) -> str:
        """``file#id``, as the other recorded demonstration sources are written."""
        return f"{self.source_file}#{self.source_id}"


def blendqa_source(example_id: str) -> tuple[str, str]:
    """(file, id) of a BlendQA question from its example id (``kg-web_132-5``)."""
    stem = example_id.rsplit("-", 1)[0]
    return BLENDQA_FILES[stem], example_id


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


def retrieved(source: tuple[str, str], known: str, question: str, reasoning: str, paraphrase: str,
              answers: list[str], *, condition: str | None = None) -> Demo:
    """An operator or direct-RAG example: retrieved knowledge, (the Filter condition), the question, the answer."""
    cond = f"Condition: {condition}\n" if condition else ""
    text = f"Retrieved Knowledge:\n{known}\n\n{cond}Question: {question}\n{_answer(reasoning, paraphrase, answers)}"
    return Demo(text, *source)


def from_pairs(source: tuple[str, str], heading: str, pairs: Sequence[str], question: str, reasoning: str,
               paraphrase: str, answers: list[str]) -> Demo:
    """A child or sibling reasoning example: the answered questions (``Q: 1. ... A: ...`` lines) and the question."""
    text = f"{heading}:\n" + "\n".join(pairs) + f"\n\nQuestion: {question}\n{_answer(reasoning, paraphrase, answers)}"
    return Demo(text, *source)


def closed(source: tuple[str, str], question: str, reasoning: str, paraphrase: str, answers: list[str]) -> Demo:
    """A closed-book example: the question and the answer from the model's own knowledge."""
    return Demo(f"Question: {question}\n{_answer(reasoning, paraphrase, answers)}", *source)


CHILD = "Child questions and answers"
SIBLING = "Referenced questions and answers"
