"""KAR³ through the registry: ``ask --method kar3``, ``eval run --method kar3`` (scripted
rules), and the atom index as a knowledge source for ATOMR, compared on the same questions."""

from __future__ import annotations

import asyncio
import json

import pytest

from atomgraph.cli import main
from atomgraph.evaluation.datasets import Example
from atomgraph.evaluation.runner import EvalOptions, arun_eval
from atomgraph.graphs.atomr import build_atomr_graph
from atomgraph.graphs.registry import method_descriptions
from atomgraph.testing import answer_reply, atomr_scripted_model, kar3_scripted_model
from atomgraph.tools.registry import build_sources

from kar3_fixtures import PLAN, QUESTION, build_demo_index, demo_source, settings_at

ATOMR_PLAN = {QUESTION: ["1. Who was the doctoral advisor of Werner Heisenberg?", "2. In which city did [1] die?"],
              "1. Who was the doctoral advisor of Werner Heisenberg?": 'Relate("Werner Heisenberg", "doctoral advisor")',
              "2. In which city did [1] die?": 'Relate([1], "place of death")'}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kar3_methods")
    assert build_demo_index(folder)["error"] is None
    return folder


def atomr_reader(stage: str, prompt: str) -> str:
    """Answers only from what the prompt holds (so a right answer proves the retrieval)."""
    if stage == "relate" and "doctoral advisor" in prompt:
        return answer_reply("Arnold Sommerfeld") if "Sommerfeld supervised" in prompt or "under Arnold Sommerfeld" in prompt else answer_reply()
    if stage == "relate" and "place of death" in prompt:
        return answer_reply("Munich") if "died in Munich" in prompt else answer_reply()
    return answer_reply("Munich") if "Munich" in prompt else answer_reply()


def test_registered():
    assert "kar3" in method_descriptions() and method_descriptions()["kar3"].startswith("KAR³")


def test_atoms_source_from_settings(index_dir):
    sources = build_sources(settings_at(index_dir, chroma_collection="demo"), ["atoms"])
    assert list(sources.available) == ["atoms"]
    hits = sources.get("atoms").search("Where did Arnold Sommerfeld die?", k=3)
    assert len(hits) == 3 and len({h.id for h in hits}) == 3
    assert "died in Munich" in hits[0].text and hits[0].metadata["atom"] and hits[0].score >= 0.5
    missing = build_sources(settings_at(index_dir, chroma_collection="absent"), ["atoms"])
    assert "atomgraph index atoms" in missing.unavailable["atoms"]


def test_atomr_retrieves_through_atomic_questions(index_dir):
    model = atomr_scripted_model({QUESTION: ATOMR_PLAN}, answer=atomr_reader, sources_reply="atoms")
    graph = build_atomr_graph(model=model, sources=[demo_source(index_dir)], settings=settings_at(index_dir))
    out = graph.invoke({"question": QUESTION})
    assert out["answer"] == "Munich"
    assert {c["source"] for c in out["retriever_calls"]} == {"atoms"}
    assert "Arnold Sommerfeld" in out["retrieved_titles"]


def test_kar3_and_atomr_on_the_same_questions_in_one_run(index_dir, tmp_path):
    examples = [Example(id="demo-2", question=QUESTION, answers=["Munich"])]
    source = demo_source(index_dir)

    async def both():
        kar3 = await arun_eval("kar3", examples, tmp_path / "kar3", EvalOptions(
            model=kar3_scripted_model(PLAN, answer="Munich"), sources=[source], settings=settings_at(index_dir),
            progress=False))
        atomr = await arun_eval("atomr", examples, tmp_path / "atomr", EvalOptions(
            model=atomr_scripted_model({QUESTION: ATOMR_PLAN}, answer=atomr_reader, sources_reply="atoms"),
            sources=[source], settings=settings_at(index_dir), progress=False))
        return kar3, atomr

    kar3, atomr = asyncio.run(both())
    assert kar3.f1 == atomr.f1 == 100.0
    rec = kar3.records[0]
    assert rec["usage"]["llm_calls"] == rec["trace"]["usage"]["llm_calls"] == 6
    assert rec["usage"]["prompt_tokens"] == rec["trace"]["usage"]["prompt_tokens"] > 0
    assert rec["usage"]["llm_calls_by_role"] == {"proposer": 3, "selector": 2, "answerer": 1}
    assert rec["retrieved_titles"][-1] == "Munich"  # "Arnold Sommerfeld and Werner Heisenberg both died in Munich"
    assert atomr.records[0]["usage"]["retriever_calls_by_source"] == {"atoms": 2}


def test_cli_ask_and_eval_with_scripted_rules(index_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_CHROMA_PATH", str(index_dir))
    monkeypatch.setenv("ATOMGRAPH_CHROMA_COLLECTION", "demo")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([
        ["stage:propose", json.dumps({"thinking": "advisor first", "sub_questions": ["In which city did Arnold Sommerfeld die?"]})],
        ["stage:select", json.dumps({"thinking": "", "question_idx": 1})],
        ["stage:answer", json.dumps({"rationale": "", "answer": "Munich"})],
    ]))
    assert main(["ask", QUESTION, "--method", "kar3", "--model", f"scripted:{rules}", "--sources", "atoms", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # the same proposal each round: once its atoms' chunks are chosen the backups take over, and the
    # gated chunk backup finally finds nothing (no unthresholded fallback)
    assert out["answer"] == "Munich" and out["trace"]["exit"] == "nothing_retrieved" and len(out["trace"]["rounds"]) == 5
    assert main(["ask", QUESTION, "--method", "kar3", "--model", f"scripted:{rules}", "--sources", "atoms"]) == 0
    text = capsys.readouterr().out  # the rounds, as the terminal shows them
    assert "Answer: Munich" in text and "round 1: In which city did Arnold Sommerfeld die?" in text
    assert "chose: " in text and "loop ended: nothing_retrieved" in text
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": QUESTION, "answers": ["Munich"]}) + "\n")
    assert main(["eval", "run", "--method", "kar3", "--dataset", str(questions), "--out", str(tmp_path / "run"),
                 "--model", f"scripted:{rules}", "--sources", "atoms", "--no-progress"]) == 0
    rec = json.loads((tmp_path / "run" / "predictions.jsonl").read_text().splitlines()[0])
    assert rec["predicted"] == "Munich" and rec["usage"]["llm_calls"] == 10 and rec["trace"]["method"] == "kar3"
