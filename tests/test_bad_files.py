"""Bad files and stores against the CLI: strict reading named by file and line, counted skips,
one clear line (exit 2) for store failures, nothing created by a failed validation pass."""

from __future__ import annotations

import json
import os

import pytest

from atomgraph.cli import main


def _index(tmp_path, f, *extra):
    return main(["index", "wikipedia", str(f), "--collection", "bad", "--persist", str(tmp_path / "db"), *extra])


@pytest.mark.parametrize("name,content,message", [
    ("latin.jsonl", b'{"title": "A", "text": "ok"}\n{"title": "Caf\xe9", "text": "bad byte"}\n', "latin.jsonl:2: not utf-8 text"),
    ("digits.jsonl", b'{"title": "A", "text": "ok"}\n{"title": "N", "text": "x", "n": ' + b"9" * 5000 + b"}\n",
     "digits.jsonl:2: unreadable JSON value"),
    ("deep.jsonl", b'{"title": "A", "text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", "deep.jsonl:1: JSON nested too deeply"),
    ("notjson.jsonl", b'{"title": "A", "text": "ok"}\n{oops\n{"title": "B", "text": "ok"}\n', "notjson.jsonl:2: not valid JSON"),
    ("latin.tsv", b"id\ttext\ttitle\n1\tgood\tA\n2\tCaf\xe9\tB\n", "latin.tsv:3: not utf-8 text"),
    ("big.json", b'[{"title": "A", "text": "ok"},\n {"title": "B", "text": "caf\xe9"}]', "big.json:2: not utf-8 text"),
])
def test_bad_input_is_named_and_creates_nothing(tmp_path, capsys, name, content, message):
    f = tmp_path / name
    f.write_bytes(content)
    assert _index(tmp_path, f) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "db").exists()  # the failed validation pass created no store


def test_encoding_option_reads_the_file_and_empty_texts_are_counted(tmp_path, capsys):
    f = tmp_path / "latin.jsonl"
    f.write_bytes('{"title": "Café", "text": "Un café à Paris."}\n{"title": "Empty", "text": ""}\n'
                  '{"title": "Blank", "text": ["", " "]}\n'.encode("latin-1"))
    assert _index(tmp_path, f, "--encoding", "latin-1", "--json", "--no-progress") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["added"] == 1 and summary["skipped_records"] == {"no text": 2}
    assert _index(tmp_path, f, "--encoding", "klingon") == 2
    assert "unknown text encoding 'klingon'" in capsys.readouterr().err


def test_store_path_that_is_a_file_is_one_line(tmp_path, capsys):
    f = tmp_path / "ok.jsonl"
    f.write_text('{"title": "A", "text": "ok"}\n')
    (tmp_path / "db").write_text("not a folder")
    assert _index(tmp_path, f) == 2
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and "Traceback" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions")
def test_read_only_store_is_one_line(tmp_path, capsys):
    f = tmp_path / "ok.jsonl"
    f.write_text('{"title": "A", "text": "ok"}\n')
    db = tmp_path / "db"
    db.mkdir()
    db.chmod(0o500)
    try:
        assert _index(tmp_path, f, "--no-progress") == 2
        err = capsys.readouterr().err
        assert "not writable" in err and "Traceback" not in err
    finally:
        db.chmod(0o700)
