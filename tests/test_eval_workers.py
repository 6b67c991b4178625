"""``eval run --workers N``: questions answered in N processes, each record written once by the run's
process; a SIGKILL of the run's process or of a worker, then a rerun, leaves every question recorded once."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from atomgraph.errors import ConfigError
from atomgraph.evaluation.records import read_records
from atomgraph.evaluation.runner import EvalOptions, run_eval, scripted_model_from_file
from atomgraph.evaluation.workers import shares
from atomgraph.testing import ScriptedChatModel

REPO = Path(__file__).resolve().parents[1]
N = 16


def _files(tmp_path: Path, latency_s: float) -> tuple[Path, Path]:
    data = tmp_path / "toy.jsonl"
    data.write_text("".join(json.dumps({"question_id": f"q{i}", "question": f"What is item number {i}?",
                                        "answers": [f"item {i}"]}) + "\n" for i in range(N)))
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [[f"item number {i}\\?\\s*\\nAnswer", f"So the answer is: item {i}"]
                                           for i in range(N)], "default": "So the answer is: ?",
                                 "latency_s": latency_s}))
    return data, rules


class _Run:
    """The CLI run as a process, its stderr read as it comes (the workers' process ids)."""

    def __init__(self, cmd: list[str]):
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.err: list[str] = []
        self.reader = threading.Thread(target=lambda: self.err.extend(self.proc.stderr), daemon=True)
        self.reader.start()

    def workers(self) -> list[int]:
        return [int(m.group(1)) for line in list(self.err) if (m := re.search(r"worker \d of 2: process (\d+)", line))]

    def wait_for(self, pred: Path, records: int) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if len(self.workers()) == 2 and pred.exists() and pred.read_bytes().count(b"\n") >= records:
                return
            if self.proc.poll() is not None:
                pytest.fail(f"run ended early: {''.join(self.err)[-2000:]}")
            time.sleep(0.02)
        pytest.fail("no predictions appeared")

    def finish(self) -> tuple[int, str, str]:
        out = self.proc.stdout.read()
        rc = self.proc.wait(timeout=120)
        self.reader.join(10)
        return rc, out, "".join(self.err)


def _gone(pid: int, within_s: float = 20) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie (reaped by no one yet) counts as gone
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                return True
        except (FileNotFoundError, IndexError):
            return True
        time.sleep(0.05)
    return False


def test_killed_run_and_killed_worker_then_a_rerun_record_each_question_once(tmp_path):
    """The run's process SIGKILLed mid-run: its workers end by themselves, the rerun continues. A worker
    SIGKILLed mid-run: the other finishes the run, the questions it had in flight are named and not recorded,
    the run exits 1; the rerun runs them. Every question ends recorded exactly once."""
    data, rules = _files(tmp_path, latency_s=0.15)
    out = tmp_path / "run"
    pred = out / "predictions.jsonl"
    cmd = [sys.executable, "-m", "atomgraph.cli", "eval", "run", "--method", "cot", "--dataset", str(data),
           "--model", f"scripted:{rules}", "--concurrency", "2", "--workers", "2", "--out", str(out), "--no-progress"]

    first = _Run(cmd)  # the run's own process killed
    try:
        first.wait_for(pred, 3)
        workers = first.workers()
        first.proc.send_signal(signal.SIGKILL)
    finally:
        first.proc.kill()
        first.finish()
    assert all(_gone(pid) for pid in workers), "a worker outlived the run's process"
    done_first = [r["id"] for r in read_records(pred)]
    assert 3 <= len(done_first) < N and len(set(done_first)) == len(done_first)

    second = _Run(cmd)  # a worker killed: the run goes on in the other one
    try:
        second.wait_for(pred, len(done_first) + 2)
        os.kill(second.workers()[0], signal.SIGKILL)
        rc, stdout, stderr = second.finish()
    finally:
        second.proc.kill()
    assert rc == 1, stderr
    assert "not recorded" in stderr and "rerun the same command" in stderr
    assert re.search(r"worker \d ended \(killed by signal SIGKILL", stdout) and "2 worker processes answered" in stdout
    assert json.loads((out / "run.json").read_text())["workers"] == 2
    after = [r["id"] for r in read_records(pred)]
    assert len(after) == len(set(after)) and len(after) < N

    # the rerun in this process (one worker: the same lock and resume rules) runs exactly what is left
    third = run_eval("cot", str(data), out, EvalOptions(model=scripted_model_from_file(rules), concurrency=2,
                                                        progress=False))
    assert third.skipped == len(after) and third.finished == N - len(after) and not third.unfinished
    ids = [r["id"] for r in read_records(pred)]
    assert sorted(ids) == sorted(f"q{i}" for i in range(N))
    assert all(r["metrics"]["f1"] == 1.0 for r in read_records(pred))
    assert json.loads((out / "run.json").read_text())["workers"] == 1


def test_workers_share_the_concurrency_and_refuse_what_they_cannot_run(tmp_path):
    assert shares(5, 2) == [3, 2] and shares(32, 2) == [16, 16] and sum(shares(7, 3)) == 7
    model = ScriptedChatModel(default="So the answer is: x")
    with pytest.raises(ConfigError, match="concurrency of at least 3"):
        run_eval("cot", [], tmp_path / "a", EvalOptions(model=model, workers=3, concurrency=2, progress=False))
    with pytest.raises(ConfigError, match="--checkpoint"):
        run_eval("cot", [], tmp_path / "b", EvalOptions(model=model, workers=2, checkpoint=tmp_path / "c.sqlite",
                                                        progress=False))

    class Unsendable(ScriptedChatModel):
        def __getstate__(self):
            raise TypeError("holds a connection")

    with pytest.raises(ConfigError, match="cannot receive the model"):
        run_eval("cot", [], tmp_path / "d", EvalOptions(model=Unsendable(default="x"), workers=2, progress=False))


def test_each_worker_loads_its_embedding_model_before_its_questions_and_run_json_says_what_ran_it(tmp_path):
    """A retrieving method in two workers with the command line's ``worker_warm``: each loads the embedding
    model at its start (not in its first question), and ``run.json``'s ``run.embedding_runtime`` names the
    runtime the workers used."""
    from atomgraph.settings import Settings
    from atomgraph.tools.ingest import ingest
    from atomgraph.warmup import worker_warm

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"title": f"Item {i}", "text": f"Item number {i} is item {i}."}) + "\n"
                              for i in range(4)))
    settings = Settings(cache=False, chroma_path=str(tmp_path / "chroma"), sources=["wikipedia"])
    ingest([corpus], settings.chroma_collection, settings=settings, progress=False)
    data, _ = _files(tmp_path, latency_s=0.0)
    model = ScriptedChatModel(rules=[(rf"item number {i}\?", f"So the answer is: item {i}") for i in range(N)],
                              default="So the answer is: ?")
    out = tmp_path / "run"
    result = run_eval("rag", str(data), out, EvalOptions(model=model, settings=settings, workers=2, concurrency=2,
                                                          limit=4, progress=False, worker_warm=worker_warm))
    assert result.finished == 4 and not result.unfinished and not result.worker_failures, result.worker_failures
    assert [r["metrics"]["f1"] for r in result.records] == [1.0] * 4
    (record,) = result.embedding_runtimes  # the same in both workers: recorded once
    assert record["model"] == "sentence-transformers/all-MiniLM-L6-v2" and record["used"] == record["wanted"], record
    assert json.loads((out / "run.json").read_text())["run"]["embedding_runtime"] == record
