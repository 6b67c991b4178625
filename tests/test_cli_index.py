"""`atomgraph index`: building, inspecting, errors, and resuming after a killed run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import chromadb
import pytest

from atomgraph.cli import main
from atomgraph.settings import Settings
from atomgraph.tools.corpus_readers import read_passages
from atomgraph.tools.ingest import DEFAULT_MAX_TOKENS, ingest, passage_id, split_text


@pytest.fixture()
def corpus(tmp_path, shared_data):
    # 60 passages: the killed run writes 3 batches of 4, the resumed one embeds the rest (each
    # passage embedded on the CPU costs the suite time; 160 cost about a minute more, checking the same)
    rows = json.loads((shared_data / "hipporag" / "musique_train_corpus.json").read_text(encoding="utf-8"))[:60]
    f = tmp_path / "musique.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return f


def _expected_ids(path) -> set[str]:
    return {passage_id(p.title, t) for p in read_passages(path) for t in split_text(p.text, DEFAULT_MAX_TOKENS)}


def _ids(db, name) -> list[str]:
    return chromadb.PersistentClient(path=str(db)).get_collection(name, embedding_function=None).get(include=[])["ids"]


def test_index_then_info(tmp_path, corpus, capsys):
    db = tmp_path / "db"
    rc = main(["index", "wikipedia", str(corpus), "--collection", "cli-test", "--persist", str(db), "--limit", "40", "--json"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["read"] == 40 and summary["added"] == summary["unique"] == summary["count"]
    assert summary["passages_per_s"] > 0
    assert main(["index", "info", "--collection", "cli-test", "--persist", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"{summary['count']} passages" in out and "sentence-transformers/all-MiniLM-L6-v2 (384 dims)" in out
    assert main(["index", "info", "--collection", "other", "--persist", str(db)]) == 1
    assert "does not exist" in capsys.readouterr().out


def test_index_uses_settings_location(tmp_path, corpus, capsys, monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_CHROMA_COLLECTION", "from-env")
    assert main(["index", "wikipedia", str(corpus), "--limit", "3"]) == 0
    assert "now holds" in capsys.readouterr().out
    assert len(_ids(tmp_path / "chroma", "from-env")) >= 3  # conftest points chroma_path at tmp/chroma


def test_index_errors_are_one_line(tmp_path, capsys):
    assert main(["index", "wikipedia", str(tmp_path / "missing.jsonl"), "--collection", "err-test"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"atomgraph: error: {tmp_path / 'missing.jsonl'}: no such file or directory"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "A", "text": "fine"}\n{"title": "B", "text": "broken"\n', encoding="utf-8")
    assert main(["index", "wikipedia", str(bad), "--collection", "err-test", "--persist", str(tmp_path / "db")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: not valid JSON" in err and "Traceback" not in err
    tsv = tmp_path / "p.tsv"
    tsv.write_text("id\ttext\ttitle\n1\tx\tA\n", encoding="utf-8")
    assert main(["index", "wikipedia", str(tsv), "--format", "hipporag", "--collection", "err-test", "--persist", str(tmp_path / "db")]) == 2
    assert f"{tsv}:1: not valid JSON" in capsys.readouterr().err


@pytest.mark.slow
def test_killed_ingestion_resumes_to_exactly_the_unique_passages(tmp_path, corpus):
    db = tmp_path / "db"
    cmd = [sys.executable, "-m", "atomgraph.cli", "-v", "index", "wikipedia", str(corpus),
           "--collection", "kill-test", "--persist", str(db), "--batch-size", "4", "--no-progress"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=tmp_path)
    written = 0
    deadline = time.monotonic() + 240
    try:
        for line in proc.stderr:  # the -v log names each batch once it is committed
            if "batch written" in line:
                written += 1
                if written == 3:
                    proc.send_signal(signal.SIGKILL)
                    break
            if time.monotonic() > deadline:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stderr.close()
    assert written == 3 and proc.returncode == -signal.SIGKILL

    expected = _expected_ids(corpus)
    partial = _ids(db, "kill-test")
    assert 3 * 4 <= len(partial) < len(expected)
    assert set(partial) <= expected

    stats = ingest([corpus], "kill-test", settings=Settings(chroma_path=str(db)), batch_size=16, progress=False)
    assert stats.skipped == len(partial) > 0
    assert stats.added + stats.skipped == stats.unique == len(expected)
    final = _ids(db, "kill-test")
    assert len(final) == len(set(final)) == len(expected)
    assert set(final) == expected
