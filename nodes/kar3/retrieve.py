"""The ``retrieve`` node (the authors' ``_retrieve_atom_info_candidates``): the proposals
against the atomic questions, then, while nothing is left, the backups in the authors' order:
the question against the atoms, then the question against the chunks.

Sizes and gate: several proposals retrieve ``atom_top_k`` (4) atoms each; a single query (one
proposal, or the question in backup 1) ``single_query_top_k`` (8); the chunk backup
``chunk_top_k`` (8). Every tier keeps only hits scoring ≥ δ on ``delta_metric``, and drops
hits of chunks already chosen. Candidates stay in proposal order, each proposal's hits best
first, duplicates kept (``dedupe_candidates``: each atom once, all sorted by score). Each
tier tried is in the round's trace with its hit count."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.kar3.loop import Kar3Runtime, loop_exit
from atomgraph.state.kar3 import AtomHit, Kar3Context, Kar3State, Round
from atomgraph.state.run import RetrieverCall
from atomgraph.tools.atom_source import hit_evidence
from atomgraph.tools.base import retriever_run


def merge_hits(groups: list[list[AtomHit]], exclude: set[str]) -> list[AtomHit]:
    """``dedupe_candidates``: one list, best score first, each atom once (its best)."""
    best: dict[str, AtomHit] = {}
    for hits in groups:
        for h in hits:
            if h.chunk_id in exclude:
                continue
            key = h.atom_id or f"chunk:{h.chunk_id}"
            if key not in best or h.score > best[key].score:
                best[key] = h
    return sorted(best.values(), key=lambda h: -h.score)


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
        index, _ = rt.atom_index(params)
        rounds = list(state.get("rounds") or [])
        r: Round = rounds[-1].model_copy(deep=True)
        question = " ".join(str(state.get("question", "")).split())
        exclude = {h.chunk_id for h in state.get("chosen") or []}
        calls: list[RetrieverCall] = []
        gate = f"{params.delta_metric} ≥ δ={params.delta}"

        async def atoms(queries: list[str], via: str) -> list[AtomHit]:
            k = top_k(params, queries)
            async with retriever_run("kar3_atoms", "\n".join(queries), tags=["source:atoms"],  # a trace span
                                     metadata={"via": via, "k": k, "delta": params.delta}) as span:
                groups, secs, err = await timed(index.search_atoms, queries, k, params.delta, via,
                                                params.delta_metric)
                span.fail(err) if err else span.end(hit_evidence(h, "atoms") for g in groups or [] for h in g)
            groups = groups or [[] for _ in queries]
            for q, g in zip(queries, groups):
                calls.append(RetrieverCall(source="atoms", query=q, hits=len(g), latency_s=secs / len(queries), error=err))
            found = (merge_hits if params.dedupe_candidates else in_order)(groups, exclude)
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
                hits = await chunk_hits(index, question, params, exclude, r, calls)
        r.hits = hits
        exit_reason = loop_exit("retrieve", r, state.get("chosen") or [], params)
        return {"rounds": rounds[:-1] + [r], "retriever_calls": calls, "exit": exit_reason}

    return retrieve


async def chunk_hits(index, question: str, params: Kar3Context, exclude: set[str], r: Round,
                     calls: list[RetrieverCall]) -> list[AtomHit]:
    """Backup 2: the question against the chunks (top ``chunk_top_k``, gated by δ), recorded on the round."""
    async with retriever_run("kar3_chunks", question, tags=["source:chunks"],
                             metadata={"k": params.chunk_top_k}) as span:
        found, secs, err = await timed(index.search_chunks, question, params.chunk_top_k, exclude, params.delta,
                                       params.delta_metric)
        span.fail(err) if err else span.end(hit_evidence(h, "chunks") for h in found or [])
    found = found or []
    calls.append(RetrieverCall(source="chunks", query=question, hits=len(found), latency_s=secs, error=err))
    r.tiers.append({"via": "chunk", "queries": 1, "k": params.chunk_top_k, "hits": len(found),
                    **({"error": err} if err else {})})
    if err:
        r.notes.append(f"chunk retrieval failed: {err}")
    return found
