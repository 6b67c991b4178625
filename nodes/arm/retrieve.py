"""The ``retrieve`` node (§3.2.1, end): the base search objects — each keyword's n-gram list
as one query (BM25 + embedding similarity), BM25 over all aligned n-grams, and embedding
similarity to the question (:func:`atomgraph.nodes.arm.pool.base_pool`). No model call."""

from __future__ import annotations

from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.arm.common import ArmRuntime, question_scores
from atomgraph.nodes.arm.pool import base_pool
from atomgraph.state.arm_graph import ArmState, Candidate
from atomgraph.state.evidence import Evidence
from atomgraph.state.usage import RetrieverCall
from atomgraph.tools.base import retriever_run


def make_retrieve_node(art: ArmRuntime) -> Callable:
    async def retrieve(state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        index, scores = await question_scores(art, ctx, state)
        pool = base_pool(index, scores, ctx)
        ps = list(pool)
        rel = scores.relevance(ps, ctx.bm25_weight)
        candidates = [Candidate(id=index.objects[p].id, via=pool[p], bm25=round(float(scores.bm25[p]), 4),
                                dense=round(float(scores.dense[p]), 4), relevance=round(float(r), 4))
                      for p, r in zip(ps, rel)]
        ngrams = list(dict.fromkeys(a["ngram"] for a in state.get("aligned") or []))
        async with retriever_run("arm_objects", state["question"], tags=["source:arm"],  # a trace span
                                 metadata={"ngrams": ngrams[:50]}) as span:
            span.end(Evidence(title=index.objects[p].title, text=index.objects[p].text[:300], source="arm",
                              id=index.objects[p].id, metadata={"via": pool[p]}) for p in ps)
        calls = [RetrieverCall(source="arm:bm25", query=" | ".join(ngrams)[:500],
                               hits=sum(1 for v in pool.values() if v == "bm25")),
                 RetrieverCall(source="arm:dense", query=state["question"][:500],
                               hits=sum(1 for v in pool.values() if v == "dense"))]
        calls += [RetrieverCall(source="arm:keyword", query=", ".join(a["ngrams"])[:500],
                                hits=sum(1 for v in pool.values() if v == f"keyword {i}"))
                  for i, a in enumerate(state.get("alignment") or [])]
        return {"candidates": candidates, "retriever_calls": calls}

    return retrieve
