"""The default embedding model on onnxruntime (atomgraph.onnx_embeddings): the vectors of
sentence-transformers, no torch on its load path, a damaged or refused export never fails a run,
and the setting chooses sentence-transformers. The export is made once per test session, into the
session's model folder (conftest's ``ATOMGRAPH_MODEL_DIR``), by the first test that loads the model."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from atomgraph import onnx_embeddings
from atomgraph.embeddings import SentenceTransformerEmbeddings, embedding_id, embedding_model
from atomgraph.errors import ConfigError
from atomgraph.onnx_embeddings import OnnxEmbeddings, OnnxMiniLM, export_folder
from atomgraph.settings import Settings, get_settings

TEXTS = ["Where was Albert Einstein born?", "Albert Einstein was born in Ulm, in the Kingdom of Württemberg.",
         "", "SELECT count(*) FROM singer", "word " * 400]


@pytest.fixture
def onnx_model() -> OnnxEmbeddings:
    """The default model, loaded (exported first where this session has no export yet)."""
    emb = embedding_model(Settings())
    assert isinstance(emb, OnnxEmbeddings)
    emb.load()
    assert isinstance(emb.model, OnnxMiniLM), emb.runtime
    return emb


def test_the_onnx_vectors_are_sentence_transformers_vectors(onnx_model):
    st = SentenceTransformerEmbeddings(onnx_model.location, onnx_model.model_id)
    a, b = onnx_model.encode(TEXTS), st.encode(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 384)
    assert float(np.abs(a - b).max()) < 1e-4
    assert onnx_model.embed_query(TEXTS[0]) == pytest.approx(st.embed_query(TEXTS[0]), abs=1e-4)
    assert embedding_id(onnx_model) == embedding_id(st) == "sentence-transformers/all-MiniLM-L6-v2"
    assert onnx_model.dimension == 384
    assert onnx_model.runtime.startswith("onnxruntime (exported ") and not onnx_model.fell_back


def test_texts_run_in_sub_batches_padded_to_their_own_longest(onnx_model):
    """Sorted by token count, cut where padding would cost more than a call: each text's vector is the
    one it has alone."""
    from atomgraph.onnx_embeddings import CALL_TOKEN_LIMIT, sub_batches

    lengths = [256, 256, 256, 256, 256, 120, 40, 38, 30, 12, 11, 11, 10] + [8] * 70
    spans = sub_batches(lengths, 64)
    assert spans[0][0] == 0 and spans[-1][1] == len(lengths)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert all(e - s <= 64 and ((e - s) * lengths[s] <= CALL_TOKEN_LIMIT or e - s == 1) for s, e in spans)
    assert (0, 4) in spans and sub_batches([300]) == [(0, 1)] and sub_batches([]) == []
    mixed = TEXTS + ["Ulm", "A river town on the Danube with a minster and a long history of trade."] * 3
    alone = np.stack([onnx_model.encode([t])[0] for t in mixed])
    assert float(np.abs(onnx_model.encode(mixed) - alone).max()) < 1e-5


def test_a_fresh_process_loads_it_without_torch(onnx_model):
    code = ("import sys; from atomgraph.embeddings import embedding_model; e = embedding_model(); "
            "print(len(e.embed_query('x'))); print(e.runtime); "
            "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=os.environ)
    assert done.returncode == 0, done.stderr[-2000:]
    dim, runtime, heavy = done.stdout.strip().splitlines()
    assert dim == "384" and runtime.startswith("onnxruntime (exported ") and heavy == "[]"


@pytest.fixture
def copied_export(onnx_model, tmp_path, monkeypatch):
    """The session's export copied into a model folder of this test's own, and its folder there."""
    session = export_folder(Path(onnx_model.location))
    monkeypatch.setenv("ATOMGRAPH_MODEL_DIR", str(tmp_path / "models"))
    mine = export_folder(Path(onnx_model.location))
    shutil.copytree(session, mine)
    return mine


def test_a_damaged_export_is_made_again(onnx_model, copied_export, caplog, monkeypatch):
    """A file that does not load is exported again (here the export copies the session's file back:
    the real export is the session's first load)."""
    saved = {n: (copied_export / n).read_bytes() for n in ("model.onnx", "export.json")}
    (copied_export / "model.onnx").write_bytes(b"not an onnx graph")

    def export(location, folder):
        for name, data in saved.items():
            (folder / name).write_bytes(data)
        return json.loads(saved["export.json"])

    monkeypatch.setattr(onnx_embeddings, "export_onnx", export)
    lines: list[str] = []
    with caplog.at_level(logging.WARNING, logger="atomgraph.embeddings"):
        model, note = onnx_embeddings._load(onnx_model.location, lines.append)
    assert isinstance(model, OnnxMiniLM)
    assert note.startswith("the saved export did not load (") and "exported now to" in note
    assert any("exporting it again" in r.getMessage() for r in caplog.records)
    assert lines and lines[0].startswith("loading the embedding model's ONNX export: exporting it once, into ")
    assert float(np.abs(model.encode(TEXTS) - onnx_model.encode(TEXTS)).max()) < 1e-5


def test_an_export_that_cannot_be_made_leaves_sentence_transformers_said_once(onnx_model, copied_export, caplog,
                                                                              monkeypatch):
    (copied_export / "model.onnx").unlink()  # missing, and no onnx package to export it again
    real = onnx_embeddings._absent
    monkeypatch.setattr(onnx_embeddings, "_absent", lambda *m: ["onnx"] if "onnx" in m else real(*m))
    monkeypatch.setattr(onnx_embeddings, "_LOADED", {})  # as in a fresh process
    emb = embedding_model(Settings())
    with caplog.at_level(logging.WARNING, logger="atomgraph.embeddings"):
        vectors = emb.encode(TEXTS[:2])
        emb.encode(TEXTS[:1])
    warned = [r.getMessage() for r in caplog.records if r.name == "atomgraph.embeddings"
              and r.getMessage().startswith("embeddings: sentence-transformers")]
    assert len(warned) == 1 and "onnx not installed" in warned[0] and "did not load" in warned[0], warned
    assert emb.fell_back and emb.runtime.startswith("sentence-transformers (")
    assert float(np.abs(vectors - onnx_model.encode(TEXTS[:2])).max()) < 1e-4


def test_a_refused_export_is_not_made_again(onnx_model, copied_export):
    record = {"version": onnx_embeddings.EXPORT_VERSION, "versions": onnx_embeddings._export_versions(),
              "rejected": "the ONNX export's vectors differ (least cosine 0.5)"}
    (copied_export / "export.json").write_text(json.dumps(record))
    model, note = onnx_embeddings._load(onnx_model.location, lambda line: pytest.fail(f"exported again: {line}"))
    assert model is None and note.startswith("the ONNX export's vectors differ")
    assert "delete it to export again" in note


def test_a_fallback_is_recorded_in_run_json_and_said(onnx_model, copied_export, tmp_path, monkeypatch, capsys,
                                                     caplog):
    """A run whose export cannot be used runs on sentence-transformers: its warm-up says so before the first
    question, its summary says so, and run.json records what was wanted, what ran and why."""
    from atomgraph.cli import main

    record = {"version": onnx_embeddings.EXPORT_VERSION, "versions": onnx_embeddings._export_versions(),
              "rejected": "the ONNX export's vectors differ (least cosine 0.5)"}
    (copied_export / "export.json").write_text(json.dumps(record))
    monkeypatch.setattr(onnx_embeddings, "_LOADED", {})  # as in a fresh process
    (tmp_path / "fallback_plugins.py").write_text(
        "from atomgraph.embeddings import embedding_model\n"
        "from atomgraph.testing import ScriptedChatModel\n"
        "from atomgraph.tools.memory_source import InMemorySource\n"
        "class Notes(InMemorySource):\n"
        "    embeddings = embedding_model()\n"
        "def model(settings):\n"
        "    return ScriptedChatModel(default='So the answer is: item 1')\n"
        "def sources(settings):\n"
        "    return [Notes([{'title': 'Item 1', 'text': 'item number 1 is item 1'}], name='notes')]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    data = tmp_path / "toy.jsonl"
    data.write_text(json.dumps({"id": "q1", "question": "What is item 1?", "answers": ["item 1"]}) + "\n")
    out = tmp_path / "run"
    assert main(["eval", "run", "--method", "rag", "--dataset", str(data), "--out", str(out),
                 "--model-factory", "fallback_plugins:model", "--sources-factory", "fallback_plugins:sources"]) == 0
    said = capsys.readouterr()
    used = json.loads((out / "run.json").read_text())["run"]["embedding_runtime"]
    assert used["wanted"] == "onnxruntime" and used["used"] == "sentence-transformers", used
    assert used["model"] == "sentence-transformers/all-MiniLM-L6-v2" and "least cosine 0.5" in used["why"]
    warned = [r.getMessage() for r in caplog.records if r.name == "atomgraph.embeddings"]
    assert len(warned) == 1 and warned[0].startswith("embeddings: sentence-transformers (the ONNX export's"), warned
    assert "loaded the embedding model sentence-transformers/all-MiniLM-L6-v2 in " in said.err  # before the question
    assert "FALLBACK: the embedding model sentence-transformers/all-MiniLM-L6-v2 ran on sentence-transformers, " \
           "not onnxruntime (the ONNX export's vectors differ" in said.out


def test_the_setting_chooses_sentence_transformers(monkeypatch):
    chosen = embedding_model(Settings(embedding_runtime="sentence-transformers"))
    assert type(chosen) is SentenceTransformerEmbeddings
    assert chosen.runtime == "sentence-transformers (embedding_runtime = sentence-transformers)"
    monkeypatch.setenv("ATOMGRAPH_EMBEDDING_RUNTIME", "sentence-transformers")
    assert type(embedding_model(get_settings())) is SentenceTransformerEmbeddings
    assert type(embedding_model(Settings(embedding_device="cuda"))) is SentenceTransformerEmbeddings
    monkeypatch.setenv("ATOMGRAPH_EMBEDDING_RUNTIME", "torch")
    with pytest.raises(ConfigError, match="embedding_runtime"):
        get_settings()


async def test_a_run_resumes_under_the_other_runtime(tmp_path):
    """The same vectors: a run started on one runtime resumes on the other (how it runs, not what it computes)."""
    from atomgraph.evaluation.datasets import Example
    from atomgraph.evaluation.runner import EvalOptions, arun_eval
    from atomgraph.testing import ScriptedChatModel

    examples = [Example(id=f"q{i}", question=f"What is item {i}?", answers=[f"item {i}"]) for i in range(2)]

    async def run(n, runtime):
        return await arun_eval("standard", examples[:n], tmp_path, EvalOptions(
            model=ScriptedChatModel(default="So the answer is: item 0"), progress=False, dataset_name="toy",
            settings=Settings(cache=False, embedding_runtime=runtime)))

    await run(1, "sentence-transformers")
    again = await run(2, "onnxruntime")
    assert (again.skipped, again.finished) == (1, 1)
