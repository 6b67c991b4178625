"""KAR³'s prompt stages (see :mod:`atomgraph.prompts.stage`). Each stage's module also holds
its ``render_*`` function (the node's inputs → the prompt's variables) and its reader.

| stage | role | replies with | value |
|---|---|---|---|
| ``atomize`` | atomizer | one question per line | ``list[str]`` (then :func:`filter_atoms`) |
| ``propose`` | proposer | JSON ``{"thinking", "sub_questions"}`` (an empty list: stop) | :class:`Proposal` |
| ``select`` | selector | JSON ``{"thinking", "question_idx"}`` (1..N) | :class:`Selection` |
| ``select_paragraph`` | selector | JSON ``{"thinking", "paragraph_idx"}`` (1..N) | :class:`Selection` |
| ``answer`` | answerer | JSON ``{"answer", "rationale"}`` | ``str`` |
"""

from atomgraph.prompts.kar3.answer import ANSWER_STAGE, SHORT_ANSWER_STAGE, read_answer, render_answer
from atomgraph.prompts.kar3.atomize import ATOMIZE_STAGE, filter_atoms, read_atomic_questions, render_atomize
from atomgraph.prompts.kar3.propose import PROPOSE_STAGE, Proposal, read_proposal, render_propose
from atomgraph.prompts.kar3.select import (
    SELECT_OR_REJECT_STAGE, SELECT_PARAGRAPH_STAGE, SELECT_STAGE, Selection, read_paragraph_selection, read_selection,
    render_select, render_select_paragraph,
)

STAGES = {s.name: s for s in (ATOMIZE_STAGE, PROPOSE_STAGE, SELECT_STAGE, SELECT_PARAGRAPH_STAGE, ANSWER_STAGE)}

__all__ = ["ANSWER_STAGE", "ATOMIZE_STAGE", "PROPOSE_STAGE", "SELECT_OR_REJECT_STAGE", "SELECT_PARAGRAPH_STAGE",
           "SELECT_STAGE", "SHORT_ANSWER_STAGE", "STAGES", "Proposal", "Selection", "filter_atoms", "read_answer",
           "read_atomic_questions", "read_paragraph_selection", "read_proposal", "read_selection", "render_answer",
           "render_atomize", "render_propose", "render_select", "render_select_paragraph"]
