"""Every method, run several times in a row with a real ``ChatOpenAI`` client against an
OpenAI-compatible server that keeps connections alive (as real providers do), through
``invoke``, ``ainvoke``, ``batch`` and ``stream``.

The client pools its connections; a sync run that gave every node an event loop of its own
broke on the second call ("Event loop is closed"). Sync runs now share one loop and call
models through their sync clients (``nodes/runtime.py``: ``sync_loop``, ``call_model``), so
sync and async runs mix in one process. Async runs here share one event loop, as in an
async application or a notebook kernel: LangChain's OpenAI client keeps one connection pool
per process, and ``asyncio.run`` per call breaks it with ChatOpenAI alone (not a graph).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_openai import ChatOpenAI

from atomgraph.graphs.registry import build_method
from atomgraph.settings import Settings
from atomgraph.testing import answer_reply
from atomgraph.tools.memory_source import InMemorySource

SERVER = Path(__file__).with_name("openai_compat_server.py")
QUESTION = "Who directed Kuhle Wampe?"
ANSWER = "Slatan Dudow"
PASSAGES = [{"title": "Kuhle Wampe", "text": "Kuhle Wampe is a 1932 film directed by Slatan Dudow."}]
PLAN = {QUESTION: ["1. Who directed Kuhle Wampe?"], "1. Who directed Kuhle Wampe?": "Relate(Kuhle Wampe, director)"}

# One reply per stage of every method, in the form each stage's parser reads.
SCRIPT = {
    "*": f"Kuhle Wampe was directed by {ANSWER}.\nSo the answer is: {ANSWER}",
    "plan": json.dumps(PLAN),
    "relate": answer_reply(ANSWER),
    "search": answer_reply(ANSWER),
    "child_reasoning": answer_reply(ANSWER),
    "sibling_reasoning": answer_reply(ANSWER),
    "direct_rag": answer_reply(ANSWER),
    "self_ask_step": f"So the final answer is: {ANSWER}",
    "decomposed_rag_plan": "1. Who directed Kuhle Wampe?",
}

# Methods that need no index of their own (ARM and KAR³ are built with theirs below).
METHODS = ["standard", "cot", "rag", "atomr", "self_ask", "ircot", "iter_retgen", "decomposed_rag", "react"]


@pytest.fixture(scope="module")
def keep_alive_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("keepalive")
    script = tmp / "script.json"
    script.write_text(json.dumps(SCRIPT))
    proc = subprocess.Popen([sys.executable, str(SERVER), str(script), "--all-stages"],
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def client(base_url: str) -> ChatOpenAI:
    return ChatOpenAI(model="local", base_url=base_url, api_key="not-needed", temperature=0, max_retries=0,
                      timeout=20)


def graph_of(method: str, base_url: str):
    settings = Settings(cache=False)
    return build_method(method, model=client(base_url), sources=[InMemorySource(PASSAGES, name="wikipedia")],
                        settings=settings)


def answered(out: dict, method: str) -> None:
    assert not out.get("error"), (method, out.get("error"))
    failed = [c.error for c in out.get("llm_calls", []) if getattr(c, "error", None)]
    assert not failed, (method, failed)
    assert ANSWER.lower() in str(out["answer"]).lower(), (method, out["answer"])


@pytest.fixture(scope="module")
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.mark.parametrize("method", METHODS)
def test_sync_invoke_again_and_again_with_a_pooled_client(keep_alive_server, method):
    graph = graph_of(method, keep_alive_server)
    for _ in range(3):
        answered(graph.invoke({"question": QUESTION}), method)


@pytest.mark.parametrize("method", METHODS)
def test_invoke_ainvoke_batch_and_stream_in_a_row(keep_alive_server, loop, method):
    graph = graph_of(method, keep_alive_server)
    answered(graph.invoke({"question": QUESTION}), method)

    async def twice():
        return [await graph.ainvoke({"question": QUESTION}) for _ in range(2)]

    for out in loop.run_until_complete(twice()):
        answered(out, method)
    for out in graph.batch([{"question": QUESTION}] * 3):
        answered(out, method)
    chunks = list(graph.stream({"question": QUESTION}, stream_mode="values"))
    answered(chunks[-1], method)
    answered(graph.invoke({"question": QUESTION}), method)
