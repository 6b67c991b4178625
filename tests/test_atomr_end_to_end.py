"""ATOMR end to end over real stores: the demo passages in embedded Chroma (real local
embedding model), the demo KG in pyoxigraph in process and behind a real Oxigraph server on
127.0.0.1. Only the LLM is scripted (``atomr_demo_script``): its reader answers a node only
when the supporting passage, fact or child answers are in the prompt it was given, so a
right final answer shows that retrieval fed the executor.

Also ``atomgraph demo`` itself: no model → exit 2 with the configuration help; a scripted
model factory → every demo question answered, exit 0.
"""

from __future__ import annotations

import json

import pytest
from atomr_demo_script import PLANS, Q1, Q2, Q3, Q4, Q5, demo_model
from oxigraph_server import start_oxigraph, stop_oxigraph

from atomgraph.cli import main
from atomgraph.demo_pack import kg_path, load_passages, load_questions
from atomgraph.demo_run import DEMO_COLLECTION, arun_demo, demo_settings, demo_sources, index_demo_passages
from atomgraph.graphs.atomr import build_atomr_graph
from atomgraph.settings import Settings
from atomgraph.tools.registry import SourceSet
from atomgraph.tools.wikidata_source import wikidata_from_settings


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    """The demo passages indexed once for the module; settings pointing at them and kg.ttl."""
    folder = tmp_path_factory.mktemp("demo-chroma")
    settings = demo_settings(Settings(cache=False), folder)
    stats = index_demo_passages(settings)
    assert stats.added == stats.count == len(load_passages())
    return settings


@pytest.fixture(scope="module")
def store_sources(demo_store) -> SourceSet:
    sources = demo_sources(demo_store)
    assert list(sources.available) == ["wikipedia", "wikidata"], sources.unavailable
    return sources


def graph_over(sources, settings):
    model = demo_model()
    return build_atomr_graph(model=model, sources=sources, settings=settings), model


def nodes_of(out) -> dict[int, dict]:
    return {n["id"]: n for n in out["trace"]["nodes"]}


def by_source(calls) -> dict[str, int]:
    counts: dict[str, int] = {}
    for c in calls:
        counts[c["source"]] = counts.get(c["source"], 0) + 1
    return counts


def stage_prompts(model, stage: str) -> list[str]:
    return [c["prompt"] for c in model.calls if c["stage"] == stage]


async def test_bridge_question_reads_the_church_passage_from_chroma(demo_store, store_sources):
    graph, model = graph_over(store_sources, demo_store)
    out = await graph.ainvoke({"question": Q1})
    assert out["answer"] == "Ulm Minster"
    assert out.get("error") is None and out["stopped"] is None
    nodes = nodes_of(out)
    # [1] = Ulm, from the knowledge graph
    assert nodes[1]["answer"] == "Ulm"
    assert "(Albert Einstein, place of birth, Ulm)" in [e["text"] for e in nodes[1]["evidence"] if e["source"] == "wikidata"]
    # [2]'s reference was replaced by [1]'s answer before retrieval
    assert nodes[2]["resolved_question"] == "Which church in Ulm has the tallest steeple of any church in the world?"
    assert nodes[2]["operator"] == 'Search("church in Ulm", "tallest steeple of any church in the world")'
    top = next(e for e in nodes[2]["evidence"] if e["source"] == "wikipedia")
    assert top["title"] == "Ulm Minster" and "tallest church in the world" in top["text"] and top["score"] > 0.5
    assert all(n["fallback"] is None for n in nodes.values())
    assert by_source(out["retriever_calls"]) == {"wikipedia": 2, "wikidata": 2}
    assert all(c["error"] is None and c["hits"] > 0 for c in out["retriever_calls"])
    assert "Ulm Minster" in out["retrieved_titles"]
    # the Search executor was shown the passage Chroma returned, under the Wikipedia heading
    (search_prompt,) = stage_prompts(model, "search")
    shown = search_prompt[search_prompt.rfind("Retrieved Knowledge:"):]
    assert "Wikipedia Passages:\n[1] Ulm Minster | Ulm Minster is a Lutheran church" in shown
    assert "Wikidata Facts:" in shown
    # plan, 2 × (source selection + operator), child reasoning
    assert [c["stage"] for c in out["llm_calls"]].count("source_selection") == 2
    assert len(out["llm_calls"]) == 6


async def test_without_the_passage_store_the_search_node_cannot_answer(demo_store):
    """The control: with the KG alone, the 'tallest church' passage is never retrieved, so the
    reader says Unknown and the node falls back to direct RAG, which cannot answer either."""
    kg_only = SourceSet.of([wikidata_from_settings(demo_store)])
    graph, _ = graph_over(kg_only, demo_store)
    out = await graph.ainvoke({"question": Q1})
    nodes = nodes_of(out)
    assert nodes[1]["answer"] == "Ulm"  # the KG hop still works
    assert nodes[2]["fallback"] and "Unknown" in nodes[2]["fallback"]
    assert out["answer"] == "Unknown" and out["answers"] == []
    assert nodes[0]["fallback"] == "child reasoning: the model answered Unknown"
    # two operators, then the root's direct-RAG search with the whole question
    assert [c["query"] for c in out["retriever_calls"]][-1] == Q1
    assert by_source(out["retriever_calls"]) == {"wikidata": 3}
    assert "source_selection" not in [c["stage"] for c in out["llm_calls"]]  # one source: nothing to choose


async def test_two_kg_hops_resolve_the_reference(demo_store, store_sources):
    graph, _ = graph_over(store_sources, demo_store)
    out = await graph.ainvoke({"question": Q2})
    assert out["answer"] == "Munich"
    nodes = nodes_of(out)
    assert nodes[1]["answer"] == "Arnold Sommerfeld"
    assert nodes[2]["operator"] == 'Relate("Arnold Sommerfeld", "place of death")'
    kg_facts = [e["text"] for e in nodes[2]["evidence"] if e["source"] == "wikidata"]
    assert "(Arnold Sommerfeld, place of death, Munich)" in kg_facts
    assert by_source(out["retriever_calls"]) == {"wikipedia": 2, "wikidata": 2}


async def test_comparison_with_nested_parents_and_a_dr_node(demo_store, store_sources):
    graph, model = graph_over(store_sources, demo_store)
    out = await graph.ainvoke({"question": Q3})
    assert out["answer"] == "University of Copenhagen"
    nodes = nodes_of(out)
    assert nodes[4]["answer"] == "ETH Zurich"  # from the teaching-diploma passage
    assert any("teaching diploma" in e["text"] for e in nodes[4]["evidence"] if e["source"] == "wikipedia")
    assert nodes[5]["operator"] == 'Relate("ETH Zurich", "inception")'
    assert (nodes[1]["answer"], nodes[2]["answer"]) == ("1855", "1479")  # child reasoning of nested parents
    dr = nodes[3]
    assert dr["kind"] == "direct" and dr["refs"] == [1, 2]
    assert dr["resolved_question"] == "Given 1855 and 1479, which was founded first?"
    assert dr["evidence"] == [] and dr["sources"] == [] and dr["answer"] == "University of Copenhagen"
    # only the four leaves retrieved, each from both sources
    assert by_source(out["retriever_calls"]) == {"wikipedia": 4, "wikidata": 4}
    (sibling,) = stage_prompts(model, "sibling_reasoning")
    assert "A: 1855" in sibling and "A: 1479" in sibling


async def test_filter_question_over_kg_and_passages(demo_store, store_sources):
    graph, model = graph_over(store_sources, demo_store)
    out = await graph.ainvoke({"question": Q5})
    assert out["answer"] == "Niels Bohr"
    nodes = nodes_of(out)
    assert nodes[1]["answers"] == ["Ulm", "Kiel", "Copenhagen"]
    flt = nodes[2]
    assert flt["operator"] == 'Filter("Ulm, Kiel, Copenhagen", "capital of a country")'
    assert flt["answers"] == ["Copenhagen"] and flt["fallback"] is None
    texts = [e["text"] for e in flt["evidence"]]
    assert "(Copenhagen, capital of, Denmark)" in texts
    assert any(e["title"] == "Copenhagen" and "capital" in e["text"] for e in flt["evidence"] if e["source"] == "wikipedia")
    # one Relate over both sources, then one retrieval per candidate per source
    assert by_source(out["retriever_calls"]) == {"wikipedia": 4, "wikidata": 4}
    (filter_prompt,) = stage_prompts(model, "filter")
    assert "Condition: capital of a country" in filter_prompt
    assert nodes[3]["kind"] == "direct" and nodes[3]["answer"] == "Niels Bohr"


async def test_over_a_real_sparql_server_on_loopback(demo_store, tmp_path_factory):
    server = start_oxigraph(kg_path(), tmp_path_factory.mktemp("oxigraph-demo"))
    try:
        settings = demo_store.model_copy(update={"wikidata_file": None, "wikidata_endpoint": server.url})
        sources = demo_sources(settings)
        assert list(sources.available) == ["wikipedia", "wikidata"]
        assert sources.get("wikidata").backend.url == server.url
        graph, _ = graph_over(sources, settings)
        out = await graph.ainvoke({"question": Q4})
    finally:
        stop_oxigraph(server)
    assert out["answer"] == "Erwin Schrödinger"
    nodes = nodes_of(out)
    assert nodes[3]["answer"] == "5 December 1901" and nodes[4]["answer"] == "12 August 1887"
    assert nodes[5]["kind"] == "direct"
    assert by_source(out["retriever_calls"]) == {"wikipedia": 4, "wikidata": 4}
    assert all(c["error"] is None for c in out["retriever_calls"])


async def test_run_demo_answers_every_question_and_reindexes_nothing(demo_store):
    result = await arun_demo(Settings(cache=False), persist=demo_store.chroma_path, model=demo_model())
    assert result.indexed["added"] == 0 and result.indexed["skipped"] == result.indexed["count"]
    assert [r["id"] for r in result.records] == [q["id"] for q in load_questions()]
    assert result.mean_f1 == 100.0 and result.errors == 0
    usage = result.usage()
    assert usage.llm_calls_by_role["planner"] == len(PLANS)
    assert set(usage.retriever_calls_by_source) == {"wikipedia", "wikidata"}
    assert result.as_dict()["summary"]["usage"]["retriever_calls"] == usage.retriever_calls


# --- the command ---------------------------------------------------------------------------------

def test_demo_without_a_model_explains_how_to_configure_one(capsys, tmp_path):
    assert main(["demo"]) == 2
    err = capsys.readouterr().err
    assert "ATOMGRAPH_MODEL" in err and "OPENAI_API_KEY" in err and "OPENAI_BASE_URL" in err
    assert "--model-factory" in err and "Traceback" not in err
    assert not (tmp_path / ".atomgraph").exists()  # nothing was indexed


def test_demo_with_a_scripted_model_factory(capsys, demo_store):
    code = main(["demo", "--persist", demo_store.chroma_path, "--model-factory", "atomr_demo_script:demo_model"])
    out = capsys.readouterr().out
    assert code == 0
    assert "0 added, 97 already indexed" in out
    for q in load_questions():
        assert q["question"] in out
    assert "Answer: Ulm Minster" in out and "Gold:   Ulm Minster | Ulmer Münster" in out
    assert 'Search("church in Ulm", "tallest steeple of any church in the world")' in out  # the tree
    assert "[DR] [3] Given 1855 and 1479, which was founded first?" in out
    assert "mean F1 100.0" in out
    assert "Retriever calls: 48 (wikidata 24, wikipedia 24)" in out


def test_demo_json_with_the_factory_from_the_environment(capsys, monkeypatch, demo_store):
    monkeypatch.setenv("ATOMGRAPH_MODEL_FACTORY", "atomr_demo_script:demo_model")
    assert main(["demo", "--persist", demo_store.chroma_path, "--questions", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [q["predicted"] for q in data["questions"]] == ["Ulm Minster", "Munich"]  # evaluation records
    assert data["summary"]["n"] == 2 and data["summary"]["mean_f1"] == 100.0
    assert data["summary"]["indexed"]["added"] == 0
    search_node = nodes_of(data["questions"][0])[2]
    assert search_node["evidence"][0] == {**search_node["evidence"][0], "source": "wikipedia", "title": "Ulm Minster"}


def test_demo_collection_name_and_bad_question_count(capsys, demo_store):
    assert demo_store.chroma_collection == DEMO_COLLECTION
    assert main(["demo", "--questions", "0", "--model-factory", "atomr_demo_script:demo_model"]) == 2
    assert "--questions" in capsys.readouterr().err
