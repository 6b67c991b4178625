"""KAR³'s prompt stages (see :mod:`atomgraph.prompts.stage`).

| stage | role | replies with | value |
|---|---|---|---|
| ``atomize`` | atomizer | one question per line | ``list[str]`` |
| ``propose`` | proposer | JSON ``{"thinking", "sub_questions"}`` (empty: enough) | :class:`Proposal` |
| ``select`` | selector | JSON ``{"thinking", "question_idx"}`` (0: none) | :class:`Selection` |
| ``answer`` | answerer | JSON ``{"rationale", "answer"}`` | ``str`` |
"""

from atomgraph.prompts.kar3.answer import ANSWER_STAGE, read_answer
from atomgraph.prompts.kar3.atomize import ATOMIZE_STAGE, read_atomic_questions
from atomgraph.prompts.kar3.propose import PROPOSE_STAGE, Proposal, read_proposal
from atomgraph.prompts.kar3.select import SELECT_STAGE, Selection, read_selection

STAGES = {s.name: s for s in (ATOMIZE_STAGE, PROPOSE_STAGE, SELECT_STAGE, ANSWER_STAGE)}

__all__ = ["ANSWER_STAGE", "ATOMIZE_STAGE", "PROPOSE_STAGE", "SELECT_STAGE", "STAGES", "Proposal", "Selection",
           "read_answer", "read_atomic_questions", "read_proposal", "read_selection"]
