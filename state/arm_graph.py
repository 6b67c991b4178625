"""The ``arm`` graph's state and the typed values its stages pass on (its run parameters are
:class:`~atomgraph.state.arm.ArmContext`).

The values between stages are TypedDicts — plain JSON as the graph returns them and as a
checkpointer stores them: :class:`Aligned` and :class:`KeywordAlignment` (§3.2.1),
:class:`Candidate` (the base search objects), :class:`Draft` (§3.2.2, from
:func:`atomgraph.nodes.arm.structure_alignment.solve_drafts`), :class:`Verdict` and :class:`Vote` (§3.3,
:func:`atomgraph.nodes.arm.self_verification.aggregate_votes`), :class:`Decoding` (how the model was constrained).
"""

from __future__ import annotations

import operator
from typing import Annotated

from typing_extensions import NotRequired, TypedDict

from atomgraph.state.run import MethodInput, MethodOutput


# --- the values between stages ------------------------------------------------------------------

class Aligned(TypedDict):
    """One keyword aligned to one corpus n-gram (``path``: constrained, snapped, beam, grammar, fallback, …)."""

    keyword: str
    ngram: str
    score: float | None
    path: str
    mode: str


class KeywordAlignment(TypedDict):
    """A keyword's list of corpus n-grams (§3.2.1's decoded list), the record every run keeps."""

    keyword: str
    ngrams: list[str]
    scores: list[float | None]
    mode: str


class Decoding(TypedDict, total=False):
    """How the decoder was constrained: the alignment ``mode`` and why, the backend, the vote's mode."""

    mode: str
    why: str
    backend: str
    vote: str
    grammar: dict  # ngram_grammar: the grammar form sent ("corpus" or "candidates") and its size


class Candidate(TypedDict):
    """A base search object and how it was found (``via``: ``keyword i``, ``bm25``, ``dense``)."""

    id: str
    via: str
    bm25: float
    dense: float
    relevance: float
    suspect_instruction: NotRequired[bool]  # the object addresses the model (atomgraph.injection)


class Link(TypedDict):
    """A connection the MIP chose between two draft objects, with its compatibility."""

    a: str
    b: str
    c: float


class Draft(TypedDict):
    """One alignment draft (§3.2.2): the MIP's objects over one expanded set of search objects."""

    draft: int
    steps: int  # expansion steps of the base set
    pool: list[str]  # the draft's search objects
    ids: list[str]  # the draft's objects (the MIP's choice, best R_i first)
    links: list[Link]
    relevance: dict[str, float]  # R_i of each search object
    mip: dict  # the solver's report


class _VerdictReading(TypedDict, total=False):
    ignored: list[str]  # names in the reply that are no object of the draft
    unconnected: list[str]  # connected_selection: selected objects cut, joined to the kept part by no draft link
    reasoning: str


class Verdict(_VerdictReading):
    """The decoder's verification of one draft (§3.3): the objects it kept (None: unreadable
    or failed, left out of the vote), each one's mean token log-probability where returned."""

    draft: int
    selected: list[str] | None
    weights: dict[str, float]
    problem: str | None


class Vote(TypedDict):
    """One object's share of the aggregated vote (§3.3)."""

    id: str
    votes: int  # occurrences across the drafts
    selected: int  # verdicts that kept it (0: a draft object no verifier selected)
    weight: float  # mean weight of its selections (exp of the names' mean token log-probability; 1 without; 0 if none)
    share: float  # softmax of the vote counts
    confidence: float


class ArmInput(MethodInput, total=False):
    """A question, optionally with replayed keywords (information alignment without a model)."""

    keywords: list[str]


class ArmState(ArmInput, MethodOutput, total=False):
    keyword_source: str  # "model" | "model_ngrams" (decompose_constraint="ngrams") | "replayed" | "question_ngrams" (model output unreadable)
    decoding: Decoding  # how alignment (and the later stages) were constrained
    alignment: list[KeywordAlignment]  # per keyword: every n-gram a corpus n-gram
    aligned: list[Aligned]  # the same, one entry per n-gram
    candidates: list[Candidate]  # the base search objects
    drafts: list[Draft]  # MIP drafts, then the decoder's changes
    verdicts: list[Verdict]  # one per draft
    votes: list[Vote]  # one per voted object, best first
    problems: Annotated[list[str], operator.add]  # what went wrong, stage by stage (never raised)
    added_keywords: list[str]  # add_question_keywords (switch): the question's own keywords added to the model's
