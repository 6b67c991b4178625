"""Indexing as its own graph: a corpus into the Wikipedia Chroma collection.

    START → ingest → END

The same ingestion as ``atomgraph index wikipedia`` (content-hash ids, long passages split,
resumable: a rerun adds only what is missing), runnable from Studio or code:

>>> graph.invoke({"inputs": ["corpus.json"], "collection": "wiki2"}, context={"batch_size": 128})["stats"]

A bad input (missing file, unreadable record, a file outside the operator's ``data_dirs``)
comes back as ``error``, with nothing lost: the batches written before it stay written.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START

from atomgraph.tools.access import client_inputs
from atomgraph.errors import AtomgraphError
from atomgraph.lc import MethodGraph
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.settings import Settings
from atomgraph.state.indexing import (
    WikipediaIndexInput,
    WikipediaIndexOutput,
    WikipediaIndexState,
)


def build_wikipedia_index_graph(settings: Settings | None = None, checkpointer: Any = None, embeddings: Any = None):
    """Compile the indexing graph (``embeddings``: an Embeddings object, default from settings)."""
    rt = MethodRuntime.for_method("wikipedia_index", None, [], settings)

    async def ingest(state: WikipediaIndexState, config: RunnableConfig) -> dict:
        from atomgraph.tools.ingest import ingest as run_ingest

        try:
            p = rt.params(config)
            stats = await asyncio.to_thread(
                lambda: run_ingest(
                    client_inputs(state.get("inputs"), rt.settings()),  # under data_dirs, before anything is opened
                    state.get("collection"), settings=rt.settings(), fmt=p.format, batch_size=p.batch_size,
                    max_tokens=p.max_tokens, limit=p.limit, embeddings=embeddings, progress=False))
        except (AtomgraphError, OSError, ValueError) as exc:
            return {"stats": {}, "error": f"{type(exc).__name__}: {exc}"}
        return {"stats": stats.as_dict(), "error": None}

    g = rt.state_graph(WikipediaIndexState, WikipediaIndexInput, WikipediaIndexOutput)
    g.add_node("ingest", ingest)
    g.add_edge(START, "ingest")
    g.add_edge("ingest", END)
    return MethodGraph(g.compile(checkpointer=checkpointer, name="wikipedia_index"))


graph = build_wikipedia_index_graph().graph
