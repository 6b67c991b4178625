"""KAR³'s QA loop over a real Chroma atom index (the demo pack, atomized by the scripted
atomizer): each loop exit, each backup in order, unreadable output everywhere, accounting."""

from __future__ import annotations

import json

import pytest

from atomgraph.graphs.kar3 import build_kar3_graph
from atomgraph.testing import ScriptedChatModel
from atomgraph.testing_kar3 import kar3_scripted_model
from atomgraph.tools.atom_index import atoms_name

from kar3_fixtures import PLAN, QUESTION, build_demo_index, demo_source, settings_at


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kar3_loop")
    out = build_demo_index(folder)
    assert out["error"] is None and out["stats"]["atomized"] == 97
    return folder


def run(index_dir, model, question=QUESTION, **context):
    graph = build_kar3_graph(model=model, sources=[demo_source(index_dir)], settings=settings_at(index_dir))
    return graph.invoke({"question": question}, context=context)


def stages(model) -> list[str]:
    return [c["stage"] for c in model.calls]


def test_two_hops_then_enough(index_dir):
    model = kar3_scripted_model(PLAN, answer="Munich")
    out = run(index_dir, model)
    trace = out["trace"]
    assert out["answer"] == "Munich" and out["error"] is None
    assert trace["method"] == "kar3" and trace["exit"] == "enough"
    rounds = trace["rounds"]
    assert [r["proposals"] for r in rounds] == [PLAN[QUESTION][0], PLAN[QUESTION][1], []]
    assert rounds[2]["enough"] and rounds[2]["ended"] == "enough"
    for r in rounds[:2]:
        assert r["hits"] and all(h["score"] >= 0.5 and h["chunk_id"] for h in r["hits"])
        assert [h["score"] for h in r["hits"]] == sorted((h["score"] for h in r["hits"]), reverse=True)
        assert r["choice"] == r["hits"][0]  # the scripted selector picks candidate 1
        assert r["tiers"] == [{"via": "proposal", "queries": 1, "hits": len(r["hits"])}]
    assert rounds[1]["choice"]["title"] == "Arnold Sommerfeld" and "died in Munich" in rounds[1]["choice"]["text"]
    assert out["retrieved_ids"] == [r["choice"]["chunk_id"] for r in rounds[:2]]
    assert stages(model) == ["propose", "select", "propose", "select", "propose", "answer"]
    # the answerer sees the chosen chunks; the second proposer call sees the first chunk
    assert "died in Munich" in model.calls[-1]["prompt"]
    assert rounds[0]["choice"]["text"][:40] in model.calls[2]["prompt"]


def test_exit_when_n_chunks_are_chosen(index_dir):
    plan = {QUESTION: [["Who was the doctoral advisor of Werner Heisenberg?"]] * 9}
    model = kar3_scripted_model(plan, answer="Munich")
    out = run(index_dir, model, max_chunks=2)
    assert out["trace"]["exit"] == "max_chunks" and len(out["trace"]["rounds"]) == 2
    assert stages(model).count("propose") == 2 and len(out["retrieved_ids"]) == 2
    assert len(set(out["retrieved_ids"])) == 2  # atoms of a chosen chunk are dropped in later rounds
    first, second = out["trace"]["rounds"]
    assert first["choice"]["chunk_id"] not in {h["chunk_id"] for h in second["hits"]}


def test_exit_when_the_proposer_says_enough_at_once(index_dir):
    model = kar3_scripted_model({QUESTION: []}, answer="Munich")
    out = run(index_dir, model)
    assert out["trace"]["exit"] == "enough" and out["retriever_calls"] == []
    assert stages(model) == ["propose", "answer"] and "(none yet)" in model.calls[-1]["prompt"]


def test_exit_when_nothing_is_retrieved(index_dir):
    model = kar3_scripted_model({QUESTION: [["zqxj vbnm wplk?"]]}, answer="unknown")
    out = run(index_dir, model, delta=0.99, backups=False)
    r = out["trace"]["rounds"][0]
    assert out["trace"]["exit"] == "nothing_retrieved" and r["ended"] == "nothing_retrieved"
    assert r["tiers"] == [{"via": "proposal", "queries": 1, "hits": 0}] and r["hits"] == []
    assert any("no atomic question with cosine ≥ δ=0.99" in n for n in r["notes"])
    assert stages(model) == ["propose", "answer"]
    assert out["trace"]["exit_text"].startswith("nothing retrieved")


def test_backup_one_the_question_against_atoms(index_dir):
    model = kar3_scripted_model({QUESTION: [["zqxj vbnm wplk?"]]}, answer="Munich")
    out = run(index_dir, model, max_chunks=1)
    r = out["trace"]["rounds"][0]
    assert [t["via"] for t in r["tiers"]] == ["proposal", "question"]
    assert r["tiers"][0]["hits"] == 0 and r["tiers"][1]["hits"] > 0
    assert all(h["via"] == "question" and h["query"] == QUESTION and h["score"] >= 0.5 for h in r["hits"])
    assert [c["source"] for c in out["retriever_calls"]] == ["atoms", "atoms"]


def test_backup_two_chunks_scored_by_their_best_atom(index_dir):
    model = kar3_scripted_model({QUESTION: [["zqxj vbnm wplk?"]]}, answer="Munich")
    out = run(index_dir, model, max_chunks=1, delta=0.99, chunk_top_k=3)
    r = out["trace"]["rounds"][0]
    assert [(t["via"], t["hits"] > 0) for t in r["tiers"]] == [("proposal", False), ("question", False), ("chunk", True)]
    assert len(r["hits"]) == 3 and all(h["via"] == "chunk" for h in r["hits"])
    # each chunk's score is the cosine of the question and the best of that chunk's atoms
    source = demo_source(index_dir)
    emb = source.index.embeddings
    q = emb.embed_query(QUESTION)
    assert source.index.open()
    atoms = source.index._atoms
    for h in r["hits"]:
        got = atoms.get(where={"chunk_id": h["chunk_id"]}, include=["embeddings", "documents"])
        best = max(range(len(got["ids"])), key=lambda i: sum(a * b for a, b in zip(q, got["embeddings"][i])))
        assert h["atom"] == got["documents"][best]
        assert h["score"] == pytest.approx(sum(a * b for a, b in zip(q, got["embeddings"][best])), abs=1e-3)


def test_selector_rejecting_atoms_is_offered_chunk_hits(index_dir):
    replies = iter(['{"thinking": "none fits", "question_idx": 0}', '{"thinking": "this chunk", "question_idx": 2}'])
    model = kar3_scripted_model(PLAN, answer="Munich", select=lambda p: next(replies))
    out = run(index_dir, model, max_chunks=1)
    r = out["trace"]["rounds"][0]
    assert r["chunk_hits"] and r["choice"] == r["chunk_hits"][1] and r["choice"]["via"] == "chunk"
    assert [t["via"] for t in r["tiers"]] == ["proposal", "chunk"]
    assert any("chunk-level hits are offered" in n for n in r["notes"])
    assert stages(model) == ["propose", "select", "select", "answer"]


def test_exit_when_the_selector_chooses_none(index_dir):
    model = kar3_scripted_model(PLAN, answer="unknown", select='{"thinking": "nothing helps", "question_idx": 0}')
    out = run(index_dir, model)
    r = out["trace"]["rounds"][0]
    assert out["trace"]["exit"] == "selector_none" and r["choice"] is None and r["ended"] == "selector_none"
    assert stages(model) == ["propose", "select", "select", "answer"] and out["retrieved_ids"] == []
    assert "chunks" in [c["source"] for c in out["retriever_calls"]]


def test_unreadable_output_at_every_stage(index_dir):
    model = ScriptedChatModel(default="")
    out = run(index_dir, model, max_chunks=2)
    trace = out["trace"]
    assert out["answer"] == "" and out["error"].startswith("answer: unreadable model output")
    assert trace["exit"] == "max_chunks"
    for r in trace["rounds"]:
        assert r["proposals"] == [QUESTION]  # the question stands in for unreadable proposals
        assert any(n.startswith("proposer: unreadable model output") for n in r["notes"])
        assert any(n.startswith("selector: unreadable model output") for n in r["notes"])
        assert r["choice"] == r["hits"][0]
    assert trace["usage"]["unreadable"] == trace["usage"]["llm_calls"] == 5
    assert all(c["parse_error"] for c in out["llm_calls"])


def test_failing_model_calls_are_recorded_not_raised(index_dir):
    model = ScriptedChatModel(default=ConnectionError("server down"))
    out = run(index_dir, model, max_chunks=1)
    assert out["answer"] == "" and "model call failed" in out["error"]
    assert out["trace"]["usage"]["failed"] == 3


def test_llm_calls_and_tokens_are_accounted(index_dir):
    model = kar3_scripted_model(PLAN, answer="Munich")
    out = run(index_dir, model)
    usage = out["trace"]["usage"]
    assert usage["llm_calls"] == len(out["llm_calls"]) == len(model.calls) == 6
    assert usage["prompt_tokens"] == sum(c["prompt_tokens"] for c in out["llm_calls"]) > 0
    assert usage["completion_tokens"] == sum(c["completion_tokens"] for c in out["llm_calls"]) > 0
    assert usage["calls_by_stage"] == {"propose": 3, "select": 2, "answer": 1}
    assert {c["role"] for c in out["llm_calls"]} == {"proposer", "selector", "answerer"}


def test_no_index_is_a_clear_error(tmp_path):
    model = kar3_scripted_model(PLAN, answer="Munich")
    graph = build_kar3_graph(model=model, settings=settings_at(tmp_path / "empty", chroma_collection="nothing"))
    out = graph.invoke({"question": QUESTION})
    assert out["trace"]["exit"] == "no_index" and "atomgraph index atoms" in out["error"]
    assert stages(model) == ["answer"]


def test_invalid_question(index_dir):
    model = kar3_scripted_model(PLAN)
    out = run(index_dir, model, question="   ")
    assert out["error"].startswith("invalid question") and model.calls == []


def test_context_schema_and_cosine_space(index_dir):
    graph = build_kar3_graph(model=kar3_scripted_model(), sources=[demo_source(index_dir)])
    props = graph.get_context_jsonschema()["properties"]
    for name in ("max_chunks", "atom_top_k", "delta", "chunk_top_k", "atomizer_temperature", "atomizer_concurrency"):
        assert props[name].get("description")
    assert props["max_chunks"]["default"] == 5 and props["atom_top_k"]["default"] == 4 and props["delta"]["default"] == 0.5
    assert props["atomizer_temperature"]["default"] == 0.7
    import chromadb

    client = chromadb.PersistentClient(path=str(index_dir))
    for name in ("demo", atoms_name("demo")):
        conf = client.get_collection(name, embedding_function=None).configuration
        assert conf["hnsw"]["space"] == "cosine"


async def test_atomizer_temperature_is_bound_only_for_the_atomizer_call():
    from langchain_openai import ChatOpenAI

    from atomgraph.models import with_temperature
    from atomgraph.nodes.kar3.common import Kar3Runtime
    from atomgraph.prompts.kar3.stages import ATOMIZE_STAGE, PROPOSE_STAGE

    hot = with_temperature(ChatOpenAI(model="gpt-4o", api_key="x", temperature=0), 0.7)
    assert hot.temperature == 0.7
    model = kar3_scripted_model()
    rt = Kar3Runtime(model, [])
    await rt.ask(ATOMIZE_STAGE, {"content": "Title | text"}, None, temperature=0.7)
    await rt.ask(PROPOSE_STAGE, {"question": "q?", "context": "(none yet)"}, None)
    assert [c.get("temperature") for c in model.calls] == [0.7, None]


def test_the_loop_is_a_visible_conditional_edge():
    from atomgraph.graphs import kar3, kar3_index

    edges = {(e.source, e.target, e.conditional) for e in kar3.graph.get_graph().edges}
    assert {("propose", "retrieve", True), ("retrieve", "select", True), ("select", "propose", True),
            ("propose", "answer", True), ("retrieve", "answer", True), ("select", "answer", True)} <= edges
    assert {n for n in kar3_index.graph.get_graph().nodes} >= {"load", "atomize"}
