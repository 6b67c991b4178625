"""The indexing graph's nodes: ``load`` (chunks from corpus files or an existing passages
collection, minus those already atomized) and ``atomize`` (every pending chunk → the atomizer
→ its atomic questions; bounded concurrency; written in batches as they finish).

:func:`atomize_chunks` is the atomizing loop on its own (the benchmark and the notebook
call it directly). A chunk whose atomizer call fails or whose reply is unreadable is not
marked done: it is listed in the statistics and atomized again by the next run. The
atomizer's lines pass :func:`~atomgraph.prompts.kar3.atomize.filter_atoms` (questions of
bounded length that do not copy the chunk); rejected lines are counted by reason.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.errors import AtomgraphError
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.kar3.atomize import ATOMIZE_STAGE, filter_atoms
from atomgraph.state.kar3 import Kar3IndexContext, Kar3IndexState
from atomgraph.state.run import LLMCall
from atomgraph.tools.atom_index import AtomIndex, Chunk, collection_chunks

# The atomizer's runtime (the ``kar3_index`` graph): ``MethodRuntime.for_method("kar3_index", model, [], settings)``;
# it runs the atomizer at its own temperature (0.7 in the paper, through ``rt.ask(..., temperature=...)``).
Kar3IndexRuntime = MethodRuntime[Kar3IndexContext]


def problem(exc: Exception) -> str:
    """One line for a failure: our own errors as they read, others with their type."""
    return str(exc) if isinstance(exc, AtomgraphError) else f"{type(exc).__name__}: {exc}"


def index_for(rt: Kar3IndexRuntime, name: str, embeddings: Any = None) -> AtomIndex:
    s = rt.settings()
    return AtomIndex(name, path=s.chroma_path, host=s.chroma_host, port=s.chroma_port, embeddings=embeddings, settings=s)


WHOLE = 10**9  # a token bound no paragraph reaches: passages are atomized whole


def read_chunks(inputs: list[str], params: Kar3IndexContext, stats: dict) -> list[Chunk]:
    """Chunks of corpus files: whole paragraphs (the authors'), or with ``split_chunks`` split as
    ``atomgraph index wikipedia`` splits them (same splitting, same ids)."""
    from pathlib import Path

    from atomgraph.errors import ConfigError
    from atomgraph.tools.ingest import IngestStats, _pieces

    if not inputs:
        raise ConfigError("no input files given (inputs) and no from_collection")
    for p in inputs:
        if not Path(p).exists():
            raise ConfigError(f"{p}: no such file or directory")
    ist = IngestStats(collection="", embedding_model="")
    out = [Chunk(pid, p.title, p.text, metadata={"part": part} if part >= 0 else {})
           for pid, p, part in _pieces(inputs, params.format, params.max_tokens if params.split_chunks else WHOLE,
                                       params.limit, ist, params.encoding)]
    stats.update(records=ist.read, chunks=len(out), skipped_records=dict(ist.skipped_records))
    if not out:
        raise ConfigError(f"{', '.join(map(str, inputs))}: no passages to atomize"
                          + (f" (records without text: {sum(ist.skipped_records.values())})" if ist.skipped_records else ""))
    return out


async def atomize_chunks(rt: Kar3IndexRuntime, index: AtomIndex, chunks: list[Chunk], params: Kar3IndexContext,
                         config: RunnableConfig | None = None, *, progress: bool = False) -> tuple[dict, list[LLMCall]]:
    """Atomize ``chunks`` (at most ``atomizer_concurrency`` calls at once, at the atomizer's
    temperature) and write them ``write_batch`` at a time. Returns statistics and the calls."""
    from atomgraph.progress import progress as progress_reporter

    t0 = time.perf_counter()
    sem = asyncio.Semaphore(params.atomizer_concurrency)
    lock = asyncio.Lock()
    buffer: list[tuple[Chunk, list[str]]] = []
    calls: list[LLMCall] = []
    failed: list[dict] = []
    stats: dict[str, Any] = {"atomized": 0, "atoms": 0, "rejected_lines": 0, "rejected_by_reason": {},
                             "chunks_without_atoms": 0}
    # a bar on a terminal, else a line with rate and ETA every 30 s
    bar = progress_reporter(len(chunks), f"index atoms {index.name}", "chunks", enabled=progress)

    async def flush() -> None:
        async with lock:
            batch = list(buffer)
            buffer.clear()
            if batch:
                stats["atoms"] += await asyncio.to_thread(index.write, batch)
                stats["atomized"] += len(batch)
                bar.set_postfix(atoms=stats["atoms"], failed=len(failed), refresh=False)

    async def one(chunk: Chunk) -> None:
        async with sem:  # a write holds its slot: atomized work waiting to be written stays bounded
            result = await rt.ask(ATOMIZE_STAGE, {"title": chunk.title, "text": chunk.text}, config,
                                  temperature=params.atomizer_temperature)
            calls.append(result.call)
            if result.ok:
                kept = filter_atoms(result.value, chunk.text, params.max_atom_words, params.atom_question_filter)
                stats["rejected_lines"] += sum(kept.rejected.values())
                for reason, n in kept.rejected.items():
                    stats["rejected_by_reason"][reason] = stats["rejected_by_reason"].get(reason, 0) + n
                stats["chunks_without_atoms"] += not kept.kept
                buffer.append((chunk, kept.kept))
                if len(buffer) >= params.write_batch:
                    await flush()
            else:
                failed.append({"id": chunk.id, "title": chunk.title, "problem": result.problem})
            bar.update(1)

    try:
        await asyncio.gather(*(one(c) for c in chunks))
    finally:
        await flush()
        bar.close()
    seconds = time.perf_counter() - t0
    stats.update(failed=len(failed), failures=failed[:20], seconds=round(seconds, 3),
                 chunks_per_s=round(len(chunks) / seconds, 2) if seconds > 0 else 0.0)
    return stats, calls


def usage_stats(calls: list[LLMCall], settings) -> dict:
    from atomgraph.state.run import calls_cost, price_table

    cost, unpriced = calls_cost(calls, price_table(settings))
    return {"llm_calls": len(calls), "prompt_tokens": sum(c.prompt_tokens for c in calls),
            "completion_tokens": sum(c.completion_tokens for c in calls), "cost_usd": round(cost, 6),
            "unpriced_models": unpriced}


def make_load_node(rt: Kar3IndexRuntime, embeddings: Any = None) -> Callable:
    async def load(state: Kar3IndexState, config: RunnableConfig) -> dict[str, Any]:
        params = rt.params(config)
        source = state.get("from_collection") or ""
        name = state.get("collection") or source or rt.settings().kar3.collection or rt.settings().chroma_collection
        stats: dict[str, Any] = {"collection": name}
        try:
            index = index_for(rt, name, embeddings)
            if source:
                index.open(create=True)
                chunks = await asyncio.to_thread(
                    lambda: list(collection_chunks(index._client_(True), source, index.model_id, limit=params.limit)))
                stats.update(from_collection=source, chunks=len(chunks))
                if source == name:  # atomized in place: the vectors are there already
                    for c in chunks:
                        c.embedding = None
            else:
                from atomgraph.tools.access import client_inputs

                chunks = await asyncio.to_thread(  # the inputs under data_dirs, before anything is opened
                    lambda: read_chunks(client_inputs(state.get("inputs"), rt.settings()), params, stats))
                index.open(create=True)
            done = await asyncio.to_thread(index.atomized, [c.id for c in chunks])
        except (AtomgraphError, OSError, ValueError) as exc:
            return {"chunks": [], "stats": stats, "error": problem(exc)}
        pending = [c for c in chunks if c.id not in done]
        stats["skipped"] = len(chunks) - len(pending)
        rows = [{"id": c.id, "title": c.title, "text": c.text, "metadata": c.metadata,
                 **({"embedding": [float(x) for x in c.embedding]} if c.embedding is not None else {})} for c in pending]
        return {"chunks": rows, "stats": stats, "error": None, "collection": name}

    return load


def make_atomize_node(rt: Kar3IndexRuntime, embeddings: Any = None, progress: bool = False) -> Callable:
    async def atomize(state: Kar3IndexState, config: RunnableConfig) -> dict[str, Any]:
        stats = dict(state.get("stats") or {})
        if state.get("error"):
            return {"stats": stats}
        params = rt.params(config)
        index = index_for(rt, state["collection"], embeddings)
        chunks = [Chunk(r["id"], r["title"], r["text"], embedding=r.get("embedding"), metadata=r.get("metadata") or {})
                  for r in state.get("chunks") or []]
        try:
            done, calls = await atomize_chunks(rt, index, chunks, params, config, progress=progress)
        except (AtomgraphError, OSError, ValueError) as exc:
            return {"stats": stats, "error": problem(exc)}
        stats.update(done)
        stats.update(usage_stats(calls, rt.settings()))
        stats.update({f"collection_{k}": v for k, v in (await asyncio.to_thread(index.counts)).items()})
        return {"stats": stats, "llm_calls": calls, "chunks": [], "error": None}

    return atomize
