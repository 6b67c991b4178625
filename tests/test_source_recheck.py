"""A long-lived graph (``langgraph dev``, a notebook kernel) opens the settings' sources once; a
collection indexed after that (``atomgraph index wikipedia`` in another terminal) is read by the
next run once ``RunSources.recheck_s`` has passed, not only by runs that name it. Real embedded
Chroma and the demo KG; only the model is scripted."""

from __future__ import annotations

import pytest

from atomgraph.demo_run import demo_settings, index_demo_passages
from atomgraph.graphs.registry import build_method
from atomgraph.nodes.runtime import RunSources
from atomgraph.settings import Settings
from atomgraph.testing import ScriptedChatModel
from atomgraph.tools.chroma_source import chroma_client

QUESTION = "Which church in Ulm has the tallest steeple?"


def read_from(out: dict) -> set[str]:
    return {c["source"] for c in out["retriever_calls"]}


async def test_a_collection_indexed_after_the_graph_opened_its_sources_is_read_by_the_next_run(tmp_path, monkeypatch):
    settings = demo_settings(Settings(cache=False), tmp_path / "chroma")  # nothing indexed yet
    assert settings.sources == ["wikipedia", "wikidata"]
    graph = build_method("rag", model=ScriptedChatModel(default="So the answer is: Ulm Minster"), settings=settings)
    inp = {"question": QUESTION}

    first = graph.invoke(inp)
    assert read_from(first) == {"wikidata"}
    assert "does not exist" in first["trace"]["unavailable_sources"]["wikipedia"]

    index_demo_passages(settings)  # as `atomgraph index wikipedia` would, while the graph lives on
    monkeypatch.setattr(RunSources, "recheck_s", 10**9)
    assert read_from(await graph.ainvoke(inp)) == {"wikidata"}  # before recheck_s: nothing reopened per run
    monkeypatch.setattr(RunSources, "recheck_s", 0.0)
    for again in (await graph.ainvoke(inp), graph.invoke(inp)):  # async and sync runs alike
        assert read_from(again) == {"wikipedia", "wikidata"}, again["retriever_calls"]
        assert not again["trace"]["unavailable_sources"] and not again["error"]
        assert any("Ulm" in t for t in again["retrieved_titles"]), again["retrieved_titles"]

    # the collection deleted under the open source: a clear failure, then read again once indexed anew
    chroma_client(path=settings.chroma_path).delete_collection(settings.chroma_collection)
    gone = await graph.ainvoke(inp)
    (failed,) = [c for c in gone["retriever_calls"] if c["source"] == "wikipedia"]
    assert "Chroma collection 'atomgraph-demo' does not exist" in failed["error"], failed
    index_demo_passages(settings)
    rebuilt = graph.invoke(inp)
    assert read_from(rebuilt) == {"wikipedia", "wikidata"} and not rebuilt["error"]
    assert not any(c["error"] for c in rebuilt["retriever_calls"]), rebuilt["retriever_calls"]


def test_a_source_still_unusable_keeps_its_reason_and_the_graphs_own_sources_are_not_rechecked(tmp_path, monkeypatch):
    settings = demo_settings(Settings(cache=False), tmp_path / "chroma")
    monkeypatch.setattr(RunSources, "recheck_s", 0.0)
    runs = RunSources(None, lambda: settings)
    base = runs.base()
    assert list(base.unavailable) == ["wikipedia"] and runs.recheck_due()
    assert runs.recheck() == [] and runs.base() is base  # still missing: the same set, its reason kept
    assert "does not exist" in runs.base().unavailable["wikipedia"]
    own = RunSources(base, lambda: settings)  # the graph's sources= : required, never rebuilt behind its back
    own.base(required=False)
    assert not own.recheck_due() and own.recheck() == []


def test_a_source_usable_later_joins_in_the_settings_order_and_runs_choices_are_rebuilt(tmp_path, monkeypatch):
    """Google without a key, then with one (as after the server's settings gained it): the
    recheck adds it in the settings' order; a run's earlier choice that held it is built again."""
    monkeypatch.setattr(RunSources, "recheck_s", 0.0)
    settings = [demo_settings(Settings(cache=False), tmp_path / "chroma").model_copy(
        update={"sources": ["google", "wikidata"], "serpapi_api_key": None})]
    runs = RunSources(None, lambda: settings[0])
    assert list(runs.base().available) == ["wikidata"] and "no SerpAPI key" in runs.base().unavailable["google"]
    with pytest.raises(Exception, match="google: no SerpAPI key"):
        runs.pick(["google"])
    settings[0] = settings[0].model_copy(update={"serpapi_api_key": "test-key"})
    assert runs.recheck() == ["google"]
    assert list(runs.base().available) == ["google", "wikidata"] and not runs.base().unavailable
    assert list(runs.pick(["google"]).available) == ["google"]
    assert not runs.recheck_due()  # nothing left to look at
