"""``atomgraph --version``, and library messages through ``logging``: progress lines are INFO
records of ``atomgraph.progress`` (nothing on stderr for a library user), which the command
line shows on stderr while a command runs."""

from __future__ import annotations

import io
import logging
from importlib.metadata import version

import pytest

import atomgraph
from atomgraph.cli import _progress_on_stderr, main
from atomgraph.progress import LineProgress, progress, say
from atomgraph.tools.arm_index import BuildProgress


def test_version_is_the_installed_distributions(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"atomgraph {version('atomgraph')}"
    assert atomgraph.__version__ == version("atomgraph")


def test_progress_without_a_stream_is_logged_not_printed(capsys, caplog):
    caplog.set_level(logging.INFO, logger="atomgraph.progress")
    with progress(3, "eval rag", "questions", every_s=3600) as bar:  # stderr is no terminal here
        assert isinstance(bar, LineProgress)
        bar.update(3)
    build = BuildProgress(True)
    build.stage("BM25 index", 5)
    build.end()
    lines = [r.getMessage() for r in caplog.records if r.name == "atomgraph.progress"]
    assert lines[0].startswith("eval rag: 3/3 questions (100%)")
    assert lines[1] == "ARM index: BM25 index (5 objects) ..." and lines[2].startswith("ARM index: BM25 index done in")
    assert all(r.levelno == logging.INFO for r in caplog.records)
    assert capsys.readouterr().err == ""


def test_a_given_stream_gets_the_lines_and_the_command_line_shows_the_logged_ones(capsys):
    out = io.StringIO()
    say("to the stream", out)
    assert out.getvalue() == "to the stream\n"
    logger = logging.getLogger("atomgraph.progress")
    before = (logger.level, logger.propagate, list(logger.handlers))
    with _progress_on_stderr():
        say("index wikipedia: 10/10 passages")
    say("after the command")
    assert capsys.readouterr().err == "index wikipedia: 10/10 passages\n"
    assert (logger.level, logger.propagate, list(logger.handlers)) == before
