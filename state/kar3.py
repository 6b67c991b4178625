"""KAR³ (PIKE-RAG): run parameters, the QA graph's state and the indexing graph's state.

One round of the QA loop is a :class:`Round`: what the proposer asked, what each retrieval
tier found (proposals against atoms, then the backups), what the selector chose and why
the loop ended there, if it did. The graph's trace is the list of rounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from atomgraph.state.output import MethodInput, MethodOutput
from atomgraph.state.usage import CallRecords


@dataclass(kw_only=True)
class Kar3Context:
    """KAR³'s run parameters (settings section ``[kar3]``; the context schema of ``kar3`` and
    ``kar3_index``). Defaults are the paper's (§4.1, appendix A.3)."""

    max_chunks: Annotated[int, Field(ge=1, description="N: rounds of propose → retrieve → select, so at most N chunks reach the answer (paper: 5).")] = 5
    atom_top_k: Annotated[int, Field(ge=1, description="Atomic questions retrieved per proposal (paper: k = 4).")] = 4
    delta: Annotated[float, Field(ge=-1, le=1, description="δ: least cosine similarity between a proposal and an atomic question (paper: 0.5).")] = 0.5
    chunk_top_k: Annotated[int, Field(ge=1, description="Chunks retrieved by the last backup (the question against chunks, each scored by its best-matching atom).")] = 4
    max_proposals: Annotated[int, Field(ge=1, description="Proposals kept per round (the rest are dropped, noted in the trace).")] = 8
    backups: Annotated[bool, Field(description="When the proposals retrieve nothing: the question against atoms, then chunk retrieval (the reference code's order).")] = True
    collection: Annotated[str, Field(description="Chroma chunk collection (atoms in '<name>_atoms'); empty: the 'atoms' source given to the graph, else settings.chroma_collection.")] = ""
    atomizer_temperature: Annotated[float, Field(ge=0, le=2, description="Sampling temperature of the atomizer (paper: 0.7; every QA step runs at the settings' temperature).")] = 0.7
    atomizer_concurrency: Annotated[int, Field(ge=1, description="Chunks atomized at once while indexing.")] = 8
    write_batch: Annotated[int, Field(ge=1, description="Atomized chunks embedded and written together (a kill loses at most one batch of work).")] = 32
    max_tokens: Annotated[int, Field(ge=16, description="Indexing a corpus: longer passages are split into chunks of at most this many tokens.")] = 256
    format: Annotated[Literal["auto", "jsonl", "hipporag", "hotpot-bz2", "tsv"],
                      Field(description="Indexing a corpus: input format ('auto' reads it from the file).")] = "auto"
    limit: Annotated[int | None, Field(ge=0, description="Indexing: read at most this many records or chunks (empty: all).")] = None


Via = Literal["proposal", "question", "chunk"]


class AtomHit(BaseModel):
    """One retrieved atomic pair: the query, the atomic question it matched, its chunk."""

    query: str
    atom: str  # the atomic question ("" for a chunk without atoms)
    atom_id: str = ""
    chunk_id: str
    title: str = ""
    text: str = ""  # the chunk's text
    score: float  # cosine similarity of query and atom (of query and chunk when it has no atoms)
    via: Via = "proposal"  # proposals, backup 1 (the question against atoms), backup 2 (chunk retrieval)


class Round(BaseModel):
    """One round of the loop, as the trace shows it."""

    number: int
    proposals: list[str] = Field(default_factory=list)
    enough: bool = False  # the proposer said nothing more is needed
    proposer_thinking: str = ""
    tiers: list[dict] = Field(default_factory=list)  # [{"via", "queries", "hits"}] in the order tried
    hits: list[AtomHit] = Field(default_factory=list)  # what the selector was offered (first list)
    chunk_hits: list[AtomHit] = Field(default_factory=list)  # chunk-level hits offered after a rejection
    choice: AtomHit | None = None
    selector_thinking: str = ""
    ended: str | None = None  # why the loop ended in this round
    notes: list[str] = Field(default_factory=list)  # recovered problems, in order


ExitReason = Literal["max_chunks", "enough", "nothing_retrieved", "selector_none", "no_index", "invalid_question"]

EXIT_TEXT: dict[str, str] = {
    "max_chunks": "N chunks chosen",
    "enough": "the proposer said the chosen chunks are enough",
    "nothing_retrieved": "nothing retrieved (proposals, then the backups)",
    "selector_none": "the selector chose none of the hits",
    "no_index": "no atom index to retrieve from",
    "invalid_question": "the question cannot be asked",
}


class Kar3State(MethodInput, MethodOutput, total=False):
    rounds: list[Round]
    chosen: list[AtomHit]  # the chunks chosen so far (with the atom that led to each)
    exit: ExitReason | None


# --- the indexing graph ---------------------------------------------------------------------

class Kar3IndexInput(TypedDict, total=False):
    inputs: list[str]  # corpus files (same formats as `atomgraph index wikipedia`)
    from_collection: str  # or: an existing passages collection to atomize
    collection: str  # the chunk collection written (atoms in '<name>_atoms'); default: from_collection, else settings


class Kar3IndexOutput(TypedDict, total=False):
    stats: dict  # chunks read / atomized / skipped / failed, atoms written, LLM calls, tokens, cost, seconds
    llm_calls: CallRecords
    error: str | None


class Kar3IndexState(Kar3IndexInput, Kar3IndexOutput, total=False):
    chunks: list[dict]  # {"id", "title", "text", "embedding"?} still to atomize
    skipped: int  # already atomized before this run
    read: int
