"""The ``select`` node: the selector picks one retrieved atomic question; its chunk joins the
chosen context. If it picks none and only atoms were offered, chunk-level hits are offered
once more; if it picks none again, the loop ends. An unreadable or out-of-range reply takes
the best-scoring hit (noted in the round)."""

from __future__ import annotations

from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.kar3.common import Kar3Runtime, render_candidates, render_chunks
from atomgraph.nodes.kar3.retrieve import chunk_hits
from atomgraph.prompts.kar3.select import SELECT_STAGE
from atomgraph.state.kar3 import AtomHit, Round
from atomgraph.state.usage import LLMCall, RetrieverCall


def make_select_node(rt: Kar3Runtime) -> Callable:
    async def select(state: dict, config: RunnableConfig) -> dict[str, Any]:
        params = rt.params(config)
        rounds = list(state.get("rounds") or [])
        r: Round = rounds[-1].model_copy(deep=True)
        chosen: list[AtomHit] = list(state.get("chosen") or [])
        question = " ".join(str(state.get("question", "")).split())
        llm: list[LLMCall] = []
        retriever: list[RetrieverCall] = []

        async def pick(hits: list[AtomHit]) -> tuple[AtomHit | None, bool]:
            """(choice, rejected): the selector's pick; rejected when it said none helps."""
            values = {"question": question, "context": render_chunks(chosen), "candidates": render_candidates(hits),
                      "count": len(hits)}
            result = await rt.ask(SELECT_STAGE, values, config)
            llm.append(result.call)
            if result.ok:
                r.selector_thinking = result.value.thinking or r.selector_thinking
                i = result.value.index
                if i is None:
                    return None, True
                if 1 <= i <= len(hits):
                    return hits[i - 1], False
                r.notes.append(f"selector chose {i}, outside 1..{len(hits)}; the best-scoring hit is taken")
            else:
                r.notes.append(f"selector: {result.problem}; the best-scoring hit is taken")
            return hits[0], False

        choice, rejected = await pick(r.hits)
        if rejected and params.backups and any(h.via != "chunk" for h in r.hits):
            r.notes.append("the selector chose none of the atomic questions; chunk-level hits are offered instead")
            index, _ = rt.atom_index(params)
            r.chunk_hits = await chunk_hits(index, question, params.chunk_top_k, {h.chunk_id for h in chosen},
                                            r, retriever)
            if r.chunk_hits:
                choice, rejected = await pick(r.chunk_hits)
        if choice is None:
            r.ended = "selector_none"
        else:
            r.choice = choice
            chosen.append(choice)
            if len(chosen) >= params.max_chunks:
                r.ended = "max_chunks"
        return {"rounds": rounds[:-1] + [r], "chosen": chosen, "exit": r.ended,
                "llm_calls": llm, "retriever_calls": retriever}

    return select
