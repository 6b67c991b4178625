"""The comparison benchmark's pure parts: the questions it runs, the paired interval against RAG,
per-stage usability read from traces, and which cells its table shows (no model, no store)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from benchmarks.bench_instruct_comparison import (add_same_corpus, cell, cells_state, f1_against, models_usability_table,
                                                  select_questions, stage_usability, table, usability_table)
from benchmarks.bench_local_prompting import demo_questions


def _ex(i: int, q: str) -> SimpleNamespace:
    return SimpleNamespace(id=str(i), question=q)


def _rec(i: int, f1: float, **kw) -> dict:
    return {"id": str(i), "metrics": {"em": float(f1 == 1.0), "f1": f1}, "predicted": "x", "error": None,
            "usage": {"llm_calls": 2, "prompt_tokens": 100, "completion_tokens": 10}, "latency_s": 3.0,
            "trace": {}, **kw}


def test_questions_leave_out_every_demonstration_and_keep_order():
    demo = next(iter(demo_questions()))
    examples = [_ex(0, "Who wrote  it?"), _ex(1, demo.upper()), _ex(2, "Where is it?"), _ex(3, "When?")]
    assert [e.id for e in select_questions(examples, 2)] == ["0", "2"]
    assert [e.id for e in select_questions(examples, 9, demos={"where is it?"})] == ["0", "1", "3"]


def test_f1_difference_against_rag_is_paired_on_shared_questions():
    rag = [_rec(i, 0.5) for i in range(10)]
    better = [_rec(i, 1.0) for i in range(10)] + [_rec(99, 0.0)]  # 99: not in RAG's run, not compared
    d = f1_against(better, rag)
    assert d == {"n": 10, "difference": 50.0, "interval": [50.0, 50.0]}
    mixed = [_rec(i, 1.0 if i % 2 else 0.0) for i in range(10)]
    d = f1_against(mixed, rag)
    assert d["difference"] == 0.0 and d["interval"][0] < 0 < d["interval"][1]
    assert f1_against(mixed, []) is None


def test_usability_counts_each_stage_from_a_synthetic_trace():
    atomr = _rec(1, 1.0, trace={
        "method": "atomr", "plan": {"q": []}, "plan_fallback": None, "repairs": ["node 3 listed nowhere"],
        "nodes": [
            {"id": 1, "parent": 6, "kind": "operator", "fallback": None, "subcalls": [{"outcome": "answered"}]},
            {"id": 2, "parent": 6, "kind": "operator", "fallback": "operator failure: unreadable model output", "subcalls": []},
            {"id": 3, "parent": 6, "kind": "operator", "fallback": "operator failure: no evidence from any selected source"},
            {"id": 4, "parent": 6, "kind": "operator", "fallback": None, "subcalls": [{"outcome": "skipped"}]},
            {"id": 5, "parent": 6, "kind": "parent", "fallback": "child reasoning answered Unknown", "done": True},
            {"id": 6, "parent": None, "kind": "parent", "fallback": "child reasoning failed: unreadable", "done": True}]})
    unread_plan = _rec(2, 0.0, predicted="", error="unreadable model output (no JSON)",
                       trace={"method": "atomr", "plan": None, "plan_fallback": "unreadable model output (no JSON)", "repairs": [],
                              "nodes": []})
    kar3 = _rec(3, 0.0, trace={"method": "kar3", "rounds": [
        {"proposer_unreadable": False, "hits": [{}], "choice": {"chunk_id": "a"}, "paragraphs_offered": False},
        {"proposer_unreadable": False, "hits": [{}], "choice": {"chunk_id": "b"}, "paragraphs_offered": True},
        {"proposer_unreadable": True, "hits": []}], "fallbacks": []})
    loop = _rec(4, 0.0, trace={"method": "iter_retgen", "rounds": 3, "steps": [{"kind": "decompose", "fallback": "unreadable"}, {"kind": "retrieve"},
                                         {"kind": "answer"}]})
    u = stage_usability([atomr, unread_plan, kar3, loop])
    assert u["answered"] == {"replies": 4, "usable": 3, "rate": 75.0}
    assert u["plan_read"]["replies"] == 2 and u["plan_read"]["usable"] == 1
    assert u["plan_without_repair"]["usable"] == 0  # the one read needed a repair
    assert (u["operator"]["replies"], u["operator"]["usable"]) == (2, 1)  # no evidence, skipped: no reply
    assert (u["reasoning"]["replies"], u["reasoning"]["usable"]) == (2, 1)  # Unknown is read
    assert (u["proposal"]["replies"], u["proposal"]["usable"]) == (3, 2)
    assert (u["selection"]["usable"], u["selection_any"]["usable"], u["selection"]["replies"]) == (1, 2, 2)
    assert (u["decompose"]["usable"], u["answer"]["replies"]) == (0, 1) and "retrieve" not in u


def test_table_shows_complete_cells_only():
    rag = [_rec(i, 0.5) for i in range(3)]
    summary = {"m": {"hotpotqa": {"rag": cell(rag, rag, 3), "cot": cell(rag[:2], rag, 3)}}}
    text = table(summary, "m")
    assert "| hotpotqa | rag | 3 | 0.0 | 50.0 | — |" in text and "cot" not in text
    assert "| hotpotqa | rag | 3 | answered 3/3; answered_by_method 3/3 |" in usability_table(summary, "m")
    assert cells_state(summary) == ["m hotpotqa cot: partial (2 of 3)", "m hotpotqa rag: complete (3 of 3)"]
    summary["m"]["hotpotqa"]["cot"]["answered_again"] = 1  # a record set aside by bench_plan_grammar --apply
    assert cells_state(summary)[0] == "m hotpotqa cot: partial (2 of 3), 1 re-run (their earlier records in superseded.jsonl)"


def test_kar3_is_also_compared_with_rag_over_its_own_paragraphs():
    rag = [_rec(i, 0.5) for i in range(3)]
    same = [_rec(i, 0.75) for i in range(3)]
    kar3 = [_rec(i, 1.0) for i in range(3)]
    recs = {"rag": rag, "kar3": kar3, "rag_kar3_corpus": same}
    cells = {m: cell(rs, rag, 3) for m, rs in recs.items()}
    add_same_corpus(cells, recs)
    assert cells["kar3"]["f1_vs_rag"]["difference"] == 50.0
    assert cells["kar3"]["f1_vs_same_corpus_rag"] == {"n": 3, "difference": 25.0, "interval": [25.0, 25.0]}
    text = table({"m": {"hotpotqa": cells}}, "m")
    assert "| hotpotqa | kar3 | 3 | 100.0 | 100.0 | +50.0 (+50.0, +50.0); vs rag_kar3_corpus: +25.0 (+25.0, +25.0) |" in text
    assert "| hotpotqa | rag_kar3_corpus | 3 |" in text
    del recs["rag_kar3_corpus"], cells["kar3"]["f1_vs_same_corpus_rag"]
    add_same_corpus(cells, recs)  # without the same-corpus run: no such figure
    assert "f1_vs_same_corpus_rag" not in cells["kar3"]


def test_models_side_by_side_show_each_stage_of_the_cells_both_ran():
    ok = _rec(0, 1.0)
    failed = {**_rec(1, 0.0), "predicted": "", "error": "unreadable"}
    big, small = cell([ok, ok], None, 2), cell([ok, failed], None, 2)
    summary = {"qwen": {"hotpotqa": {"rag": big, "cot": big}}, "gemma": {"hotpotqa": {"rag": small}}}
    text = models_usability_table(summary)
    assert "| hotpotqa | rag (n 2/2) | answered | 2/2 (100 %) | 1/2 (50 %) |" in text
    assert "cot" not in text  # only one model ran it
    assert models_usability_table({"qwen": summary["qwen"]}) == ""


def test_kar3_corpus_holds_the_supporting_paragraphs_of_the_questions_run(tmp_path, shared_data):
    from atomgraph.evaluation.datasets import load_dataset
    from benchmarks.bench_instruct_comparison import write_kar3_corpus

    questions = select_questions(load_dataset("hipporag-hotpotqa"), 2)
    path, passages = write_kar3_corpus("hotpotqa", questions, tmp_path)
    assert path == tmp_path / "hotpotqa" / "kar3_corpus.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines == passages and 2 <= len(lines) <= 8 and all(p["title"] and p["text"] for p in lines)
    # RAG over those paragraphs: their own Chroma collection, named in the cell's settings
    import chromadb

    from benchmarks.bench_instruct_comparison import same_corpus_settings, settings_for

    settings = same_corpus_settings("hotpotqa", questions, tmp_path, tmp_path,
                                    settings_for("local", "hotpotqa", tmp_path))
    assert settings.chroma_collection == "kar3-hotpotqa-paragraphs" and settings.chroma_path == str(tmp_path / "chroma")
    assert chromadb.PersistentClient(str(tmp_path / "chroma")).get_collection(settings.chroma_collection).count() \
        >= len(passages)


def test_each_model_reads_the_kar3_atoms_it_wrote():
    from benchmarks.bench_instruct_comparison import settings_for

    qwen, gemma = (settings_for(m, "musique", Path("w")).kar3.collection for m in ("local:qwen2.5-1.5b", "local"))
    assert qwen == "kar3-local-qwen2.5-1.5b-musique" and gemma == "kar3-local-musique"


def test_kar3_atomizing_cost_survives_a_run_stopped_part_way(tmp_path, shared_data):
    """Each atomizer call's tokens are logged as it ends: a run stopped after its first calls and
    run again records every call (the chunks done before the stop are not atomized again)."""
    import asyncio

    import pytest

    from atomgraph.evaluation.datasets import load_dataset
    from atomgraph.testing import kar3_scripted_model
    from benchmarks.bench_instruct_comparison import ensure_atoms, settings_for

    questions = select_questions(load_dataset("hipporag-hotpotqa"), 2)
    settings = settings_for("local", "hotpotqa", tmp_path).model_copy(update={"structured_output": False})
    log = tmp_path / "hotpotqa" / "kar3_atoms_calls.jsonl"

    async def stopped_after_two_calls():
        task = asyncio.create_task(ensure_atoms("hotpotqa", questions, tmp_path, settings,
                                                kar3_scripted_model(latency_s=0.3)))
        while not log.exists() or len(log.read_text().splitlines()) < 2:
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(stopped_after_two_calls())
    assert not (tmp_path / "hotpotqa" / "kar3_atoms.json").exists()
    spent = asyncio.run(ensure_atoms("hotpotqa", questions, tmp_path, settings, kar3_scripted_model()))
    # every call counted once; a call whose reply the stop cut off before it was kept is made again
    assert spent["runs"] == 2 and spent["atomized"] == spent["paragraphs"] <= spent["llm_calls"] <= spent["paragraphs"] + 1
    assert spent["llm_calls"] == sum(json.loads(line).get("call", 0) for line in log.read_text().splitlines())
    assert spent["prompt_tokens"] > 0 and spent["completion_tokens"] > 0 and spent["error"] is None
    assert json.loads((tmp_path / "hotpotqa" / "kar3_atoms.json").read_text()) == spent
