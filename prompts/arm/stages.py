"""ARM's prompt stages (§3.2–3.3 of the ARM paper), by stage of the paper; each module holds
its prompts with their parsers, output caps, renderers and constraint schemas side by side.

Stage names carry the ``arm_`` prefix (``arm_decompose``, ...): tags, scripted models and
``stage_max_tokens`` address them by it.

| module | stages |
|---|---|
| :mod:`~atomgraph.prompts.arm.alignment` (§3.2.1) | ``arm_decompose`` (keywords), ``arm_decompose_list`` (keywords as n-grams, a switch), ``arm_align`` (one n-gram of a shortlist), ``arm_align_list`` (a list of corpus n-grams) |
| :mod:`~atomgraph.prompts.arm.verification` (§3.2.2, §3.3) | ``arm_draft`` (changes to a solver draft; extension), ``arm_verify`` (the draft objects that answer) |
| :mod:`~atomgraph.prompts.arm.answer` | ``arm_answer`` |

Every parser reads JSON when it finds it and plain lines otherwise, and raises
:class:`~atomgraph.errors.ParseError` on text it cannot read.
"""

from __future__ import annotations

from atomgraph.prompts.arm.alignment import (
    ALIGN, ALIGN_LIST, DECOMPOSE, DECOMPOSE_LIST, ngram_list_grammar, parse_keywords, parse_ngram, parse_ngram_list, shortlist_choice,
)
from atomgraph.prompts.arm.answer import ANSWER
from atomgraph.prompts.arm.verification import (
    DRAFT, VERIFY, changes_schema, parse_changes, parse_selection, selection_schema,
)
from atomgraph.prompts.stage import Stage

STAGES: dict[str, Stage] = {s.name: s for s in (DECOMPOSE, DECOMPOSE_LIST, ALIGN, ALIGN_LIST, DRAFT, VERIFY, ANSWER)}

__all__ = ["ALIGN", "ALIGN_LIST", "ANSWER", "DECOMPOSE", "DECOMPOSE_LIST", "DRAFT", "STAGES", "VERIFY", "changes_schema",
           "ngram_list_grammar", "parse_changes", "parse_keywords", "parse_ngram", "parse_ngram_list",
           "parse_selection", "selection_schema", "shortlist_choice"]
