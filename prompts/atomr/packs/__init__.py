"""ATOMR prompt packs: the few-shot demonstrations and answer rules of every ATOMR stage,
one pack per dataset style, chosen with one run parameter (``prompt_pack``; ``eval run`` on a
dataset picks that dataset's pack, see ``evaluation/datasets.py``).

The authors run ATOMR with dataset-specific prompts (12-22 planner demonstrations and 2-8 per
stage for HotpotQA, 2WikiMultiHopQA, MuSiQue, CRAG, BlendQA) and dataset rules for the answers
(full names, numerals, yes/no). Ours follow the same decomposition patterns (Search then Relate,
Filter over candidates, ``[DR]`` comparisons and intersections) and, per stage, the authors' count
for the dataset; they are written in our own words on questions of the train/dev files in
``../shared/data`` (``hotpotqa_dev_100``, ``2wiki_dev_100``, ``musique_dev_100``, HippoRAG's
HotpotQA train, ``CRAG_dev_100``), never on test questions. A dataset pack's stage demonstration
is a :class:`~atomgraph.prompts.atomr.packs.common.Demo` naming the file and id of its question.
BlendQA has no train/dev split: its pack is written on a declared subset of 21 BlendQA questions,
which every BlendQA evaluation, of any method, leaves out (``DatasetSetting.demonstrations_in_split``).

| pack | plan | search | relate | filter | child / sibling reasoning | direct RAG | closed book | answer rules |
|---|---|---|---|---|---|---|---|---|
| ``general`` | 4 (one per shape, from the dev files) | 4 | 4 | 4 | 4 / 4 | 4 | 4 | the common rules only |
| ``hotpotqa`` | 14 (bridge, comparison, Filter, intersection) | 4 | 7 | 3 | 6 / 6 | 5 | 4 | short spans, yes/no |
| ``2wiki`` | 13 (compositional, comparison, inference, bridge comparison) | 4 | 4 | 3 | 5 / 5 | 4 | 5 | full names, dates as written |
| ``musique`` | 12 (2-4 hop chains) | 5 | 7 | 3 | 3 / 3 | 5 | 4 | short spans |
| ``crag`` | 22 (one call, chains, comparisons, Filter) | 4 | 7 | 2 | 5 / 3 | 8 | 4 | figures with units, as of a time |
| ``blendqa`` | 21 (bridging questions: KG-Web, KG-Text, Web-Text) | 5 | 8 | 2 | 4 / 2 | 7 | 3 | bridge first; short phrases |

Each stage renders its pack (:func:`render_for`): the prompt templates carry ``{examples}``
and ``{rules}``, filled from the pack named by the ``pack`` input (default ``general``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from atomgraph.prompts.atomr.packs import blendqa, crag, general, hotpotqa, musique, twowiki
from atomgraph.prompts.atomr.packs.common import EXAMPLES, Demo
from atomgraph.prompts.atomr.packs.general import GENERAL_PLAN
from atomgraph.prompts.atomr.packs.hotpotqa import HOTPOTQA_PLAN
from atomgraph.prompts.atomr.packs.musique import MUSIQUE_PLAN
from atomgraph.prompts.atomr.packs.twowiki import TWOWIKI_PLAN
from atomgraph.prompts.atomr.templating import UNKNOWN_RULE


@dataclass(frozen=True)
class PromptPack:
    """The demonstrations and answer rules of one dataset style."""

    name: str
    plan_examples: list[tuple[str, dict[str, object]]]
    rules: str = ""
    # each stage's demonstrations: plain text (the general pack's) or :class:`Demo` with its source
    examples: dict[str, list[str | Demo]] = field(default_factory=lambda: EXAMPLES)
    # Whether direct RAG may answer Unknown, as the authors' prompt for the dataset does (their
    # HotpotQA and 2Wiki direct-RAG prompts offer no Unknown; MuSiQue, CRAG and BlendQA do). The
    # closed-book answer never offers it (none of theirs does); Relate and child/sibling reasoning
    # always do, Search and Filter never (the authors' operator prompts).
    direct_rag_unknown: bool = True

    def plan_text(self) -> str:
        return "\n\n".join(
            f"Question: {q}\nDecomposition Tree: {json.dumps(tree, ensure_ascii=False)}" for q, tree in self.plan_examples
        )

    def examples_text(self, stage: str) -> str:
        return "\n\n".join(f"Example {i}.\n{getattr(ex, 'text', ex)}" for i, ex in enumerate(self.examples.get(stage, []), 1))

    def rules_text(self) -> str:
        return f"\n{self.rules}" if self.rules else ""

    def unknown_rule(self, stage: str) -> str:
        """The Unknown option for ``stage``'s instructions ("" where the authors offer none)."""
        return f" {UNKNOWN_RULE}" if stage == "direct_rag" and self.direct_rag_unknown else ""


PACKS: dict[str, PromptPack] = {
    "general": PromptPack("general", GENERAL_PLAN, general.RULES),
    "hotpotqa": PromptPack("hotpotqa", HOTPOTQA_PLAN, hotpotqa.RULES, hotpotqa.EXAMPLES, direct_rag_unknown=False),
    "2wiki": PromptPack("2wiki", TWOWIKI_PLAN, twowiki.RULES, twowiki.EXAMPLES, direct_rag_unknown=False),
    "musique": PromptPack("musique", MUSIQUE_PLAN, musique.RULES, musique.EXAMPLES),
    "crag": PromptPack("crag", crag.CRAG_PLAN, crag.RULES, crag.EXAMPLES),
    "blendqa": PromptPack("blendqa", blendqa.BLENDQA_PLAN, blendqa.RULES, blendqa.EXAMPLES),
}
DEFAULT_PACK = "general"


def _norm_q(text: str) -> str:
    return " ".join("".join(c for c in str(text).lower() if c.isalnum() or c.isspace()).split())


def demonstration_questions(name: str | None) -> set[str]:
    """The questions pack ``name`` shows as demonstrations (planner questions and the questions
    of every stage's examples, and for a :class:`Demo` the dataset question it was written on),
    normalised (lower case, letters and digits): an evaluation split leaves these out (``eval run``
    says how many)."""
    pack = get_pack(name)
    out = {_norm_q(q) for q, _ in pack.plan_examples}
    for examples in pack.examples.values():
        for ex in examples:
            if isinstance(ex, Demo):
                out.add(_norm_q(ex.question))
            out |= {_norm_q(q.split(" (Filter condition:")[0]) for q in _questions_asked(ex)}
    return out


def _questions_asked(example: Demo | str) -> list[str]:
    """The questions a demonstration's text asks (its ``Question: `` lines)."""
    text = getattr(example, "text", example)
    return [ln[len("Question: "):] for ln in text.splitlines() if ln.startswith("Question: ")]


def is_demonstration(question: str, name: str | None) -> bool:
    return _norm_q(question) in demonstration_questions(name)


def get_pack(name: str | None) -> PromptPack:
    """The pack called ``name`` (None or "" is ``general``); ValueError naming the packs otherwise."""
    key = (name or DEFAULT_PACK).strip().lower()
    if key not in PACKS:
        raise ValueError(f"unknown prompt pack {name!r}; packs are {', '.join(PACKS)}")
    return PACKS[key]


_ANSWER_LIST = re.compile(r"Answer List:\s*(\[.*?\])\s*$", re.S)


def demonstration_answers(name: str | None, stage: str) -> tuple[tuple[str, str], ...]:
    """``(question, answer)`` for each answer of pack ``name``'s demonstrations of ``stage``: what
    a reply read the authors' way (``keep_raw_reply``) is held against, so that a demonstration's
    answer copied by the model is no answer (the answer contract's ``demonstration`` clause)."""
    out: list[tuple[str, str]] = []
    for ex in get_pack(name).examples.get(stage, []):
        question = next(iter(_questions_asked(ex)), "")
        m = _ANSWER_LIST.search(getattr(ex, "text", ex))
        try:
            items = json.loads(m.group(1)) if m else []
        except ValueError:
            items = []
        out += [(question, str(a)) for a in items if str(a).strip()]
    return tuple(out)


def render_for(stage: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A stage's renderer: its inputs plus the chosen pack's ``examples`` and ``rules``."""

    def render(inputs: dict[str, Any]) -> dict[str, Any]:
        pack = get_pack(inputs.get("pack"))
        text = pack.plan_text() if stage == "plan" else pack.examples_text(stage)
        return {**inputs, "examples": text, "rules": pack.rules_text(), "unknown_rule": pack.unknown_rule(stage)}

    return render
