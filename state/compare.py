"""Run parameters and states of the comparison methods the papers measure against:
Self-Ask with retrieval, IRCoT, ReAct, Iter-RetGen and decomposed RAG.

Each method has one context dataclass (its settings section, e.g. ``[ircot]``, and its
graph's LangGraph ``context_schema``) and one state TypedDict extending the output contract.
Every loop has a bound here; when it ends a run, the output's ``stopped`` says which.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from atomgraph.state.run import Evidence, MethodInput, MethodOutput

_TOP_K = "Passages retrieved from each knowledge source per query."


@dataclass(kw_only=True)
class SelfAskContext:
    """Self-Ask with retrieval (settings section ``[self_ask]``)."""

    max_follow_ups: Annotated[int, Field(ge=1, le=20, description="Follow-up questions asked at most; then the final answer is asked for with what was found.")] = 4
    top_k: Annotated[int, Field(ge=1, description=_TOP_K + " (one query per follow-up question)")] = 3


@dataclass(kw_only=True)
class IrcotContext:
    """IRCoT: interleaved chain-of-thought and retrieval (settings section ``[ircot]``)."""

    max_steps: Annotated[int, Field(ge=1, le=20, description="Reasoning sentences generated at most; each one not giving the answer becomes the next retrieval query.")] = 5
    top_k: Annotated[int, Field(ge=1, description=_TOP_K + " (the question first, then each reasoning sentence)")] = 3
    max_passages: Annotated[int, Field(ge=1, description="Most passages kept in the growing context (the earliest are kept).")] = 15


@dataclass(kw_only=True)
class ReactContext:
    """ReAct with the knowledge sources as tools (settings section ``[react]``)."""

    max_steps: Annotated[int, Field(ge=1, le=30, description="Model calls (reasoning steps) allowed per question; the agent is stopped at this bound.")] = 6
    top_k: Annotated[int, Field(ge=1, description=_TOP_K + " (per tool call)")] = 3
    search_first: Annotated[Literal["auto", "on", "off"], Field(description="Switch (ours; the paper's demonstrations open with a Search and its model is otherwise free): the agent's first model call must call a search tool (tool_choice 'any'); later calls choose freely. auto: on for in-process models, which otherwise answer without searching (docs/guides/local-models.md), off for served ones; on / off: everywhere.")] = "auto"


@dataclass(kw_only=True)
class IterRetGenContext:
    """Iter-RetGen: retrieval-generation rounds (settings section ``[iter_retgen]``)."""

    rounds: Annotated[int, Field(ge=1, le=10, description="Retrieval-generation rounds at most; round t retrieves with the question plus round t-1's generation.")] = 3
    top_k: Annotated[int, Field(ge=1, description=_TOP_K + " (per round)")] = 3
    stop_when_stable: Annotated[bool, Field(description="Switch (ours; the paper runs every round): end early when a round gives the same answer as the round before, and say so in `stopped` when the round limit ends a run whose answers still changed.")] = False


@dataclass(kw_only=True)
class DecomposedRagContext:
    """Decomposed RAG (settings section ``[decomposed_rag]``)."""

    max_sub_questions: Annotated[int, Field(ge=1, le=10, description="Sub-questions kept from the decomposition (the first ones); each is retrieved for separately.")] = 4
    top_k: Annotated[int, Field(ge=1, description=_TOP_K + " (per sub-question)")] = 3
    fallback_to_question: Annotated[bool, Field(description="When the decomposition is unreadable, retrieve for the question itself (off: the run ends with the error).")] = True


class LoopState(MethodInput, MethodOutput, total=False):
    """The state of the iterative methods: steps taken (the trace), evidence gathered."""

    steps: Annotated[list[dict], operator.add]  # one record per model step / retrieval, in order
    evidence: Annotated[list[Evidence], operator.add]  # everything retrieved, in order
    pending: str | None  # the next retrieval query (follow-up question, CoT sentence, ...)
    fresh: list[Evidence]  # what the latest retrieval returned
    generation: str  # the latest generation (Iter-RetGen, IRCoT's reasoning so far)
    done: bool  # the loop reached its own end (a final answer)


SelfAskState = LoopState
IrcotState = LoopState
IterRetGenState = LoopState


class ReactState(MethodInput, MethodOutput, total=False):
    pass


class DecomposedRagState(MethodInput, MethodOutput, total=False):
    sub_questions: list[str]
    steps: Annotated[list[dict], operator.add]
    evidence: Annotated[list[Evidence], operator.add]
    retrievals: Annotated[list[dict], operator.add]  # one per sub-question: index, query, evidence


class SubQuestionInput(MethodInput, total=False):
    """What one fan-out branch of decomposed RAG gets (a ``Send`` payload)."""

    index: int
    sub_question: str
