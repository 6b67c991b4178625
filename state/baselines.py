"""Run parameters and state of the simple baselines (closed-book standard prompting,
chain-of-thought, standard RAG)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from atomgraph.state.run import Evidence, MethodInput, MethodOutput


@dataclass(kw_only=True)
class ClosedBookContext:
    """Closed-book prompting (settings sections ``[standard]`` and ``[cot]``)."""

    demonstrations: Annotated[int, Field(ge=0, le=2, description="Worked examples shown before the question (0-2).")] = 2


@dataclass(kw_only=True)
class RagContext:
    """Standard RAG (settings section ``[rag]``)."""

    top_k: Annotated[int, Field(ge=1, description="Passages retrieved from each knowledge source for the question.")] = 3
    demonstrations: Annotated[int, Field(ge=0, le=2, description="Answer-format examples shown before the passages (0-2).")] = 2


class BaselineState(MethodInput, MethodOutput, total=False):
    evidence: list[Evidence]
