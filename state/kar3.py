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

from atomgraph.state.run import CallRecords, MethodInput, MethodOutput


DeltaMetric = Literal["pike_l2", "cosine"]


@dataclass(kw_only=True)
class Kar3Context:
    """KAR³'s QA run parameters (settings section ``[kar3]``; the ``kar3`` graph's context
    schema). Defaults are the paper's (§4.1, appendix A.3) and its authors' code
    (microsoft/PIKE-RAG, ``examples/*/configs/atomic_decompose.yml``); each field marked
    *switch* restores a behaviour of ours (docs: KAR³ deviations)."""

    max_chunks: Annotated[int, Field(ge=1, description="N: rounds of propose → retrieve → select, so at most N chunks reach the answer (paper: 5).")] = 5
    atom_top_k: Annotated[int, Field(ge=1, description="Atomic questions retrieved per proposal when there are several proposals (paper: k = 4; authors' atom_retrieve_k).")] = 4
    single_query_top_k: Annotated[int, Field(ge=1, description="Atomic questions retrieved for a single query: one proposal, or the question in the first backup (authors' retrieve_k = 8).")] = 8
    delta: Annotated[float, Field(ge=-1, le=1, description="δ: least relevance score of a hit, on delta_metric (paper: 0.5).")] = 0.5
    delta_metric: Annotated[DeltaMetric, Field(description="The score δ applies to: 'pike_l2' = the authors' 1 − ‖q − a‖²/√2 (Chroma l2 space, LangChain relevance; δ = 0.5 ⇔ cosine ≥ 0.646 on unit vectors); 'cosine' = cosine similarity (switch).")] = "pike_l2"
    chunk_top_k: Annotated[int, Field(ge=1, description="Chunks retrieved by the last backup (the question against chunks, gated by δ, each shown with its best-matching atom; authors: 8).")] = 8
    backups: Annotated[bool, Field(description="When the proposals retrieve nothing: the question against atoms, then chunk retrieval (the authors' order).")] = True
    collection: Annotated[str, Field(description="Chroma chunk collection (atoms in '<name>_atoms'); empty: the 'atoms' source given to the graph, else settings.chroma_collection.")] = ""
    # --- switches: ours, off by default ----------------------------------------------------
    max_proposals: Annotated[int | None, Field(ge=1, description="Switch: keep at most this many proposals per round (authors: no cap; empty = no cap).")] = None


@dataclass(kw_only=True)
class Kar3IndexContext:
    """KAR³'s indexing run parameters (settings section ``[kar3_index]``; the ``kar3_index``
    graph's context schema)."""

    atomizer_temperature: Annotated[float, Field(ge=0, le=2, description="Sampling temperature of the atomizer (paper: 0.7; every QA step runs at the settings' temperature).")] = 0.7
    atomizer_concurrency: Annotated[int, Field(ge=1, description="Chunks atomized at once.")] = 8
    write_batch: Annotated[int, Field(ge=1, description="Atomized chunks embedded and written together (a kill loses at most one batch of work).")] = 32
    split_chunks: Annotated[bool, Field(description="Switch: split passages longer than max_tokens before atomizing (authors: whole paragraphs).")] = False
    max_tokens: Annotated[int, Field(ge=16, description="With split_chunks: passages are split into chunks of at most this many tokens.")] = 256
    atom_question_filter: Annotated[bool, Field(description="Switch (ours; the authors keep every line of the atomizer's reply): keep only lines that end in '?', have 3..max_atom_words words and do not copy the chunk.")] = False
    max_atom_words: Annotated[int, Field(ge=3, description="With atom_question_filter: atomizer lines longer than this many words are rejected (not atomic questions).")] = 40
    format: Annotated[Literal["auto", "jsonl", "hipporag", "hotpot-bz2", "tsv"],
                      Field(description="Input format ('auto' reads it from the file).")] = "auto"
    encoding: Annotated[str, Field(description="Text encoding of the input files (read strictly).")] = "utf-8"
    limit: Annotated[int | None, Field(ge=0, description="Read at most this many records or chunks (empty: all).")] = None


Via = Literal["proposal", "question", "chunk"]


class AtomHit(BaseModel):
    """One retrieved atomic pair: the query, the atomic question it matched, its chunk."""

    query: str
    atom: str  # the atomic question ("" for a chunk without atoms)
    atom_id: str = ""
    chunk_id: str
    title: str = ""
    text: str = ""  # the chunk's text
    score: float  # the hit's score on the run's delta_metric (the best atom's, for a chunk-backup hit)
    via: Via = "proposal"  # proposals, backup 1 (the question against atoms), backup 2 (chunk retrieval)
    suspect_instruction: bool = False  # its atom or chunk addresses the model (atomgraph.injection)


class Round(BaseModel):
    """One round of the loop, as the trace shows it."""

    number: int
    proposals: list[str] = Field(default_factory=list)
    enough: bool = False  # the proposer gave an empty list of sub-questions
    proposer_unreadable: bool = False  # the proposer's reply could not be read
    proposer_thinking: str = ""
    tiers: list[dict] = Field(default_factory=list)  # [{"via", "queries", "hits"}] in the order tried
    hits: list[AtomHit] = Field(default_factory=list)  # the candidates the selector was offered
    paragraphs_offered: bool = False  # no readable pick among the atoms: the same candidates shown as paragraphs
    choice: AtomHit | None = None
    selector_thinking: str = ""
    ended: str | None = None  # why the loop ended in this round
    notes: list[str] = Field(default_factory=list)  # recovered problems, in order


ExitReason = Literal["max_chunks", "enough", "proposer_unreadable", "nothing_retrieved", "selector_none", "no_index",
                     "invalid_question"]

# Each exit's text and the decision itself: nodes/kar3/loop.py (EXIT_TEXT, loop_exit).


class Kar3State(MethodInput, MethodOutput, total=False):
    rounds: list[Round]
    chosen: list[AtomHit]  # the chunks chosen so far (with the atom that led to each)
    asked: dict[str, list[AtomHit]]  # the backups' hits ("question", "chunk"), searched once a question
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
