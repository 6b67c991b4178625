"""Bad files and stores against the CLI: strict reading named by file and line, counted skips,
one clear line (exit 2) for store failures, nothing created by a failed validation pass."""

from __future__ import annotations

import json
import os
import re

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


# --- every command that reads a file: the same strict reading (atomgraph/jsonl.py) ---------------

ROWS = {  # two good records of each command's input
    "dataset": ('{"id": "a", "question": "Q1?", "answers": ["x"]}', '{"id": "b", "question": "Q2?", "answers": ["y"]}'),
    "pred": ('{"id": "a", "predicted": "x", "gold": ["x"]}', '{"id": "b", "predicted": "y", "gold": ["y"]}'),
    "tree": ('{"question": "Q?", "reasoning_tree": {"Q?": "Search(\\"x\\")"}}',
             '{"question": "R?", "reasoning_tree": {"R?": "Search(\\"y\\")"}}'),
    "obj": ('{"id": "o1", "kind": "passage", "title": "A", "text": "a text"}',
            '{"id": "o2", "kind": "passage", "title": "B", "text": "b text"}'),
    "q": ('{"id": "q1", "question": "A?", "gold_ids": ["o1"]}', '{"id": "q2", "question": "B?", "gold_ids": ["o2"]}'),
    "corpus": ('{"title": "A", "text": "a text"}', '{"title": "B", "text": "b text"}'),
    "rules": ('{"rules": [],', '"default": "So the answer is: x"}'),  # one JSON document over two lines
}


def _bad(kind: str, first: str, second: str) -> bytes | None:
    """A file of ``kind``: its second record broken (None: a directory instead of a file)."""
    a, b = first.encode(), second.encode()
    return {
        "latin": a + b"\n" + b[:-1] + b', "note": "caf\xe9"}\n',
        "truncated": a + b"\n" + b[: len(b) // 2] + b"\n" + a + b"\n",
        "digits": a + b"\n" + b[:-1] + b', "n": ' + b"9" * 5000 + b"}\n",
        "deep": a + b"\n" + b[:-1] + b', "n": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
        "empty": b"",
        "directory": None,
        # no text, no number, no regular file, no bound
        "surrogate": a + b"\n" + b[:-1] + b', "note": "\\ud800"}\n',
        "nan": a + b"\n" + b[:-1] + b', "n": NaN}\n',
        "infinite": a + b"\n" + b[:-1] + b', "n": 1e999999}\n',
        "longline": a + b"\n" + b[:-1] + b', "note": "' + b"x" * 4096 + b'"}\n',
        "toolarge": a + b"\n" + b[:-1] + b', "note": "' + b"x" * 4096 + b'"}\n',
        "fifo": None,
        "device": None,
    }[kind]


MESSAGES = {"latin": r"(:| line )2: not utf-8 text", "truncated": r"(:| line )2: not valid JSON",
            "digits": r"unreadable JSON value", "deep": r"JSON nested too deeply",  # (a whole document: no line)
            "empty": r"empty|no \w+|holds no", "directory": "directory",
            "surrogate": r"lone surrogate", "nan": r"non-finite number", "infinite": r"too large for a float|non-finite",
            "longline": r"longer than 2,048 bytes|larger than 2,048 bytes", "toolarge": r"larger than 3,072 bytes",
            "fifo": r"is a FIFO", "device": r"is a device"}


def _commands(tmp_path, f, rules):
    """(input kind, argv, what must not exist afterwards) of every command that reads a file."""
    ok = {k: tmp_path / f"{k}.ok.jsonl" for k in ROWS}
    for k, path in ok.items():
        path.write_text("\n".join(ROWS[k]) + "\n")
    return {
        "eval run --dataset": ("dataset", ["eval", "run", "--method", "standard", "--model", f"scripted:{rules}",
                                           "--dataset", str(f("dataset")), "--out", str(tmp_path / "run"),
                                           "--no-progress"], tmp_path / "run"),
        "eval score": ("pred", ["eval", "score", str(f("pred"))], None),
        "eval score --dataset": ("dataset", ["eval", "score", str(ok["pred"]), "--dataset", str(f("dataset"))], None),
        "tree stats": ("tree", ["tree", "stats", str(f("tree"))], None),
        "tree show": ("tree", ["tree", "show", str(f("tree")), "--index", "0"], None),
        "retrieve --objects": ("obj", ["retrieve", "--method", "bm25", "--no-cache", "--objects", str(f("obj")),
                                       "--questions", str(ok["q"]), "--out", str(tmp_path / "ret")], tmp_path / "ret"),
        "retrieve --questions": ("q", ["retrieve", "--method", "bm25", "--no-cache", "--objects", str(ok["obj"]),
                                       "--questions", str(f("q")), "--out", str(tmp_path / "ret")], tmp_path / "ret"),
        "index atoms": ("corpus", ["index", "atoms", str(f("corpus")), "--model", f"scripted:{rules}", "--persist",
                                   str(tmp_path / "atoms"), "--no-progress"], tmp_path / "atoms"),
        "ask --model scripted:FILE": ("rules", ["ask", "Q?", "--model", f"scripted:{f('rules')}"], None),
    }


COMMANDS = ["eval run --dataset", "eval score", "eval score --dataset", "tree stats", "tree show", "retrieve --objects",
            "retrieve --questions", "index atoms", "ask --model scripted:FILE"]


@pytest.mark.parametrize("kind", list(MESSAGES))
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_reads_its_files_strictly(tmp_path, capsys, monkeypatch, command, kind):
    """A non-UTF-8 byte, a truncated JSON line, a 5,000-digit number, deep nesting, an empty file,
    a directory, a lone surrogate, NaN, 1e999999, a line or a file over the configured bound, a
    FIFO, /dev/zero: exit 2, one line naming the file (and the line), no traceback, nothing
    created, nothing blocked."""
    monkeypatch.chdir(tmp_path)
    if kind == "longline":
        monkeypatch.setenv("ATOMGRAPH_MAX_LINE_MB", str(2048 / 1024 / 1024))
        monkeypatch.setenv("ATOMGRAPH_MAX_FILE_MB", str(2048 / 1024 / 1024))  # documents read whole: the file bound
    if kind == "toolarge":
        monkeypatch.setenv("ATOMGRAPH_MAX_FILE_MB", str(3072 / 1024 / 1024))
        monkeypatch.setenv("ATOMGRAPH_MAX_STREAM_MB", str(3072 / 1024 / 1024))
    rules = tmp_path / "rules.json"
    rules.write_text('{"default": "So the answer is: x"}')

    def f(input_kind: str):
        path = tmp_path / f"{input_kind}.{kind}.jsonl"
        content = _bad(kind, *ROWS[input_kind])
        if os.path.lexists(path):
            return path
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "device":
            path.symlink_to("/dev/zero")
        elif content is None:
            path.mkdir(exist_ok=True)
        else:
            path.write_bytes(content)
        return path

    input_kind, argv, created = _commands(tmp_path, f, rules)[command]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, (command, kind, code, err[-500:])
    # one error line; `eval run` may first say which dataset setting it applies (a notice, not an error)
    lines = [ln for ln in err.strip().splitlines() if "no declared setting for this dataset" not in ln]
    assert "Traceback" not in err and len(lines) == 1, err[-1000:]
    assert f"{input_kind}.{kind}.jsonl" in err and re.search(MESSAGES[kind], err), err
    if created is not None:
        assert not created.exists(), f"{command} created {created} on a failed validation pass"


def test_encoding_option_and_counted_skips(tmp_path, capsys):
    pred = tmp_path / "pred.jsonl"
    pred.write_bytes(b'{"id": "a", "predicted": "caf\xe9", "gold": ["caf\xe9"]}\n')
    assert main(["eval", "score", str(pred)]) == 2
    assert "pred.jsonl: line 1: not utf-8 text" in capsys.readouterr().err
    assert main(["eval", "score", str(pred), "--encoding", "latin-1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["f1"] == 100.0
    tree = tmp_path / "tree.jsonl"
    tree.write_bytes('{"question": "Café?", "reasoning_tree": {"Café?": "Search(\\"x\\")"}}\n'.encode("latin-1"))
    assert main(["tree", "stats", str(tree)]) == 2 and "tree.jsonl:1: not utf-8 text" in capsys.readouterr().err
    assert main(["tree", "stats", str(tree), "--encoding", "latin-1", "--json"]) == 0
    capsys.readouterr()
    # a predictions file whose last record was cut off mid-write: skipped, and said so
    cut = tmp_path / "cut.jsonl"
    cut.write_text('{"id": "a", "predicted": "x", "gold": ["x"]}\n{"id": "b", "predicted": "y", "go')
    assert main(["eval", "score", str(cut)]) == 0
    assert "skipped: 1 cut-off last line" in capsys.readouterr().out
    # ... but a whole last line that is bad (no cut: a 5,000-digit number) is an error
    cut.write_text('{"id": "a", "predicted": "x", "gold": ["x"]}\n{"id": "b", "n": ' + "9" * 5000 + "}")
    assert main(["eval", "score", str(cut)]) == 2 and "line 2: unreadable JSON value" in capsys.readouterr().err


def _unwritable() -> str | None:
    """A folder that exists and that even root cannot write in (sysfs), or None."""
    import tempfile

    folder = "/sys/kernel"
    if not os.path.isdir(folder):
        return None
    try:
        tempfile.mkstemp(dir=folder)
    except OSError:
        return folder
    return None


def test_output_paths_that_are_files_or_unwritable_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rules = tmp_path / "rules.json"
    rules.write_text('{"default": "So the answer is: x"}')
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "a", "question": "Q1?", "answers": ["x"]}\n')
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"title": "A", "text": "a text"}\n')
    objects = tmp_path / "o.jsonl"
    objects.write_text('{"id": "o1", "kind": "passage", "title": "A", "text": "a text"}\n')
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "q1", "question": "A?", "gold_ids": ["o1"]}\n')
    afile = tmp_path / "afile"
    afile.write_text("x")
    run = ["eval", "run", "--method", "standard", "--model", f"scripted:{rules}", "--dataset", str(data), "--no-progress"]
    cases = [
        (run + ["--out", str(afile)], "is a file, not a folder"),
        (run + ["--out", str(tmp_path / "r"), "--checkpoint", str(afile / "ck.sqlite")], "is a file, not a folder"),
        (["retrieve", "--method", "bm25", "--objects", str(objects), "--questions", str(questions), "--no-cache",
          "--out", str(afile)], "is a file, not a folder"),
        (["index", "atoms", str(corpus), "--model", f"scripted:{rules}", "--persist", str(afile)], "is a file, not a folder"),
        (["index", "info", "--persist", str(afile)], "is a file, not a folder"),
        (["demo", "--persist", str(afile), "--model-factory", "atomgraph.testing:no_such"], "is a file, not a folder"),
        (["eval", "report", str(tmp_path / "nothing-here")], "not a run directory"),
    ]
    ro = _unwritable()
    if ro:
        cases += [
            (run + ["--out", f"{ro}/atomgraph-run"], "cannot create the run directory"),
            (["retrieve", "--method", "bm25", "--objects", str(objects), "--questions", str(questions),
              "--cache", f"{ro}/atomgraph-cache"], "cannot create the index cache folder"),
            (["index", "atoms", str(corpus), "--model", f"scripted:{rules}", "--persist", f"{ro}/atomgraph-db"],
             "is not writable"),
            (["index", "wikipedia", str(corpus), "--persist", f"{ro}/atomgraph-db"], "failed"),
        ]
    for argv, message in cases:
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2 and message in err, (argv, code, err[-800:])
        lines = [ln for ln in err.strip().splitlines() if "no declared setting for this dataset" not in ln]
        assert "Traceback" not in err and len(lines) == 1, (argv, err[-800:])


def test_store_failures_reaching_the_top_are_one_line(tmp_path, capsys, monkeypatch):
    """A Chroma/SQLite/file-system failure no command turned into its own message: one line, exit 2."""
    import sqlite3

    from atomgraph import cli

    def boom(args):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    methods = parser._subparsers._group_actions[0].choices["eval"]._subparsers._group_actions[0].choices["methods"]
    methods.set_defaults(func=boom)
    assert cli.main(["eval", "methods"]) == 2
    err = capsys.readouterr().err
    assert "readonly database" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
