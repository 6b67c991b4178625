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

A pack is data only. Each stage renders its pack (``stages.render_for``): the prompt templates
carry ``{examples}`` and ``{rules}``, filled from the pack named by the ``pack`` input (default
``general``); ``stages.get_pack`` looks a pack up by name, ``stages.demonstration_questions`` and
``stages.demonstration_answers`` list what a pack shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from atomgraph.prompts.atomr.packs import blendqa, crag, general, hotpotqa, musique, twowiki
from atomgraph.prompts.atomr.packs.common import EXAMPLES, Demo
from atomgraph.prompts.atomr.packs.general import GENERAL_PLAN
from atomgraph.prompts.atomr.packs.hotpotqa import HOTPOTQA_PLAN
from atomgraph.prompts.atomr.packs.musique import MUSIQUE_PLAN
from atomgraph.prompts.atomr.packs.twowiki import TWOWIKI_PLAN


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


PACKS: dict[str, PromptPack] = {
    "general": PromptPack("general", GENERAL_PLAN, general.RULES),
    "hotpotqa": PromptPack("hotpotqa", HOTPOTQA_PLAN, hotpotqa.RULES, hotpotqa.EXAMPLES, direct_rag_unknown=False),
    "2wiki": PromptPack("2wiki", TWOWIKI_PLAN, twowiki.RULES, twowiki.EXAMPLES, direct_rag_unknown=False),
    "musique": PromptPack("musique", MUSIQUE_PLAN, musique.RULES, musique.EXAMPLES),
    "crag": PromptPack("crag", crag.CRAG_PLAN, crag.RULES, crag.EXAMPLES),
    "blendqa": PromptPack("blendqa", blendqa.BLENDQA_PLAN, blendqa.RULES, blendqa.EXAMPLES),
}
DEFAULT_PACK = "general"
