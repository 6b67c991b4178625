"""Model and source factories for CLI tests (``--model-factory cli_factories:atomr_model``,
``--sources-factory cli_factories:sources``); put this folder on PYTHONPATH to use them.

A user's own factories look the same: functions of the settings returning a chat model
(or a role→model mapping) and a list of knowledge sources.
"""

from __future__ import annotations

from atomgraph.testing import answer_reply, atomr_scripted_model
from atomgraph.tools.memory_source import InMemorySource

QUESTION = "Which one was established first, Grouplogic or Inbios?"
TREE = {
    QUESTION: ["1. When was Grouplogic established?", "2. When was Inbios established?",
               "3. Given answers of [1] and [2], which one was established first?"],
    "1. When was Grouplogic established?": 'Relate("Grouplogic", "established date")',
    "2. When was Inbios established?": 'Relate("Inbios", "established date")',
    "3. Given answers of [1] and [2], which one was established first?": "[END]",
}
PASSAGES = [
    {"title": "Grouplogic", "text": "GroupLogic was a software company established in 1988."},
    {"title": "Inbios", "text": "InBios International is a biotech company founded in 1996."},
    {"title": "Slatan Dudow", "text": "Slatan Dudow was a Bulgarian film director born in 1903."},
]


def _answer(stage: str, text: str) -> str:
    question = text.rsplit("Question:", 1)[-1]  # the one this prompt asks
    if stage == "relate" and "Grouplogic" in question:
        return answer_reply("1988")
    if stage == "relate" and "Inbios" in question:
        return answer_reply("1996")
    return answer_reply("Grouplogic", paraphrase="Grouplogic was established first")


def atomr_model(settings):
    return atomr_scripted_model({QUESTION: TREE}, answer=_answer, sources_reply="Wikipedia")


def role_models(settings):
    m = atomr_model(settings)
    return {"planner": m, "executor": m, "answerer": m}


def sources(settings):
    return [InMemorySource(PASSAGES, name="wikipedia", description="Encyclopedia passages.")]
