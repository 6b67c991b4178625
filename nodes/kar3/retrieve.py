"""The ``retrieve`` node: every proposal against the atomic questions (top-k, cosine ≥ δ),
atoms of chunks already chosen dropped, duplicates merged; when that finds nothing, the
backups in the reference code's order: the original question against the atoms, then
chunk retrieval (each chunk scored by its best-matching atom). Each tier tried is in the
round's trace with its hit count."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.kar3.common import Kar3Runtime
from atomgraph.state.kar3 import AtomHit, Round
from atomgraph.state.usage import RetrieverCall
from atomgraph.tools.atom_source import hit_evidence
from atomgraph.tools.base import retriever_run


def merge_hits(groups: list[list[AtomHit]], exclude: set[str]) -> list[AtomHit]:
    """One list, best score first: hits of excluded chunks dropped, each atom once (its best)."""
    best: dict[str, AtomHit] = {}
    for hits in groups:
        for h in hits:
            if h.chunk_id in exclude:
                continue
            key = h.atom_id or f"chunk:{h.chunk_id}"
            if key not in best or h.score > best[key].score:
                best[key] = h
    return sorted(best.values(), key=lambda h: -h.score)


async def timed(fn, *args, **kw) -> tuple[Any, float, str | None]:
    t0 = time.perf_counter()
    try:
        return await asyncio.to_thread(fn, *args, **kw), time.perf_counter() - t0, None
    except Exception as exc:  # noqa: BLE001 - a storage failure is one failed tier, recorded
        return None, time.perf_counter() - t0, f"{type(exc).__name__}: {exc}"[:500]


def make_retrieve_node(rt: Kar3Runtime) -> Callable:
    async def retrieve(state: dict, config: RunnableConfig) -> dict[str, Any]:
        params = rt.params(config)
        index, _ = rt.atom_index(params)
        rounds = list(state.get("rounds") or [])
        r: Round = rounds[-1].model_copy(deep=True)
        question = " ".join(str(state.get("question", "")).split())
        exclude = {h.chunk_id for h in state.get("chosen") or []}
        calls: list[RetrieverCall] = []
        hits: list[AtomHit] = []

        async def atoms(queries: list[str], via: str) -> list[AtomHit]:
            async with retriever_run("kar3_atoms", "\n".join(queries), tags=["source:atoms"],  # a trace span
                                     metadata={"via": via, "k": params.atom_top_k, "delta": params.delta}) as span:
                groups, secs, err = await timed(index.search_atoms, queries, params.atom_top_k, params.delta, via)
                span.fail(err) if err else span.end(hit_evidence(h, "atoms") for g in groups or [] for h in g)
            groups = groups or [[] for _ in queries]
            for q, g in zip(queries, groups):
                calls.append(RetrieverCall(source="atoms", query=q, hits=len(g), latency_s=secs / len(queries), error=err))
            found = merge_hits(groups, exclude)
            r.tiers.append({"via": via, "queries": len(queries), "hits": len(found), **({"error": err} if err else {})})
            if err:
                r.notes.append(f"atom retrieval failed ({via}): {err}")
            return found

        hits = await atoms(r.proposals, "proposal")
        if not hits:
            r.notes.append(f"the proposals retrieved no atomic question with cosine ≥ δ={params.delta}"
                           f"{' (of a chunk not yet chosen)' if exclude else ''}")
        if not hits and params.backups:
            r.notes.append("backup 1: the question against the atoms")
            hits = await atoms([question], "question")
            if not hits:
                r.notes.append("backup 2: chunk retrieval for the question, each chunk scored by its best atom")
                hits = await chunk_hits(index, question, params.chunk_top_k, exclude, r, calls)
        if not hits:
            r.ended = "nothing_retrieved"
        r.hits = hits
        return {"rounds": rounds[:-1] + [r], "retriever_calls": calls, "exit": r.ended}

    return retrieve


async def chunk_hits(index, question: str, k: int, exclude: set[str], r: Round,
                     calls: list[RetrieverCall]) -> list[AtomHit]:
    """Backup 2 (also offered when the selector rejects every atom): the question against the
    chunks, recorded on the round."""
    async with retriever_run("kar3_chunks", question, tags=["source:chunks"], metadata={"k": k}) as span:
        found, secs, err = await timed(index.search_chunks, question, k, exclude)
        span.fail(err) if err else span.end(hit_evidence(h, "chunks") for h in found or [])
    found = found or []
    calls.append(RetrieverCall(source="chunks", query=question, hits=len(found), latency_s=secs, error=err))
    r.tiers.append({"via": "chunk", "queries": 1, "hits": len(found), **({"error": err} if err else {})})
    if err:
        r.notes.append(f"chunk retrieval failed: {err}")
    return found
