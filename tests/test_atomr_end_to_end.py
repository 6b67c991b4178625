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
from atomr_demo_script import PLANS, Q1, Q2, Q3, Q4, Q5, Q8, demo_model
from oxigraph_server import start_oxigraph, stop_oxigraph

from atomgraph.cli import main
from atomgraph.demo_pack import kg_path, load_passages, load_questions
from atomgraph.demo_run import DEMO_COLLECTION, arun_demo, demo_settings, demo_sources, index_demo_passages
from atomgraph.graphs.atomr import build_atomr_graph
from atomgraph.settings import Settings
from atomgraph.testing import kg_program_reply
from atomgraph.tools.base import SourceSet
from atomgraph.tools.registry import as_source_set
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
    assert all(c["error"] is None for c in out["retriever_calls"])
    # the KG answers the Relate with a short list; it has no answer for the Search (empty, no fact dump)
    assert [c["hits"] for c in out["retriever_calls"] if c["source"] == "wikidata"] == [1, 0]
    assert "Ulm Minster" in out["retrieved_titles"]
    # the Search executor was shown the passage Chroma returned, under the Wikipedia heading
    (search_prompt,) = stage_prompts(model, "search")
    shown = search_prompt[search_prompt.rfind("Retrieved Knowledge:"):]
    assert "Wikipedia Passages:\n[1] Ulm Minster | Ulm Minster is a Lutheran church" in shown
    assert "Wikidata Facts:" not in shown
    # plan, the KG query program of the Relate, 2 operators, child reasoning (two sources: used
    # both, no selection call)
    assert [c["stage"] for c in out["llm_calls"]] == ["plan", "kg_program", "relate", "search", "child_reasoning"]
    assert nodes[1]["subcalls"][0]["kg_program"] == "wikidata: model"


async def test_without_the_passage_store_the_search_node_cannot_answer(demo_store):
    """The control: with the KG alone, the 'tallest church' passage is never retrieved: the KG
    has no answer for the Search (an operator failure: direct RAG, which cannot answer), the
    root's child reasoning says Unknown and falls back to direct RAG, and the closed-book
    answer cannot answer either: an empty answer with the error set, never "Unknown"."""
    kg_only = as_source_set([wikidata_from_settings(demo_store)])
    graph, _ = graph_over(kg_only, demo_store)
    out = await graph.ainvoke({"question": Q1})
    nodes = nodes_of(out)
    assert nodes[1]["answer"] == "Ulm"  # the KG hop still works
    assert nodes[2]["fallback"] == "operator failure: no evidence from any selected source"
    assert nodes[2]["answers"] == []
    assert out["answer"] == "" and out["answers"] == [] and "no answer" in out["error"]
    assert nodes[0]["fallback"] == "child reasoning answered Unknown; closed-book answer"
    # two operators, [2]'s direct RAG, then the root's direct-RAG search with the whole question
    assert [c["query"] for c in out["retriever_calls"]][-1] == Q1
    assert by_source(out["retriever_calls"]) == {"wikidata": 4}
    assert [c["stage"] for c in out["llm_calls"]] == ["plan", "kg_program", "relate", "direct_rag", "child_reasoning",
                                                    "direct_rag", "closed_book"]
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
    assert 'A: ["1855"]' in sibling and 'A: ["1479"]' in sibling
    # the [DR] question as the authors pass it: its references as written, their answers in the pairs
    assert sibling.rstrip().endswith("Question: Given [1] and [2], which was founded first?\nAnswer:")
    assert dr["subcalls"][0]["question"] == "Given [1] and [2], which was founded first?"


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
    # one Relate over both sources; Filter: top-1 per candidate from the text source (gated),
    # one whole call to the knowledge graph (never gated)
    assert by_source(out["retriever_calls"]) == {"wikipedia": 4, "wikidata": 2}
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

def test_demo_with_an_unusable_model_explains_how_to_configure_one(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_MODEL", "gpt-4o-mini")  # an OpenAI model, but no key or server
    assert main(["demo"]) == 2
    err = capsys.readouterr().err
    assert "ATOMGRAPH_MODEL" in err and "OPENAI_API_KEY" in err and "OPENAI_BASE_URL" in err
    assert "--model-factory" in err and "Traceback" not in err
    assert not (tmp_path / ".atomgraph").exists()  # nothing was indexed


@pytest.mark.parametrize("installed", [True, False])
def test_ask_without_a_model_names_the_local_models(capsys, monkeypatch, installed):
    """With nothing configured, `atomgraph ask` names the in-process models as options: the packaged
    instruction-tuned one (installed, or the extra that installs it) and the bundled base model."""
    monkeypatch.setattr("atomgraph.local.packaged.packaged_installed", lambda name: installed)
    assert main(["ask", "Who advised Werner Heisenberg?"]) == 2
    err = capsys.readouterr().err
    assert "no chat model is configured" in err and "ATOMGRAPH_MODEL=local:qwen2.5-1.5b" in err
    assert ("installed" in err) if installed else ("pip install 'atomgraph[qwen]'" in err)
    assert "ATOMGRAPH_MODEL=local " in err and "Traceback" not in err


def test_demo_without_a_model_runs_the_bundled_local_model(capsys, monkeypatch):
    """No model configured: the bundled local model, said in one line, on fewer questions
    (the real run is tests/test_local_model.py's end-to-end test)."""
    import atomgraph.demo_run as demo_run
    from atomgraph.commands.demo import LOCAL_DEFAULT_QUESTIONS, LOCAL_NOTICE

    seen = {}

    def fake_run_demo(settings, **kwargs):
        seen.update(settings=settings, **kwargs)
        record = {"id": "q1", "question": "Q?", "gold": ["A"], "predicted": "", "metrics": {"f1": 0.0, "em": 0.0},
                  "error": "the plan could not be parsed", "usage": {"completion_tokens": 40}, "trace": {}}
        return demo_run.DemoResult(records=[record])  # a question's error is data: the demo ran

    monkeypatch.setattr(demo_run, "run_demo", fake_run_demo)
    monkeypatch.setattr("atomgraph.local.packaged.packaged_installed", lambda name: False)  # no `qwen` extra
    assert main(["demo"]) == 0
    err = capsys.readouterr().err
    assert err.count(LOCAL_NOTICE) == 1 and "Traceback" not in err
    assert f"Running the first {LOCAL_DEFAULT_QUESTIONS} of the demo questions" in err
    assert seen["settings"].model == "local" and seen["settings"].structured_output
    assert seen["limit"] == LOCAL_DEFAULT_QUESTIONS
    assert type(seen["model"]["planner"]).__name__ == "ChatLocalLlama"


def test_demo_without_a_model_prefers_the_instruction_tuned_model_when_installed(capsys, monkeypatch):
    """With the `qwen` extra installed the demo runs the packaged instruction-tuned model, says so,
    and keeps the stages' own output caps (the base model's short ones are for the base model)."""
    import atomgraph.demo_run as demo_run
    from atomgraph.commands.demo import INSTRUCT_NOTICE, INSTRUCT_STAGE_CAPS
    from atomgraph.models import INSTRUCT_MODEL

    seen = {}

    def fake_run_demo(settings, **kwargs):
        seen.update(settings=settings, **kwargs)
        record = {"id": "q1", "question": "Q?", "gold": ["A"], "predicted": "A", "metrics": {"f1": 1.0, "em": 1.0},
                  "error": None, "usage": {"completion_tokens": 4}, "trace": {}}
        return demo_run.DemoResult(records=[record])

    monkeypatch.setattr(demo_run, "run_demo", fake_run_demo)
    monkeypatch.setattr(demo_run, "demo_models", lambda settings, factory=None: {"planner": "stand-in"})
    monkeypatch.setattr("atomgraph.local.packaged.packaged_installed", lambda name: True)
    assert main(["demo"]) == 0
    err = capsys.readouterr().err
    assert err.count(INSTRUCT_NOTICE) == 1 and "Traceback" not in err
    assert seen["settings"].model == INSTRUCT_MODEL == "local:qwen2.5-1.5b"
    assert seen["settings"].stage_max_tokens == INSTRUCT_STAGE_CAPS == {} and seen["limit"] == 2  # the stages' caps


def test_demo_exit_status_is_about_running_not_answers(capsys, monkeypatch):
    """Exit 0 when the questions ran (errors included, shown as data); 1 with the reason when
    nothing could run (no question, or every question failed before any reply)."""
    import atomgraph.demo_run as demo_run

    def rec(error, completion_tokens):
        return {"id": "q", "question": "Q?", "gold": ["A"], "predicted": "", "metrics": {"f1": 0.0, "em": 0.0},
                "error": error, "usage": {"completion_tokens": completion_tokens}, "trace": {}}

    outcomes = iter([[rec("unreadable plan", 30), rec(None, 10)], [], [rec("connection refused", 0)] * 2])
    monkeypatch.setattr(demo_run, "run_demo", lambda settings, **kw: demo_run.DemoResult(records=next(outcomes)))
    factory = ["--model-factory", "atomr_demo_script:demo_model"]
    assert main(["demo", *factory]) == 0
    out = capsys.readouterr()
    assert "Demo summary: 2 questions: 0 answered, 1 without an answer, 1 with errors" in out.out
    assert "nothing could run" not in out.err
    assert main(["demo", *factory]) == 1
    assert "nothing could run: no demo question ran" in capsys.readouterr().err
    assert main(["demo", *factory]) == 1
    assert "every question failed before the model replied (first: connection refused)" in capsys.readouterr().err


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
    assert "Retriever calls: 48 (wikidata 23, wikipedia 25)" in out


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


async def test_the_executor_fills_the_kg_query_program_by_default(demo_store, store_sources):
    """Each Relate sub-call sent to the KG asks the executor for a typed program (one call,
    under a JSON-schema constraint); the source compiles and runs it (no SPARQL from the model)
    and the executor reads its short answer list. kg_program_by_model=false reads the program
    off the operator's arguments: the same answers, one call less per Relate sub-call."""
    graph, model = graph_over(store_sources, demo_store)
    out = await graph.ainvoke({"question": Q2})
    assert out["answer"] == "Munich"
    stages = [c["stage"] for c in out["llm_calls"]]
    assert stages == ["plan", "kg_program", "relate", "kg_program", "relate", "child_reasoning"]
    programs = [c for c in model.calls if c["stage"] == "kg_program"]
    assert 'Operator: Relate("Arnold Sommerfeld", "place of death")' in programs[1]["prompt"]  # [1] resolved
    kg = [c for c in out["retriever_calls"] if c["source"] == "wikidata"]
    assert [c["query"] for c in kg] == [
        'program {"entity":"Werner Heisenberg","relations":["doctoral advisor"],"constraint":null}',
        'program {"entity":"Arnold Sommerfeld","relations":["place of death"],"constraint":null}']
    assert [c["hits"] for c in kg] == [1, 1]
    nodes = nodes_of(out)
    assert [n["subcalls"][0]["kg_program"] for n in (nodes[1], nodes[2])] == ["wikidata: model"] * 2
    assert "(Werner Heisenberg, doctoral advisor, Arnold Sommerfeld)" in [e["text"] for e in nodes[1]["evidence"]]

    ruled, _ = graph_over(store_sources, demo_store)
    off = await ruled.ainvoke({"question": Q2}, {"configurable": {"kg_program_by_model": False}})
    assert off["answer"] == "Munich"
    assert [c["stage"] for c in off["llm_calls"]] == ["plan", "relate", "relate", "child_reasoning"]
    assert [c["hits"] for c in off["retriever_calls"] if c["source"] == "wikidata"] == [1, 1]
    assert all(not c["query"].startswith("program") for c in off["retriever_calls"])
    assert {s["kg_program"] for n in nodes_of(off).values() for s in n["subcalls"]} == {""}


def program_for_heisenberg(reply: str):
    """A kg_program script: ``reply`` for the sub-call about Werner Heisenberg, else the
    program read off the operator line."""
    return lambda prompt: reply if "Werner Heisenberg" in prompt.rsplit("Operator:", 1)[-1] else kg_program_reply(prompt)


@pytest.mark.parametrize("reply, why", [
    # a demonstration's program copied: its entity is not the sub-question's
    ('{"entity": "Reel Zombies", "relations": ["director"], "constraint": null}', "is not named in the sub-question"),
    # no JSON at all
    ("The doctoral advisor of Heisenberg was Sommerfeld.", "no usable reply"),
    # a relation the graph has no property for
    ('{"entity": "Werner Heisenberg", "relations": ["zzz qqq"], "constraint": null}',
     "cannot be compiled: no property of the graph is named 'zzz qqq'"),
    # an entity the graph has no item for
    ('{"entity": "Werner Heisenberg Jr", "relations": ["doctoral advisor"], "constraint": null}',
     "cannot be compiled: no item of the graph is named 'Werner Heisenberg Jr'"),
])
async def test_an_unusable_program_gives_way_to_the_rule_built_one(demo_store, store_sources, reply, why):
    graph, model = graph_over(store_sources, demo_store)
    model.stages["kg_program"] = program_for_heisenberg(reply)
    out = await graph.ainvoke({"question": Q2})
    assert out["answer"] == "Munich"
    first = nodes_of(out)[1]
    (sub,) = first["subcalls"]
    assert sub["kg_program"].startswith("wikidata: rules (") and why in sub["kg_program"]
    assert any(why in n and "read off the operator's arguments" in n for n in first["notes"])
    # the rule-built program still answers from the KG: one retrieval, one hit, no program label
    kg = [c for c in out["retriever_calls"] if c["source"] == "wikidata"]
    assert kg[0]["query"] == 'Relate(Werner Heisenberg, doctoral advisor)' or not kg[0]["query"].startswith("program")
    assert kg[0]["hits"] == 1
    assert kg[1]["query"].startswith("program {") and nodes_of(out)[2]["subcalls"][0]["kg_program"] == "wikidata: model"
    assert [c["stage"] for c in out["llm_calls"]].count("kg_program") == 2


async def test_a_program_that_finds_nothing_stays_empty(demo_store, store_sources):
    """A usable program with no answer in the graph: an empty KG answer (no rule-built retry,
    no dump of the entity's facts); the executor sees the passages alone, which do not say
    it, and the node stays empty (no fallback: the passages were evidence)."""
    graph, model = graph_over(store_sources, demo_store)
    model.stages["kg_program"] = program_for_heisenberg(
        '{"entity": "Werner Heisenberg", "relations": ["inception"], "constraint": null}')
    out = await graph.ainvoke({"question": Q2})
    first = nodes_of(out)[1]
    assert first["subcalls"][0]["kg_program"] == "wikidata: model"
    assert [c["hits"] for c in out["retriever_calls"] if c["source"] == "wikidata"][0] == 0
    assert first["evidence"] and all(e["source"] == "wikipedia" for e in first["evidence"])
    assert first["answers"] == [] and first["fallback"] is None
    assert not any("read off the operator's arguments" in n for n in first["notes"])


async def test_a_two_hop_program_over_the_loopback_server(demo_store, tmp_path_factory):
    """A model program with a relation path, compiled and run by the Oxigraph server on 127.0.0.1."""
    server = start_oxigraph(kg_path(), tmp_path_factory.mktemp("oxigraph-program"))
    try:
        settings = demo_store.model_copy(update={"wikidata_file": None, "wikidata_endpoint": server.url})
        graph, model = graph_over(demo_sources(settings), settings)
        model.stages["kg_program"] = program_for_heisenberg(
            '{"entity": "Werner Heisenberg", "relations": ["doctoral advisor", "place of death"], "constraint": null}')
        out = await graph.ainvoke({"question": Q2})
    finally:
        stop_oxigraph(server)
    kg = [c for c in out["retriever_calls"] if c["source"] == "wikidata"]
    assert all(c["error"] is None for c in kg) and kg[0]["hits"] == 1
    assert "(Arnold Sommerfeld, place of death, Munich)" in [e["text"] for e in nodes_of(out)[1]["evidence"]]


async def test_kg_programs_fan_out_one_entity_each(demo_store, store_sources):
    """Q8's "When was [1] born?" over Marie Curie's two daughters: one program call, one KG
    query and one executor call per daughter; no program and no query names both."""
    graph, model = graph_over(store_sources, demo_store)
    out = await graph.ainvoke({"question": Q8})
    assert out["answer"] == "1935"
    daughters = nodes_of(out)[1]["answers"]
    assert len(daughters) == 2
    born = nodes_of(out)[2]
    assert [s["args"][0] for s in born["subcalls"]] == daughters
    assert all(s["kg_program"] == "wikidata: model" for s in born["subcalls"])
    operator_lines = [c["prompt"].rsplit("Operator:", 1)[-1] for c in model.calls if c["stage"] == "kg_program"]
    kg_queries = [c["query"] for c in out["retriever_calls"] if c["source"] == "wikidata"]
    for text in operator_lines + kg_queries + [c["query"] for c in out["retriever_calls"]]:
        assert sum(d in text for d in daughters) <= 1, text
    births = [line for line in operator_lines if "date of birth" in line]
    assert len(births) == 2 and all(sum(d in line for d in daughters) == 1 for line in births)
    assert sum("date of birth" in q and q.startswith("program {") for q in kg_queries) == 2
