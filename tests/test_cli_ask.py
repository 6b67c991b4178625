"""`atomgraph ask`: the installed command, with no model (a clear one-line error) and with a
user's own model and sources plugged in by factory (tests/cli_factories.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from atomgraph.cli import main

TESTS = Path(__file__).resolve().parent
ATOMGRAPH = Path(sys.executable).parent / "atomgraph"
QUESTION = "Which one was established first, Grouplogic or Inbios?"
FACTORIES = ["--model-factory", "cli_factories:atomr_model", "--sources-factory", "cli_factories:sources"]


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A user's shell with nothing configured: no model keys, no atomgraph settings."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "HF_HUB_OFFLINE": "1",
        "PYTHONIOENCODING": "utf-8",
        "ATOMGRAPH_CACHE_PATH": str(tmp_path / "llm_cache.sqlite"),
        "ATOMGRAPH_CHROMA_PATH": str(tmp_path / "chroma"),
    }
    env.update(extra)
    return env


def ask(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(ATOMGRAPH), "ask", *args], cwd=tmp_path, env=clean_env(tmp_path, **env),
        capture_output=True, text=True, encoding="utf-8", timeout=120,
    )


def test_without_a_model_exits_2_with_one_line_naming_the_setting(tmp_path):
    proc = ask(tmp_path, "q")
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("atomgraph: error:") and "ATOMGRAPH_MODEL" in lines[0]
    assert "Traceback" not in proc.stderr


def test_factory_model_and_sources_print_answer_tree_and_usage(tmp_path):
    proc = ask(tmp_path, QUESTION, *FACTORIES, PYTHONPATH=str(TESTS))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.splitlines()[0] == "Answer: Grouplogic"
    # the executed tree: questions, operators with their sources, arrows to answers
    assert f"[0] {QUESTION}" in out
    assert "[1] When was Grouplogic established?" in out
    assert 'Relate("Grouplogic", "established date") · sources: wikipedia' in out
    assert 'Relate("Inbios", "established date") · sources: wikipedia' in out
    assert "→ 1988" in out and "→ 1996" in out
    # [1] and [2] replaced by their answers in the last question
    assert "[3] Given answers of 1988 and 1996, which one was established first?" in out
    assert "LLM calls: 5" in out and "retriever calls: 2 (wikipedia 2)" in out
    # progress went to stderr, not into the answer
    assert "plan: 4 nodes" in proc.stderr and "Traceback" not in proc.stderr


def test_json_output_is_parseable_and_complete(tmp_path):
    proc = ask(tmp_path, QUESTION, *FACTORIES, "--json", PYTHONPATH=str(TESTS))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["question"] == QUESTION
    assert result["answer"] == "Grouplogic" and result["answers"] == ["Grouplogic"]
    nodes = {n["id"]: n for n in result["trace"]["nodes"]}
    assert nodes[1]["answer"] == "1988" and nodes[2]["answer"] == "1996"
    assert nodes[1]["operator"] == 'Relate("Grouplogic", "established date")'
    assert [c["stage"] for c in result["llm_calls"]].count("plan") == 1
    assert len(result["llm_calls"]) == 5 and all(c["model"] == "scripted" for c in result["llm_calls"])
    assert [c["source"] for c in result["retriever_calls"]] == ["wikipedia", "wikipedia"]
    # only the graph's declared output (no internal scheduling state)
    assert "runs" not in result and "tree" not in result
    assert proc.stderr == ""  # --json implies no progress lines


# In-process (same code path as the command, without starting Python again).

def test_model_factory_from_environment(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("ATOMGRAPH_MODEL_FACTORY", "cli_factories:role_models")
    assert main(["ask", QUESTION, "--sources-factory", "cli_factories:sources", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Answer: Grouplogic\n")


@pytest.mark.parametrize("spec, message", [
    ("cli_factories", "not of the form 'module:attribute'"),
    ("no_such_module_xyz:make", "cannot import 'no_such_module_xyz:make'"),
    ("cli_factories:missing", "cannot import 'cli_factories:missing'"),
])
def test_bad_factory_is_a_one_line_error(tmp_path, monkeypatch, capsys, spec, message):
    monkeypatch.syspath_prepend(str(TESTS))
    assert main(["ask", "q", "--model-factory", spec]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("atomgraph: error:") and message in err and len(err.splitlines()) == 1


def test_sources_factory_without_model_still_names_the_setting(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(TESTS))
    assert main(["ask", "q", "--sources-factory", "cli_factories:sources"]) == 2
    assert "ATOMGRAPH_MODEL" in capsys.readouterr().err


def test_help_texts_hold_no_code_references():
    """Every command's --help is plain text: no reST roles, no double backquotes, no *_HELP names."""
    import argparse
    import re

    from atomgraph.cli import build_parser

    def walk(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from walk(sub)

    for parser in walk(build_parser()):
        text = parser.format_help()
        assert not re.search(r"``|:(?:mod|func|class|meth):`|\b[A-Z_]+_HELP\b", text), (parser.prog, text[:300])


def test_a_reader_that_leaves_early_is_not_a_traceback(tmp_path):
    """`atomgraph eval methods | head -1`: the pipe's reader is gone before the command writes; the command ends
    quietly (exit 141, as a shell reports SIGPIPE) instead of a BrokenPipeError traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader left before the first line
    try:
        done = subprocess.run([str(ATOMGRAPH), "eval", "methods"], cwd=tmp_path, env=clean_env(tmp_path),
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == 141
