"""Sources under load: many ATOMR questions at once over a store this process has not opened
yet (the demo passages in embedded Chroma, the demo KG in process), through
``asyncio.gather``, ``graph.batch`` and ``eval run --concurrency``. Each source opens its
client once, under a lock; no question loses a retrieval to the store's client.

Only the model is scripted (``atomr_demo_script``: it answers a node only from the evidence it
was shown, so a right answer also proves the passages arrived).
"""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from atomr_demo_script import PLANS, Q1, Q2, Q3, demo_model

from atomgraph.demo_run import demo_settings, index_demo_passages
from atomgraph.evaluation.datasets import Example
from atomgraph.evaluation.runner import EvalOptions, arun_eval
from atomgraph.graphs.atomr import build_atomr_graph
from atomgraph.settings import Settings
from atomgraph.tools import chroma_source

GOLD = {Q1: "Ulm Minster", Q2: "Munich", Q3: "University of Copenhagen"}


def _forget_open_stores() -> None:
    """As in a fresh process: no Chroma client built yet for any folder."""
    from chromadb.api.client import SharedSystemClient

    with chroma_source._CLIENTS_LOCK:
        chroma_source._CLIENTS.clear()
    SharedSystemClient.clear_system_cache()


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """The demo passages embedded once for the module (a folder each test copies)."""
    folder = tmp_path_factory.mktemp("indexed") / "chroma"
    index_demo_passages(demo_settings(Settings(cache=False), folder))
    _forget_open_stores()
    return folder


@pytest.fixture
def fresh_store(indexed, tmp_path):
    """A copy of the indexed store that no client in this process has opened."""
    shutil.copytree(indexed, tmp_path / "chroma")
    settings = demo_settings(Settings(cache=False), tmp_path / "chroma")
    _forget_open_stores()
    yield settings
    _forget_open_stores()


def _source_errors(outputs) -> list[str]:
    errors = []
    for out in outputs:
        if isinstance(out, BaseException):
            errors.append(f"raised {type(out).__name__}: {out}")
            continue
        errors += [c["error"] for c in out["retriever_calls"] if c["error"]]
        if out.get("error"):
            errors.append(out["error"])
    return errors


async def test_32_concurrent_questions_over_a_fresh_store(fresh_store):
    graph = build_atomr_graph(model=demo_model(), settings=fresh_store)  # sources opened by the questions
    questions = [list(GOLD)[i % 3] for i in range(32)]
    outs = await asyncio.wait_for(
        asyncio.gather(*(graph.ainvoke({"question": q}) for q in questions), return_exceptions=True), 300)
    assert _source_errors(outs) == []
    assert [o["answer"] for o in outs] == [GOLD[q] for q in questions]
    assert all({c["source"] for c in o["retriever_calls"]} == {"wikipedia", "wikidata"} for o in outs)


def test_graph_batch_over_a_fresh_store(fresh_store):
    graph = build_atomr_graph(model=demo_model(), settings=fresh_store)
    questions = [list(GOLD)[i % 3] for i in range(8)]
    outs = graph.batch([{"question": q} for q in questions], config={"max_concurrency": 8}, return_exceptions=True)
    assert _source_errors(outs) == []
    assert [o["answer"] for o in outs] == [GOLD[q] for q in questions]


async def test_eval_run_at_concurrency_32_loses_nothing(fresh_store, tmp_path):
    examples = [Example(id=f"q{i}", question=q, answers=[GOLD[q]])
                for i, q in enumerate(list(GOLD)[i % 3] for i in range(32))]
    result = await arun_eval("atomr", examples, tmp_path / "run", EvalOptions(
        concurrency=32, model=demo_model(), settings=fresh_store, progress=False))
    assert (result.finished, result.errors) == (32, 0)
    lines = (tmp_path / "run" / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(x) for x in lines]
    assert sorted(r["id"] for r in records) == sorted(e.id for e in examples)
    assert all(r["usage"]["retriever_errors"] == 0 for r in records)
    assert all(r["predicted"] == r["gold"][0] for r in records)


def test_one_client_per_store_per_process(fresh_store):
    path = fresh_store.chroma_path
    clients = []

    def open_one():
        clients.append(chroma_source.chroma_client(path=path, create=False))

    import threading

    threads = [threading.Thread(target=open_one) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(clients) == 16 and len({id(c) for c in clients}) == 1
    assert len(PLANS) >= 3
