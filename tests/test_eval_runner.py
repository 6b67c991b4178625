"""Runs: records per example, errors kept on their example, resume after a SIGKILL."""

from __future__ import annotations

import asyncio
import json
import operator
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from atomgraph.errors import ConfigError
from atomgraph.evaluation.datasets import Example
from atomgraph.evaluation.records import read_records
from atomgraph.evaluation.runner import EvalOptions, arun_eval, run_eval
from atomgraph.graphs.registry import register_method
from atomgraph.nodes.call import CallRecorder
from atomgraph.settings import Settings
from atomgraph.testing import ScriptedChatModel

REPO = Path(__file__).resolve().parents[1]


def _examples(n: int) -> list[Example]:
    return [Example(id=f"q{i}", question=f"What is item number {i}?", answers=[f"item {i}"],
                    question_type="even" if i % 2 == 0 else "odd") for i in range(n)]


def _dataset_file(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"question_id": e.id, "question": e.question, "answers": e.answers,
                                        "type": e.question_type}) + "\n" for e in _examples(n)))
    return path


def _answer_by_number(prompt: str) -> str:
    import re

    number = re.findall(r"item number (\d+)\?", prompt)[-1]
    return f"So the answer is: item {number}"


async def test_run_records_every_example_with_metrics_and_usage(tmp_path):
    model = ScriptedChatModel(rules=[(r"item number 3\?", RuntimeError("provider down"))], default=_answer_by_number)
    settings = Settings(prices={"scripted": (1.0, 2.0)})
    result = await arun_eval("cot", _examples(6), tmp_path / "run", EvalOptions(
        model=model, settings=settings, concurrency=3, progress=False, dataset_name="toy"))
    assert (result.total, result.finished, result.skipped, result.errors) == (6, 6, 0, 1)
    records = read_records(tmp_path / "run" / "predictions.jsonl")
    by_id = {r["id"]: r for r in records}
    assert sorted(by_id) == [f"q{i}" for i in range(6)]
    ok, failed = by_id["q0"], by_id["q3"]
    assert ok["predicted"] == "item 0" and ok["metrics"]["f1"] == 1.0 and ok["error"] is None
    assert ok["usage"]["llm_calls"] == 1 and ok["usage"]["tokens_by_role"]["answerer"][0] > 0
    tin, tout = ok["usage"]["prompt_tokens"], ok["usage"]["completion_tokens"]
    assert ok["usage"]["cost_usd"] == pytest.approx((tin * 1.0 + tout * 2.0) / 1e6)
    assert failed["predicted"] == "" and "provider down" in failed["error"] and failed["metrics"]["f1"] == 0.0
    assert result.f1 == pytest.approx(100 * 5 / 6)
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["method"] == "cot" and meta["dataset"] == "toy" and meta["settings"]["prices"]


def _one_call_then(name: str, then):
    """Register method ``name``: a node making one planner call, then ``then`` (a node that fails or hangs)."""
    class S(TypedDict, total=False):
        question: str
        llm_calls: Annotated[list, operator.add]

    def build(model=None, sources=None, settings=None, checkpointer=None):
        async def ask(state):
            rec = CallRecorder(role="planner", stage="plan")
            await model.ainvoke(state["question"], config={"callbacks": [rec]})
            return {"llm_calls": rec.calls}

        g = StateGraph(S)
        g.add_node("ask", ask)
        g.add_node("then", then)
        g.add_edge(START, "ask")
        g.add_edge("ask", "then")
        g.add_edge("then", END)
        return g.compile(checkpointer=checkpointer)

    register_method(name, build)


async def test_a_graph_that_raises_keeps_the_calls_it_made(tmp_path):
    async def explode(state):
        raise ValueError("tree budget exceeded")

    _one_call_then("test-exploding", explode)
    result = await arun_eval("test-exploding", _examples(2), tmp_path / "x", EvalOptions(
        model=ScriptedChatModel(default="ok"), progress=False))
    assert result.errors == 2
    rec = result.records[0]
    assert "tree budget exceeded" in rec["error"]
    assert rec["usage"]["llm_calls"] == 1 and rec["usage"]["llm_calls_by_role"] == {"planner": 1}


async def test_a_question_that_times_out_keeps_the_calls_it_made(tmp_path):
    """Without a checkpoint file the run's in-memory saver keeps a question's state when it ends, cancelled too."""
    async def hang(state):
        await asyncio.sleep(60)

    _one_call_then("test-hanging", hang)
    result = await arun_eval("test-hanging", _examples(1), tmp_path / "x",
                             EvalOptions(model=ScriptedChatModel(default="ok"), progress=False, timeout_s=1.0))
    rec = result.records[0]
    assert "timed out" in rec["error"]
    assert rec["usage"]["llm_calls"] == 1


def test_rerun_repairs_a_truncated_last_line_and_skips_done(tmp_path):
    out = tmp_path / "run"
    model = ScriptedChatModel(default=_answer_by_number)
    run_eval("standard", _examples(3), out, EvalOptions(model=model, progress=False, dataset_name="toy"))
    pred = out / "predictions.jsonl"
    with open(pred, "ab") as fh:
        fh.write(b'{"id": "q3", "predicted": "ite')  # a write cut short by a kill
    result = run_eval("standard", _examples(5), out, EvalOptions(model=model, progress=False, dataset_name="toy"))
    assert (result.skipped, result.finished) == (3, 2)
    ids = [r["id"] for r in read_records(pred)]
    assert sorted(ids) == ["q0", "q1", "q2", "q3", "q4"]
    with pytest.raises(ConfigError, match="holds a run of method 'standard'"):
        run_eval("cot", _examples(5), out, EvalOptions(model=model, progress=False, dataset_name="toy"))


def test_killed_cli_run_resumes_with_each_example_exactly_once(tmp_path):
    data = _dataset_file(tmp_path / "toy.jsonl", 24)
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [[f"item number {i}\\?\\s*\\nAnswer", f"So the answer is: item {i}"]
                                           for i in range(24)], "default": "So the answer is: ?", "latency_s": 0.3}))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "atomgraph.cli", "eval", "run", "--method", "cot", "--dataset", str(data),
           "--model", f"scripted:{rules}", "--concurrency", "2", "--out", str(out), "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pred = out / "predictions.jsonl"
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline:
            if pred.exists() and pred.read_bytes().count(b"\n") >= 4:
                break
            if proc.poll() is not None:
                pytest.fail(f"run ended early: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.02)
        else:
            pytest.fail("no predictions appeared")
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    partial = read_records(pred)
    assert 4 <= len(partial) < 24
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "already done" in done.stdout
    ids = [r["id"] for r in read_records(pred)]
    assert len(ids) == 24 and len(set(ids)) == 24
    assert all(r["metrics"]["f1"] == 1.0 for r in read_records(pred))


def test_cli_run_with_model_and_sources_factories(tmp_path, monkeypatch, capsys):
    from atomgraph.cli import main

    (tmp_path / "my_plugins.py").write_text(
        "from atomgraph.testing import ScriptedChatModel\n"
        "from atomgraph.tools.memory_source import InMemorySource\n"
        "def model(settings):\n"
        "    return ScriptedChatModel(default='So the answer is: item 1')\n"
        "def sources(settings):\n"
        "    return [InMemorySource([{'title': 'Item 1', 'text': 'item number 1 is item 1'}], name='notes')]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    data = _dataset_file(tmp_path / "toy.jsonl", 3)
    rc = main(["eval", "run", "--method", "rag", "--dataset", str(data), "--out", str(tmp_path / "r"),
               "--model-factory", "my_plugins:model", "--sources-factory", "my_plugins:sources", "--no-progress"])
    assert rc == 0 and "3 run now" in capsys.readouterr().out
    records = read_records(tmp_path / "r" / "predictions.jsonl")
    assert {r["usage"]["retriever_calls_by_source"]["notes"] for r in records} == {1}
    assert [r["metrics"]["f1"] for r in sorted(records, key=lambda r: r["id"])] == [0.5, 1.0, 0.5]
    assert main(["eval", "run", "--method", "rag", "--dataset", str(data), "--out", str(tmp_path / "r"),
                 "--model-factory", "my_plugins:nope"]) == 2
    assert "cannot import 'my_plugins:nope'" in capsys.readouterr().err


def test_a_source_that_dies_mid_run_is_counted_in_the_closing_lines(tmp_path):
    """A source that answers the first questions and then fails: the questions still end (RAG answers
    from what it has), and the run's outcome counts the failed source calls and the examples they
    touched, so the closing lines say so."""
    from langchain_core.documents import Document

    from atomgraph.evaluation.runner import describe_outcome

    calls = {"n": 0}

    def flaky(query: str) -> list[Document]:
        calls["n"] += 1
        if calls["n"] > 2:
            raise ConnectionError("endpoint went away")
        return [Document(page_content=f"{query} is item 1.", metadata={"title": "Items", "id": f"d{calls['n']}"})]

    def healthy(query: str) -> list[Document]:
        return [Document(page_content="Items are numbered.", metadata={"title": "Numbers", "id": "n"})]

    result = run_eval("rag", _examples(4), tmp_path / "run", EvalOptions(
        model=ScriptedChatModel(default=_answer_by_number), sources=[flaky, healthy], concurrency=1, progress=False,
        dataset_name="toy"))
    o = result.outcome
    assert o["source_failures"] == {"flaky": 2} and o["examples_with_source_failures"] == 2, o
    assert "2 source calls failed in 2 examples (2 flaky)" in describe_outcome(o)


async def test_record_fsyncs_wait_off_the_event_loop_and_a_cancelled_sync_keeps_its_line(tmp_path, monkeypatch):
    """Lines are appended in call order on the loop; each fsync runs in the writer's thread and
    finishes even when the awaiting task is cancelled, before the descriptor closes."""
    import asyncio
    import threading

    from atomgraph.evaluation.records import RecordWriter

    loop_thread = threading.get_ident()
    synced: list[int] = []
    real = os.fsync

    def slow_fsync(fd):
        time.sleep(0.05)
        synced.append(threading.get_ident())
        real(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    path = tmp_path / "predictions.jsonl"
    with RecordWriter(path) as writer:
        for i in range(3):
            writer.append({"id": f"q{i}"})
            await writer.synced()
        writer.append({"id": "q3"})
        task = asyncio.ensure_future(writer.synced())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == ["q0", "q1", "q2", "q3"]
    assert len(synced) == 4 and loop_thread not in synced
