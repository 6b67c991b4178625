"""The ``arm`` graph's run parameters and state.

:class:`ArmGraphContext` is :class:`~atomgraph.state.arm.ArmContext` (retrieval, alignment,
MIP, drafts and voting parameters) plus what only the graph needs: where the objects are,
where their index is cached, whether to ask for token log-probabilities, and whether to
write an answer (off for retrieval-only runs). It is the ``[arm]`` settings section
(``ATOMGRAPH_ARM__OBJECTS=objects.jsonl``) and the graph's LangGraph ``context_schema``.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from atomgraph.state.arm import ArmContext
from atomgraph.state.output import MethodInput, MethodOutput


@dataclass(kw_only=True)
class ArmGraphContext(ArmContext):
    """Parameters of one run of the ``arm`` graph (ArmContext's, and the ones below)."""

    objects: Annotated[
        str | None,
        Field(description="the data collection: an objects.jsonl file, or a folder holding objects.jsonl"),
    ] = None
    index_cache: Annotated[
        str | None,
        Field(description="folder caching the object index (default: $ATOMGRAPH_ARM_CACHE or ~/.cache/atomgraph/arm-index)"),
    ] = None
    logprobs: Annotated[
        bool, Field(description="ask the server for token log-probabilities to weight verification votes"),
    ] = True
    answer: Annotated[bool, Field(description="write an answer from the retrieved objects (off: retrieval only)")] = True
    fill_to_k: Annotated[
        bool, Field(description="extension: top the voted objects up to k with the best draft objects (retrieval at exactly k)"),
    ] = False
    max_draft_changes: Annotated[
        int, Field(description="extension: objects the decoder may add to or drop from one MIP draft (0 = no such stage)", ge=0),
    ] = 0


class ArmInput(MethodInput, total=False):
    """A question, optionally with replayed keywords (information alignment without a model)."""

    keywords: list[str]


class ArmState(ArmInput, MethodOutput, total=False):
    keyword_source: str  # "model" | "replayed" | "question_ngrams" (model output unreadable)
    decoding: dict  # {"mode", "why"}: how alignment was constrained
    alignment: list[dict]  # per keyword {"keyword", "ngrams", "scores", "mode"}: every n-gram a corpus n-gram
    aligned: list[dict]  # the same, one entry per n-gram: {"keyword", "ngram", "score", "path", "mode"}
    candidates: list[dict]  # the base pool: {"id", "via", "bm25", "dense", "relevance"}
    drafts: list[dict]  # MIP drafts: {"ids", "links", "mip", "pool"}, then the decoder's changes
    verdicts: list[dict]  # per draft: {"draft", "selected", "weights", "problem"}
    votes: list[dict]  # per object: {"id", "votes", "weight", "confidence"}
    problems: Annotated[list[str], operator.add]  # what went wrong, stage by stage (never raised)
