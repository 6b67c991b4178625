"""A run loads what it needs at its start, said (atomgraph.warmup), and no long stage is silent:
ARM's query and unit priming report progress between batches. Time to first model request lives
in ``benchmarks/bench_cold_start.py``, not here."""

from __future__ import annotations

import io
import logging
import re
import threading

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from atomgraph.settings import Settings
from atomgraph.tools import arm_index
from atomgraph.tools.arm_index import ArmIndex, BuildProgress
from atomgraph.tools.objects import DataObject
from atomgraph.warmup import warm_up


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "atomgraph.progress"]


def test_a_closed_book_run_loads_no_embedding_model(caplog, tmp_path):
    caplog.set_level(logging.INFO, logger="atomgraph.progress")
    settings = Settings(cache=False, chroma_path=str(tmp_path / "chroma"))
    (tmp_path / "chroma").mkdir()
    seconds = warm_up("cot", settings, models=False)
    assert not any("embedding" in step for step in seconds), seconds
    assert not any("embedding" in line for line in _lines(caplog))


def test_passages_not_indexed_load_no_embedding_model(tmp_path):
    settings = Settings(cache=False, chroma_path=str(tmp_path / "absent"), sources=["wikipedia"])
    assert not any("embedding" in step for step in warm_up("rag", settings, models=False))


def test_the_embedding_model_loads_at_the_start_with_a_line_and_once(caplog, tmp_path):
    """The settings' model loads on the calling thread, said before and after; concurrent first
    users then get the very model it loaded."""
    from atomgraph.embeddings import embedding_model

    caplog.set_level(logging.INFO, logger="atomgraph.progress")
    (tmp_path / "chroma").mkdir()
    settings = Settings(cache=False, chroma_path=str(tmp_path / "chroma"), sources=["wikipedia"])
    seconds = warm_up("rag", settings, models=False)
    step = "the embedding model sentence-transformers/all-MiniLM-L6-v2"
    assert step in seconds
    lines = _lines(caplog)
    assert f"loading {step} ..." in lines
    # the line says what runs the model
    assert any(re.fullmatch(rf"loaded {re.escape(step)} in [\d.]+ s; embeddings: onnxruntime \(exported .+\)", line)
               for line in lines), lines
    assert lines.index(f"loading {step} ...") < next(i for i, x in enumerate(lines) if x.startswith("loaded " + step))
    models, threads = [], [threading.Thread(target=lambda: models.append(embedding_model(settings).model))
                           for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(m) for m in models}) == 1


def test_a_given_source_with_a_local_model_is_warmed_and_quiet_when_asked(caplog, tmp_path):
    from atomgraph.embeddings import embedding_model

    class Source:
        embeddings = embedding_model(Settings(cache=False))

    caplog.set_level(logging.INFO, logger="atomgraph.progress")
    seconds = warm_up("rag", Settings(cache=False), sources=[Source()], models=False, show=False)
    assert "the embedding model sentence-transformers/all-MiniLM-L6-v2" in seconds
    assert _lines(caplog) == []


def _objects(n: int) -> list[DataObject]:
    return [DataObject(id=f"p{i}", kind="passage", title=f"Town {i}",
                       text=f"Town {i} lies on river {i}. It has {i} bridges. Its mayor is Ann {i}.")
            for i in range(n)]


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(arm_index, "EMBED_BATCH", 16)


def test_unit_priming_reports_progress_within_its_stage(small_batches):
    from atomgraph.nodes.arm.structure_alignment import UnitCache

    index = ArmIndex.build(_objects(20), embeddings=DeterministicFakeEmbedding(size=8), use_cache=False,
                           progress=False)
    out = io.StringIO()
    UnitCache.of(index).prime_all(progress=BuildProgress(True, out, every_s=0.0, prefix="ARM"))
    lines = out.getvalue().splitlines()
    stage = "unit embeddings (sentences, cells, columns)"
    assert lines[0] == f"ARM: {stage} (80 texts) ..."  # title + 3 sentences per passage
    ticks = [x for x in lines if re.match(rf"ARM: {re.escape(stage)} \d+/80 texts", x)]
    assert len(ticks) >= 4 and "16/80 texts 20%" in ticks[0]
    assert lines[-1].startswith(f"ARM: {stage} done in")
    assert len(UnitCache.of(index).get([0, 19])[1].texts) == 4


def test_query_priming_reports_progress_and_fills_the_cache(small_batches):
    index = ArmIndex.build(_objects(3), embeddings=DeterministicFakeEmbedding(size=8), use_cache=False,
                           progress=False)
    out = io.StringIO()
    questions = [f"Which town has {i} bridges?" for i in range(40)]
    index.prime_queries(questions, progress=BuildProgress(True, out, every_s=0.0, prefix="ARM"))
    text = out.getvalue()
    assert "ARM: query embeddings (40 questions) ..." in text and "query embeddings 16/40 questions 40%" in text
    assert "query embeddings done in" in text
    assert set(index._query_cache) == set(questions)
    quiet = io.StringIO()
    index.prime_queries(["another question"], progress=BuildProgress(False, quiet))
    assert quiet.getvalue() == ""


async def test_after_the_warm_up_no_question_loads_the_embedding_model(tmp_path, monkeypatch):
    """As ``eval run`` does: the warm-up loads the model on this (the main) thread; then eight
    concurrent questions over the store retrieve without loading anything."""
    from atomgraph import embeddings, onnx_embeddings
    from atomgraph.demo_run import demo_settings, index_demo_passages
    from atomgraph.graphs.registry import build_method
    from atomgraph.testing import ScriptedChatModel

    settings = demo_settings(Settings(cache=False), tmp_path / "chroma").model_copy(update={"sources": ["wikipedia"]})
    index_demo_passages(settings)
    loads: list[str] = []
    real = embeddings.require

    real_load = onnx_embeddings._load

    def counted(module, *args):
        if module == "sentence_transformers":
            loads.append(threading.current_thread().name)
        return real(module, *args)

    def counted_load(*args):
        loads.append(threading.current_thread().name)
        return real_load(*args)

    monkeypatch.setattr(embeddings, "_MODELS", {})  # as in a fresh process
    monkeypatch.setattr(onnx_embeddings, "_LOADED", {})
    monkeypatch.setattr(embeddings, "require", counted)
    monkeypatch.setattr(onnx_embeddings, "_load", counted_load)
    model = ScriptedChatModel(default="So the answer is: Ulm")
    warm_up("rag", settings, model)
    assert loads and set(loads) == {threading.main_thread().name}
    loaded = list(loads)
    graph = build_method("rag", model=model, settings=settings)
    outs = await graph.abatch([{"question": f"Where was Albert Einstein born? ({i})"} for i in range(8)])
    assert all(o["retriever_calls"] and not o["retriever_calls"][0]["error"] for o in outs)
    assert loads == loaded


def test_the_command_lines_start_runs_with_the_collector_paused_then_frozen(tmp_path):
    """`atomgraph` as a process of its own pauses the collector for its start; the warm-up's end freezes what
    loaded and turns it back on; a library caller's warm-up leaves the collector alone."""
    import gc

    from atomgraph import warmup

    frozen = gc.get_freeze_count()
    warm_up("cot", Settings(cache=False), models=False)
    assert gc.isenabled() and gc.get_freeze_count() == frozen  # a library caller: untouched
    try:
        warmup.pause_collector()
        assert not gc.isenabled()
        warm_up("cot", Settings(cache=False), models=False)
        assert gc.isenabled() and gc.get_freeze_count() > frozen
        warmup.started()  # again: nothing
        assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


def test_arm_unit_embeddings_load_at_the_start_said_then_from_the_cache(caplog, tmp_path, monkeypatch):
    """`eval run --method arm`'s warm-up embeds every object's units once (written to the index cache), a later
    process reads them from there, and units over the limit, not cached, are left to the questions, said."""
    import json

    from atomgraph import warmup
    from atomgraph.nodes.arm import pipeline
    from atomgraph.nodes.arm.structure_alignment import UnitCache

    path = tmp_path / "objects.jsonl"
    path.write_text("".join(json.dumps({"id": o.id, "kind": o.kind, "title": o.title, "text": o.text}) + "\n"
                            for o in _objects(12)))
    cache = str(tmp_path / "arm-cache")
    settings = Settings(cache=False, arm={"objects": str(path), "index_cache": cache})
    what = "ARM's unit embeddings (sentences, cells, columns)"
    caplog.set_level(logging.INFO, logger="atomgraph.progress")

    def start() -> tuple[UnitCache, list[str]]:
        monkeypatch.setattr(pipeline, "_BY_FILE", {})  # a fresh process: the index opened again
        caplog.clear()
        warm_up("arm", settings, models=False)
        return UnitCache.of(pipeline.index_for_file(str(path), cache)), _lines(caplog)

    units, lines = start()
    assert units.complete  # title + 3 sentences of each of 12 passages
    assert f"loading {what}, embedding 48 texts once ..." in lines
    assert any(x.startswith(f"loaded {what}, embedding 48 texts once in ") and x.endswith("; written to the index cache")
               for x in lines)
    units, lines = start()
    assert units.complete and any(x.startswith(f"loaded {what} in ") and x.endswith("; read from the index cache")
                                  for x in lines)
    assert not any("embedding 48" in x for x in lines)
    (units.index.cache_path / units.file_name).unlink()
    monkeypatch.setattr(warmup, "UNIT_PRIME_LIMIT", 47)
    units, lines = start()
    assert not units.complete and units.pending() == 48
    assert any(x.startswith(f"{what}: not cached, 48 texts (over 47 are not embedded at the start): the first "
                            "questions embed their candidates' units") for x in lines)
