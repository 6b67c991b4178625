"""Durable runs: ``atomgraph ask --checkpoint`` killed with SIGKILL mid-question resumes from its
last completed step with no repeated model call (counted on an OpenAI-compatible server on
127.0.0.1); ``eval run --checkpoint`` keeps a thread per question; foreign files are refused."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from atomgraph.checkpoint import FORMAT, META_TABLE, check_file, thread_id
from atomgraph.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
QUESTION = "Where was the physicist who proposed relativity born?"
SOURCES = '''
from langchain_core.documents import Document

def make(settings):
    def kb(query):
        return [Document(page_content=f"Albert Einstein was born in Ulm. (found for: {query[-40:]})",
                         metadata={"title": "Albert Einstein", "id": "e1"})]
    return [kb]
'''


class CountingServer:
    """Chat completions on 127.0.0.1 that count requests; request number ``hang_on`` waits until
    :meth:`release` (so a test can kill the client while it is in flight)."""

    def __init__(self, hang_on: int | None = None):
        self.prompts: list[str] = []
        self.hang_on = hang_on
        self.released = threading.Event()
        self.hanging = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.prompts.append(body["messages"][-1]["content"])
                n = len(outer.prompts)
                if n == outer.hang_on:
                    outer.hanging.set()
                    outer.released.wait(30)
                text = f"Step {n}: Einstein was born in Ulm. So the answer is: Ulm"
                data = json.dumps({"id": f"c{n}", "object": "chat.completion", "created": 0, "model": "m",
                                   "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                "finish_reason": "stop"}],
                                   "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def env(tmp_path):
    (tmp_path / "user_kb.py").write_text(SOURCES)
    e = {k: v for k, v in os.environ.items() if not k.startswith("ATOMGRAPH_")}
    e.update(PYTHONPATH=f"{tmp_path}{os.pathsep}{REPO}", OPENAI_API_KEY="test", ATOMGRAPH_CACHE="false",
             ATOMGRAPH_ITER_RETGEN__ROUNDS="3", ATOMGRAPH_ITER_RETGEN__STOP_WHEN_STABLE="true",
             ATOMGRAPH_CHROMA_PATH=str(tmp_path / "chroma"), HF_HUB_OFFLINE="1")
    return e


def ask_cmd(ckpt: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "atomgraph.cli", "ask", QUESTION, "--method", "iter_retgen", "--model", "m",
            "--sources-factory", "user_kb:make", "--checkpoint", str(ckpt), "--json", *extra]


def test_kill_9_mid_question_resumes_without_repeating_a_call(tmp_path, env):
    server = CountingServer(hang_on=2)  # round 1 completes; the kill lands during round 2's call
    env["OPENAI_BASE_URL"] = server.url
    ckpt = tmp_path / "runs" / "ask.sqlite"
    try:
        proc = subprocess.Popen(ask_cmd(ckpt), env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert server.hanging.wait(120), proc.communicate(timeout=5)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert len(server.prompts) == 2
        server.hang_on = None
        server.released.set()
        done = subprocess.run(ask_cmd(ckpt), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        # Iter-RetGen (stop_when_stable on) stops when round 2 repeats round 1's answer: 2 rounds, 2 completed calls.
        # Round 1 was not asked again; round 2 once more (its first attempt never returned).
        assert out["answer"] == "Ulm" and out["trace"]["rounds"] == 2
        assert len(server.prompts) == 3
        assert server.prompts[1] == server.prompts[2] != server.prompts[0]
        assert server.prompts.count(server.prompts[0]) == 1
        assert len(out["llm_calls"]) == 2
        # asked again: the finished thread is read back, no call at all
        again = subprocess.run(ask_cmd(ckpt), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180)
        assert json.loads(again.stdout)["answer"] == "Ulm" and len(server.prompts) == 3
        assert "finished" in again.stderr and thread_id("iter_retgen", QUESTION) in again.stderr
    finally:
        server.close()


def test_eval_run_keeps_a_thread_per_question(tmp_path, env):
    server = CountingServer()
    env["OPENAI_BASE_URL"] = server.url
    data = tmp_path / "qs.jsonl"
    data.write_text("\n".join(json.dumps({"id": f"q{i}", "question": f"Question {i}?", "answers": ["Ulm"]})
                              for i in range(2)))
    ckpt = tmp_path / "eval.sqlite"
    try:
        cmd = [sys.executable, "-m", "atomgraph.cli", "eval", "run", "--method", "iter_retgen", "--dataset",
               str(data), "--out", str(tmp_path / "run"), "--model", "m", "--sources-factory", "user_kb:make",
               "--checkpoint", str(ckpt), "--no-progress"]
        done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        with sqlite3.connect(ckpt) as conn:
            threads = {r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
        assert threads == {thread_id("iter_retgen", "", dataset=str(data), example_id=f"q{i}") for i in range(2)}
    finally:
        server.close()


def test_foreign_and_other_version_files_are_refused(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database, just bytes" * 40)
    with pytest.raises(ConfigError, match="not an SQLite checkpoint file"):
        check_file(junk)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (x)")
    with pytest.raises(ConfigError, match="not written by atomgraph"):
        check_file(other)
    old = tmp_path / "old.sqlite"
    with sqlite3.connect(old) as conn:
        conn.execute(f"CREATE TABLE {META_TABLE} (key TEXT PRIMARY KEY, value TEXT)")
        conn.executemany(f"INSERT INTO {META_TABLE} VALUES (?, ?)", [("format", "0"), ("atomgraph", "0.0.1")])
    with pytest.raises(ConfigError, match=r"written by atomgraph 0.0.1 \(checkpoint format 0\).*format " + FORMAT):
        check_file(old)
    check_file(tmp_path / "new.sqlite")  # a missing file is created on first use


def test_cli_reports_a_bad_checkpoint_file_clearly(tmp_path, env):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"x" * 4096)
    done = subprocess.run(ask_cmd(junk), env={**env, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "not an SQLite checkpoint file" in done.stderr
    assert "Traceback" not in done.stderr
