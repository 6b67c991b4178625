"""The method kit: run parameters (settings < context < configurable), prompt stages as tagged
Runnables, plan review with interrupt(), unreadable answers, the indexing graph."""

from __future__ import annotations

import json

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.exceptions import OutputParserException
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from atomgraph.errors import ConfigError
from atomgraph.graphs.atomr import build_atomr_graph
from atomgraph.graphs.baselines import build_rag_graph
from atomgraph.graphs.wikipedia_index import build_wikipedia_index_graph
from atomgraph.prompts.atomr.stages import DIRECT_RAG_STAGE, STAGES
from atomgraph.settings import Settings, get_settings
from atomgraph.state.atomr import AtomRContext
from atomgraph.state.run import OUTPUT_KEYS, context_with_defaults, resolve_params
from atomgraph.testing import ScriptedChatModel, answer_reply, atomr_scripted_model
from atomgraph.tools.memory_source import InMemorySource

Q = "Who directed the film Kuhle Wampe?"
PLAN = {Q: ["1. What is Kuhle Wampe?", "2. Who directed [1]?"],
        "1. What is Kuhle Wampe?": 'Search("Kuhle Wampe")', "2. Who directed [1]?": 'Relate([1], "director")'}
PASSAGES = [{"title": "Kuhle Wampe", "text": "Kuhle Wampe is a 1932 German film directed by Slatan Dudow."},
            {"title": "Slatan Dudow", "text": "Slatan Dudow was a Bulgarian film director."}]


def wiki():
    return [InMemorySource(PASSAGES, name="wikipedia")]


def answers(stage, text):
    return answer_reply("Kuhle Wampe" if stage == "search" else "Slatan Dudow")


# --- run parameters ----------------------------------------------------------------------------

def test_parameters_settings_then_context_then_configurable(monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_ATOMR__TOP_K", "4")
    base = get_settings().atomr
    assert resolve_params(AtomRContext, base).top_k == 4
    assert resolve_params(AtomRContext, base, {"top_k": 6}).top_k == 6
    assert resolve_params(AtomRContext, base, {"top_k": 6}, {"top_k": "7"}).top_k == 7
    with pytest.raises(ConfigError, match="top_k"):
        resolve_params(AtomRContext, base, {"top_k": 0})
    with pytest.raises(ConfigError, match="unknown AtomRContext parameter"):
        resolve_params(AtomRContext, base, {"top_kk": 1})


def test_context_schema_defaults_are_the_settings():
    schema = context_with_defaults(AtomRContext, AtomRContext(top_k=9, max_parallel=2))
    assert schema.__name__ == "AtomRContext" and issubclass(schema, AtomRContext)
    assert schema().top_k == 9 and schema(top_k=1).max_parallel == 2
    assert context_with_defaults(AtomRContext, AtomRContext()) is AtomRContext
    graph = build_atomr_graph(model=ScriptedChatModel(default="x"), sources=[],
                              settings=Settings(cache=False, atomr=AtomRContext(top_k=9)))
    props = graph.get_context_jsonschema()["properties"]
    assert props["top_k"]["default"] == 9 and "Passages" in props["top_k"]["description"]


async def test_a_run_context_reaches_the_nodes():
    model = ScriptedChatModel(stages={"rag": "So the answer is: x"})
    many = [{"title": f"P{i}", "text": f"passage {i} about the question"} for i in range(8)]
    graph = build_rag_graph(model=model, sources=[InMemorySource(many, name="wikipedia")], settings=Settings(cache=False))
    assert len((await graph.ainvoke({"question": "question?"}))["retrieved_titles"]) == 3  # [rag] top_k default
    out = await graph.ainvoke({"question": "question?"}, context={"top_k": 5, "demonstrations": 0})
    assert len(out["retrieved_titles"]) == 5 and len(out["retrieved_ids"]) == 5
    assert "Examples" not in model.calls[-1]["prompt"]
    out = await graph.ainvoke({"question": "question?"}, config={"configurable": {"top_k": 2}})
    assert len(out["retrieved_titles"]) == 2
    assert set(out) == set(OUTPUT_KEYS)


# --- stages ------------------------------------------------------------------------------------

def test_a_stage_is_a_tagged_runnable_with_a_cap():
    model = ScriptedChatModel(stages={"direct_rag": answer_reply("Slatan Dudow")})
    value = DIRECT_RAG_STAGE.chain(model).invoke({"question": "Who?", "knowledge": "(none)"})
    assert value.answers == ["Slatan Dudow"]
    assert model.calls[-1]["stage"] == "direct_rag" and model.calls[-1]["max_tokens"] == DIRECT_RAG_STAGE.max_tokens
    with pytest.raises(OutputParserException):
        DIRECT_RAG_STAGE.chain(ScriptedChatModel(default="   ")).invoke({"question": "Who?", "knowledge": "-"})
    assert all(s.max_tokens > 0 and s.name == name for name, s in STAGES.items())


async def test_unreadable_direct_rag_output_is_no_answer():
    """Seen with a small local model: the reply was a passage of evidence, not an answer."""
    passage = "[3] Albert Einstein | Albert Einstein (1879–1955) was a German-born theoretical physicist"
    # a plan over max_nodes is answered by direct RAG on the question
    model = ScriptedChatModel(stages={"plan": json.dumps(PLAN), "direct_rag": passage})
    out = await build_atomr_graph(model=model, sources=wiki(), settings=Settings(cache=False)).ainvoke(
        {"question": Q}, {"configurable": {"max_nodes": 1, "closed_book_root": False}})
    assert out["answers"] == [] and "Einstein" not in out["answer"]
    root = out["trace"]["nodes"][0]
    assert any("direct RAG gave no answer: unreadable model output" in n for n in root["notes"])
    assert out["llm_calls"][-1]["parse_error"]


# --- plan review ---------------------------------------------------------------------------------

async def test_plan_review_pauses_and_runs_the_edited_tree():
    model = atomr_scripted_model({Q: PLAN}, answer=answers, sources_reply="Wikipedia")
    graph = build_atomr_graph(model=model, sources=wiki(), settings=Settings(cache=False), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "review-1"}}
    first = await graph.ainvoke({"question": Q}, config=config, context={"review_plan": True})
    pending = first["__interrupt__"][0].value
    assert pending["plan"][Q] == ["1. What is Kuhle Wampe?", "2. Who directed [1]?"]
    assert [c["stage"] for c in model.calls] == ["plan"]  # nothing ran past the plan
    edited = dict(pending["plan"])
    edited["1. What is Kuhle Wampe?"] = 'Search("Kuhle Wampe (film)")'
    edited["2. Who directed [1]?"] = 'Search("director of [1]")'  # one leaf's operator changed
    out = await graph.ainvoke(Command(resume=edited), config=config, context={"review_plan": True})
    ops = [n["operator"] for n in out["trace"]["nodes"] if n["operator"]]
    assert ops == ['Search("Kuhle Wampe (film)")', 'Search("director of Kuhle Wampe")']
    assert "plan edited in review" in out["trace"]["repairs"]
    assert [c["stage"] for c in model.calls].count("relate") == 0


async def test_plan_review_rejects_a_broken_edit_and_asks_again():
    model = atomr_scripted_model({Q: PLAN}, answer=answers, sources_reply="Wikipedia")
    graph = build_atomr_graph(model=model, sources=wiki(), settings=Settings(cache=False), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "review-2"}}
    await graph.ainvoke({"question": Q}, config=config, context={"review_plan": True})
    again = await graph.ainvoke(Command(resume={Q: ["1. A?"], "1. A?": ["2. B?"], "2. B?": ["1. A?"]}),
                                config=config, context={"review_plan": True})
    assert again["__interrupt__"][0].value["problem"].startswith("the plan could not be parsed")
    out = await graph.ainvoke(Command(resume=True), config=config, context={"review_plan": True})
    assert out["answer"] == "Slatan Dudow"


# --- the indexing graph --------------------------------------------------------------------------

def test_wikipedia_index_graph_indexes_and_reports_bad_input(tmp_path, monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_CHROMA_PATH", str(tmp_path / "chroma"))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(p) for p in PASSAGES) + "\n")
    graph = build_wikipedia_index_graph(embeddings=DeterministicFakeEmbedding(size=16))
    out = graph.invoke({"inputs": [str(corpus)], "collection": "kit"}, context={"batch_size": 1})
    assert out["error"] is None and out["stats"]["added"] == 2 and out["stats"]["count"] == 2
    again = graph.invoke({"inputs": [str(corpus)], "collection": "kit"})
    assert again["stats"]["added"] == 0 and again["stats"]["skipped"] == 2
    bad = graph.invoke({"inputs": [str(tmp_path / "missing.jsonl")], "collection": "kit"})
    assert "no such file" in bad["error"]


def test_a_copied_evidence_line_is_not_an_answer_list():
    from atomgraph.errors import ParseError
    from atomgraph.prompts.atomr.stages import parse_answer

    seen = "Answer: [3] Albert Einstein | Albert Einstein (1879–1955) was a German-born theoretical physicist"
    for text in (seen, seen.removeprefix("Answer: ")):
        with pytest.raises(ParseError, match="passage of the retrieved knowledge"):
            parse_answer(text)
    listed = parse_answer("So the answer is: (1) Paraphrase Answer: Unknown; (2) Answer List: "
                          "[2] Ulm Minster | Ulm Minster is a Lutheran church")
    assert listed.answers == [] and listed.unknown
    assert parse_answer('Answer: ["3"]').answers == ["3"]
