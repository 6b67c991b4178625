"""KAR³'s question path in one place, in the paper's order: the runtime its nodes share, the
loop's exits, then the nodes propose → retrieve → select → answer.

    START → propose → retrieve → select ─┐   (on while no exit is set)
               ▲                         │
               └─────────────────────────┘   any exit → answer → END

Every exit is decided by :func:`loop_exit` (after each node's round) or :func:`refuse_start`
(before the first round), with its text in :data:`EXIT_TEXT`; the nodes report what happened
(proposals, hits, a pick), and the edges (:func:`after_propose`, :func:`after_retrieve`,
:func:`after_select`) follow ``state["exit"]``. The authors' loop is the ``while`` of
``qa_decompose.py``; the graph that wires these nodes is ``graphs/kar3.py``.

Every node reaches the model and the atom index through :class:`Kar3Runtime`, built from the
method's declaration like every method's runtime (``Kar3Runtime.for_method("kar3", ...)``: the
kit's :class:`~atomgraph.nodes.runtime.MethodRuntime` plus the atom index a run reads). The
prompts, and how knowledge is shown to the model, are :mod:`atomgraph.prompts.kar3.stages`.
Building the atom index (the atomizer) is :mod:`atomgraph.nodes.kar3.index`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import Counter
from typing import Any, Callable, Iterable, Literal

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.kar3.stages import (
    ANSWER_STAGE, PROPOSE_STAGE, SELECT_PARAGRAPH_STAGE, SELECT_STAGE,
)
from atomgraph.state.kar3 import AtomHit, ExitReason, Kar3Context, Kar3State, Round
from atomgraph.state.run import InvalidQuestion, LLMCall, RetrieverCall, check_question
from atomgraph.tools.atom_index import AtomIndex, hit_evidence
from atomgraph.tools.base import KnowledgeSource, SourceSet, retriever_run


# --- the runtime: the kit's runtime plus the atom index a run reads ---------------------------
class Kar3Runtime(MethodRuntime[Kar3Context]):
    """The runtime of the ``kar3`` graph: build it with ``Kar3Runtime.for_method("kar3", model, sources,
    settings[, index=...])``."""

    def __init__(self, context_cls: type[Kar3Context], section: str, models: Any = None, sources: Any = None,
                 settings: Any = None, roles: tuple[str, ...] | None = None, *, index: AtomIndex | None = None):
        super().__init__(context_cls, section, models, [] if sources is None else sources, settings, roles)
        self._sources_given = sources
        self._index = index
        self._indexes: dict[str, AtomIndex] = {}

    def atom_index(self, params: Kar3Context, *, check: bool = True) -> tuple[AtomIndex | None, str | None]:
        """The atom index this run reads, or None with the reason: ``params.collection`` when
        set, else an atom source among the sources the graph was given, else the collection the
        settings name. ``check``: the reason also says why an index found cannot be read (the
        first round asks; the later nodes of a question only need the index it found)."""
        if params.collection:
            idx, reason = self._open(params.collection), None
        elif self._index is not None:
            idx, reason = self._index, None
        elif self._sources_given is not None:
            given = self._sources_given
            items: Iterable[KnowledgeSource] = given.available.values() if isinstance(given, SourceSet) else given
            idx = next((s.index for s in items if isinstance(getattr(s, "index", None), AtomIndex)), None)
            reason = None if idx is not None else ("no atom source among the sources given to the graph; pass "
                                                   "AtomSource(collection) or set the run's 'collection'")
        else:
            s = self.settings()
            idx, reason = self._open(s.kar3.collection or s.chroma_collection), None
        if idx is not None and check:
            reason = idx.unavailable_reason()
        return idx, reason

    def _open(self, name: str) -> AtomIndex:
        if name not in self._indexes:
            s = self.settings()
            self._indexes[name] = AtomIndex(name, path=s.chroma_path, host=s.chroma_host, port=s.chroma_port, settings=s)
        return self._indexes[name]


# --- the loop: its exits and edges ------------------------------------------------------------
EXIT_TEXT: dict[str, str] = {
    "max_chunks": "N chunks chosen",
    "enough": "the proposer gave an empty list of sub-questions",
    "proposer_unreadable": "the proposer's reply could not be read (the authors end the loop)",
    "nothing_retrieved": "nothing retrieved (proposals, then the backups)",
    "selector_none": "no readable pick, neither among the atomic questions nor among the same candidates as paragraphs",
    "no_index": "no atom index to retrieve from (no answer: KAR³ does not fall back to closed-book)",
    "invalid_question": "the question cannot be asked",
}

Step = Literal["propose", "retrieve", "select"]


def loop_exit(step: Step, r: Round, chosen: list[AtomHit], params: Kar3Context) -> ExitReason | None:
    """Why the loop ends after ``step`` of round ``r`` (None: it goes on). Sets ``r.ended``.

    - propose: the proposer gave an empty list of sub-questions (``enough``), or a reply that
      could not be read (``proposer_unreadable``: the authors' parser reads it as "do not
      decompose");
    - retrieve: nothing retrieved, the backups included (``nothing_retrieved``);
    - select: no readable pick (``selector_none``), or N chunks chosen (``max_chunks``).
    """
    reason: ExitReason | None = None
    if step == "propose" and r.enough:
        reason = "enough"
    elif step == "propose" and r.proposer_unreadable:
        reason = "proposer_unreadable"
    elif step == "retrieve" and not r.hits:
        reason = "nothing_retrieved"
    elif step == "select":
        if r.choice is None:
            reason = "selector_none"
        elif len(chosen) >= params.max_chunks:
            reason = "max_chunks"
    r.ended = reason
    return reason


def refuse_start(r: Round, reason: Literal["invalid_question", "no_index"], why: str) -> ExitReason:
    """The loop does not start: the question cannot be asked, or there is no atom index."""
    r.ended = reason
    r.notes.append(why)
    return reason


def after_propose(state: Kar3State) -> Literal["retrieve", "answer"]:
    return "answer" if state.get("exit") else "retrieve"


def after_retrieve(state: Kar3State) -> Literal["select", "answer"]:
    return "answer" if state.get("exit") else "select"


def after_select(state: Kar3State) -> Literal["propose", "answer"]:
    return "answer" if state.get("exit") else "propose"


# --- propose ----------------------------------------------------------------------------------
# The authors' ``_propose_question_decomposition``: atomic sub-questions given the question and
# the chunks chosen so far. An empty list ends the loop; so does an unreadable reply, as the
# authors' parser turns it into "do not decompose" (exit ``proposer_unreadable``).
def make_propose_node(rt: Kar3Runtime) -> Callable:
    async def propose(state: Kar3State, config: RunnableConfig) -> dict[str, Any]:
        rounds = list(state.get("rounds") or [])
        r = Round(number=len(rounds) + 1)
        try:
            question = check_question(state.get("question"))
        except InvalidQuestion as exc:
            return {"exit": refuse_start(r, "invalid_question", str(exc)), "rounds": rounds + [r],
                    "error": f"invalid question: {exc}"}
        params = rt.params(config)
        if not rounds:
            index, reason = rt.atom_index(params)
            if reason:
                return {"exit": refuse_start(r, "no_index", reason), "rounds": [r], "chosen": []}
        chosen = state.get("chosen") or []
        result = await rt.ask(PROPOSE_STAGE, {"question": question, "chosen": chosen}, config)
        out: dict[str, Any] = {"llm_calls": [result.call]}
        if result.ok:
            r.proposer_thinking = result.value.thinking
            if result.value.enough:
                r.enough = True
            else:
                r.proposals = result.value.questions[: params.max_proposals or None]
                dropped = len(result.value.questions) - len(r.proposals)
                if dropped > 0:
                    r.notes.append(f"{dropped} proposal(s) over max_proposals={params.max_proposals} dropped")
        else:  # the authors' parser reads it as "do not decompose": the loop ends (loop_exit)
            r.proposer_unreadable = True
            r.notes.append(f"proposer: {result.problem}; the loop ends (the authors' reading)")
        out["exit"] = loop_exit("propose", r, state.get("chosen") or [], params)
        out["rounds"] = rounds + [r]
        return out

    return propose


# --- retrieve ---------------------------------------------------------------------------------
# The authors' ``_retrieve_atom_info_candidates``: the proposals against the atomic questions,
# then, while nothing is left, the backups in the authors' order: the question against the
# atoms, then the question against the chunks.
#
# Sizes and gate: several proposals retrieve ``atom_top_k`` (4) atoms each; a single query (one
# proposal, or the question in backup 1) ``single_query_top_k`` (8); the chunk backup
# ``chunk_top_k`` (8). Every tier keeps only hits scoring ≥ δ on ``delta_metric``, and drops
# hits of chunks already chosen. Candidates stay in proposal order, each proposal's hits best
# first, duplicates kept. Each tier tried is in the round's trace with its hit count. The
# backups ask the same question of the same index every round: each is searched once a question
# and its hits kept in ``state["asked"]`` (before the chosen chunks are dropped, as each round
# drops them).
def in_order(groups: list[list[AtomHit]], exclude: set[str]) -> list[AtomHit]:
    """The authors' candidates: proposal by proposal, hits of chosen chunks dropped."""
    return [h for hits in groups for h in hits if h.chunk_id not in exclude]


def top_k(params: Kar3Context, queries: list[str]) -> int:
    """k for one retrieval: a single query gets ``single_query_top_k``, several ``atom_top_k`` each."""
    return params.single_query_top_k if len(queries) == 1 else params.atom_top_k


async def timed(fn, *args, **kw) -> tuple[Any, float, str | None]:
    t0 = time.perf_counter()
    try:
        return await asyncio.to_thread(fn, *args, **kw), time.perf_counter() - t0, None
    except Exception as exc:  # noqa: BLE001 - a storage failure is one failed tier, recorded
        return None, time.perf_counter() - t0, f"{type(exc).__name__}: {exc}"[:500]


def make_retrieve_node(rt: Kar3Runtime) -> Callable:
    async def retrieve(state: Kar3State, config: RunnableConfig) -> dict[str, Any]:
        params = rt.params(config)
        index, _ = rt.atom_index(params, check=False)  # the first round checked it
        rounds = list(state.get("rounds") or [])
        r: Round = rounds[-1].model_copy(deep=True)
        question = " ".join(str(state.get("question", "")).split())
        exclude = {h.chunk_id for h in state.get("chosen") or []}
        asked: dict[str, list[AtomHit]] = dict(state.get("asked") or {})
        calls: list[RetrieverCall] = []
        gate = f"{params.delta_metric} ≥ δ={params.delta}"

        async def atoms(queries: list[str], via: str) -> list[AtomHit]:
            k = top_k(params, queries)
            if via == "question" and via in asked:  # backup 1, searched in an earlier round
                groups, secs, err = [asked[via]], 0.0, None
            else:
                async with retriever_run("kar3_atoms", "\n".join(queries), tags=["source:atoms"],  # a trace span
                                         metadata={"via": via, "k": k, "delta": params.delta}) as span:
                    groups, secs, err = await timed(index.search_atoms, queries, k, params.delta, via,
                                                    params.delta_metric)
                    span.fail(err) if err else span.end(hit_evidence(h, "atoms") for g in groups or [] for h in g)
                if via == "question" and groups:
                    asked[via] = groups[0]
            screened = [screen_hits(g, rt.drop_suspect()) for g in groups or [[] for _ in queries]]
            groups = [g for g, _, _ in screened]
            for q, (g, suspect, dropped) in zip(queries, screened):
                calls.append(RetrieverCall(source="atoms", query=q, hits=len(g), latency_s=secs / len(queries), error=err,
                                           suspect=suspect, dropped=dropped))
            found = in_order(groups, exclude)
            r.tiers.append({"via": via, "queries": len(queries), "k": k, "hits": len(found), **({"error": err} if err else {})})
            if err:
                r.notes.append(f"atom retrieval failed ({via}): {err}")
            return found

        hits = await atoms(r.proposals, "proposal")
        if not hits:
            r.notes.append(f"the proposals retrieved no atomic question with {gate}"
                           f"{' (of a chunk not yet chosen)' if exclude else ''}")
        if not hits and params.backups:
            r.notes.append("backup 1: the question against the atoms")
            hits = await atoms([question], "question")
            if not hits:
                r.notes.append(f"backup 2: the question against the chunks ({gate}), each shown with its best atom")
                hits = await chunk_hits(index, question, params, exclude, r, calls, rt.drop_suspect(), asked)
        r.hits = hits
        exit_reason = loop_exit("retrieve", r, state.get("chosen") or [], params)
        out = {"rounds": rounds[:-1] + [r], "retriever_calls": calls, "exit": exit_reason}
        if asked != (state.get("asked") or {}):  # a backup searched in this round
            out["asked"] = asked
        return out

    return retrieve


def screen_hits(hits: list[AtomHit], drop: bool) -> tuple[list[AtomHit], int, int]:
    """``(kept, suspect, dropped)``: hits whose atom or chunk addresses the model
    (:mod:`atomgraph.injection`) marked ``suspect_instruction``, or left out when ``drop``."""
    from atomgraph.injection import screen

    return screen(hits, lambda h: f"{h.atom}\n{h.title} | {h.text}", drop=drop)


async def chunk_hits(index, question: str, params: Kar3Context, exclude: set[str], r: Round,
                     calls: list[RetrieverCall], drop: bool, asked: dict[str, list[AtomHit]]) -> list[AtomHit]:
    """Backup 2: the question against the chunks (top ``chunk_top_k``, gated by δ, minus ``exclude``),
    recorded on the round; searched once a question (its hits kept in ``asked``)."""
    if "chunk" in asked:  # searched in an earlier round
        found, secs, err = asked["chunk"], 0.0, None
    else:
        async with retriever_run("kar3_chunks", question, tags=["source:chunks"],
                                 metadata={"k": params.chunk_top_k}) as span:
            found, secs, err = await timed(index.search_chunks, question, params.chunk_top_k, (), params.delta,
                                           params.delta_metric)
            span.fail(err) if err else span.end(hit_evidence(h, "chunks") for h in found or []
                                                if h.chunk_id not in exclude)
        if found is not None:
            asked["chunk"] = found
    found, suspect, dropped = screen_hits([h for h in found or [] if h.chunk_id not in exclude], drop)
    calls.append(RetrieverCall(source="chunks", query=question, hits=len(found), latency_s=secs, error=err,
                               suspect=suspect, dropped=dropped))
    r.tiers.append({"via": "chunk", "queries": 1, "k": params.chunk_top_k, "hits": len(found),
                    **({"error": err} if err else {})})
    if err:
        r.notes.append(f"chunk retrieval failed: {err}")
    return found


# --- select -----------------------------------------------------------------------------------
# The authors' ``_select_atom_question``: the selector picks one of the retrieved atomic
# questions; its chunk joins the chosen context. When no pick is readable (no ``question_idx``,
# or a number outside 1..N), the same candidates are shown again as paragraphs (the
# chunk-selection backup, ``paragraph_idx``); when that gives no readable pick either, the loop
# ends. No hit is ever taken without a pick.
def make_select_node(rt: Kar3Runtime) -> Callable:
    async def select(state: Kar3State, config: RunnableConfig) -> dict[str, Any]:
        params = rt.params(config)
        rounds = list(state.get("rounds") or [])
        r: Round = rounds[-1].model_copy(deep=True)
        chosen: list[AtomHit] = list(state.get("chosen") or [])
        inputs = {"question": state.get("question", ""), "chosen": chosen, "candidates": r.hits}
        llm: list[LLMCall] = []

        async def pick(stage, what: str) -> AtomHit | None:
            result = await rt.ask(stage, inputs, config)
            llm.append(result.call)
            if not result.ok:
                r.notes.append(f"{stage.name}: {result.problem}")
                return None
            thinking = result.value.thinking
            r.selector_thinking = f"{r.selector_thinking}\n{thinking}".strip() if thinking else r.selector_thinking
            i = result.value.index
            if i is not None and 1 <= i <= len(r.hits):
                return r.hits[i - 1]
            r.notes.append(f"{stage.name}: {'no pick (0 or null)' if i is None else f'{i} is outside 1..{len(r.hits)}'}"
                           f" among the {what}")
            return None

        choice = await pick(SELECT_STAGE, "atomic questions")
        if choice is None:
            r.paragraphs_offered = True
            r.notes.append("no readable pick among the atomic questions: the same candidates are shown as paragraphs")
            choice = await pick(SELECT_PARAGRAPH_STAGE, "paragraphs")
        if choice is not None:
            r.choice = choice
            chosen.append(choice)
        exit_reason = loop_exit("select", r, chosen, params)
        return {"rounds": rounds[:-1] + [r], "chosen": chosen, "exit": exit_reason, "llm_calls": llm}

    return select


# --- answer -----------------------------------------------------------------------------------
# The question over the chosen chunks; the trace of every round, why the loop ended, and the
# LLM calls and tokens this question used. Without an atom index there is no answer (an error,
# no model call). With an index but no chunk chosen (nothing retrieved, or the loop ended
# before a selection) the answer is closed-book: recorded in ``trace["fallbacks"]`` as "KAR³
# closed-book", counted in every summary.
def usage_of(calls: list[LLMCall | dict]) -> dict[str, Any]:
    calls = [LLMCall.model_validate(c) if isinstance(c, dict) else c for c in calls]
    return {
        "llm_calls": len(calls),
        "prompt_tokens": sum(c.prompt_tokens for c in calls),
        "completion_tokens": sum(c.completion_tokens for c in calls),
        "calls_by_stage": dict(Counter(c.stage for c in calls)),
        "unreadable": sum(1 for c in calls if c.parse_error),
        "failed": sum(1 for c in calls if c.error),
    }


def make_answer_node(rt: Kar3Runtime) -> Callable:
    async def answer(state: Kar3State, config: RunnableConfig) -> dict[str, Any]:
        params = rt.params(config)
        rounds: list[Round] = list(state.get("rounds") or [])
        chosen: list[AtomHit] = list(state.get("chosen") or [])
        exit_reason = state.get("exit") or (rounds[-1].ended if rounds else None)
        index, _ = rt.atom_index(params, check=False) if exit_reason != "invalid_question" else (None, None)
        calls = list(state.get("llm_calls") or [])
        out: dict[str, Any] = {"stopped": None,
                               "retrieved_ids": [h.chunk_id for h in chosen],
                               "retrieved_titles": list(dict.fromkeys(h.title for h in chosen if h.title))}
        response = ""
        if exit_reason == "invalid_question":
            out.update(answer="", answers=[], error=state.get("error"))
        elif exit_reason == "no_index":
            out.update(answer="", answers=[],
                       error=f"no atom index: {'; '.join(rounds[-1].notes) if rounds else ''} (KAR³ does not answer closed-book)")
        else:
            result = await rt.ask(ANSWER_STAGE, {"question": state["question"], "chosen": chosen}, config)
            calls.append(result.call)
            out["llm_calls"] = [result.call]
            response = result.text or ""
            if result.ok:
                out.update(answer=result.value, answers=[result.value], error=None)
            else:
                out.update(answer="", answers=[], error=f"answer: {result.problem}")
        fallbacks = []
        if not chosen and exit_reason not in ("invalid_question", "no_index"):
            # nothing was chosen (nothing retrieved, or every round ended first): the answer is
            # closed-book, a fallback the summaries count
            fallbacks.append({"stage": "answer", "kind": "KAR³ closed-book", "final": True,
                              "reason": f"closed-book: no chunk was chosen ({EXIT_TEXT.get(exit_reason or '', '') or exit_reason})"})
        out["trace"] = {
            "method": "kar3",
            "fallbacks": fallbacks,
            "collection": getattr(index, "name", None),
            "params": dataclasses.asdict(params),
            "rounds": [r.model_dump() for r in rounds],
            "exit": exit_reason,
            "exit_text": EXIT_TEXT.get(exit_reason or "", ""),
            "chosen": [h.model_dump(include={"chunk_id", "title", "atom", "score", "via"}
                                    | ({"suspect_instruction"} if h.suspect_instruction else set())) for h in chosen],
            "response": response,
            "usage": usage_of(calls),
        }
        return out

    return answer
