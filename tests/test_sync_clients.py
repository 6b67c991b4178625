"""Every method, run several times in a row with a real ``ChatOpenAI`` client against an
OpenAI-compatible server that keeps connections alive (as real providers do), through
``invoke``, ``ainvoke``, ``batch`` and ``stream``.

The client pools its connections; a sync run that gave every node an event loop of its own
broke on the second call ("Event loop is closed"). Sync runs now share one loop and call
models through their sync clients (``nodes/runtime.py``: ``sync_loop``, ``call_model``), so
sync and async runs mix in one process. Async runs share one event loop, as in an async
application or a notebook kernel — or each runs on a loop of its own (``asyncio.run`` per
call, a second ``run_eval`` in a script): langchain-openai keeps one async connection pool per
base URL for the whole process, bound to the first loop that used it, and the next loop's calls
failed with "Event loop is closed" (a fresh graph built from the settings too). Every ChatOpenAI
the kit builds or is given now sends through a client of the running loop's own
(``atomgraph/loop_clients.py``).
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
                      timeout=120)  # replies take seconds; a loaded machine stalls more


def graph_of(method: str, base_url: str):
    settings = Settings(cache=False)
    return build_method(method, model=client(base_url), sources=[InMemorySource(PASSAGES, name="wikipedia")],
                        settings=settings)


def field(record, name: str):
    """A usage record's field (records are plain dicts in the output; objects inside nodes)."""
    return record.get(name) if isinstance(record, dict) else getattr(record, name, None)


def answered(out: dict, method: str) -> None:
    if method == "react" and str(out.get("error") or "").startswith("the agent never searched"):
        # the fake server calls no tools: ReAct says so instead of passing its reply off as an answer
        assert out["answer"] == "" and out.get("llm_calls"), out
        return
    assert not out.get("error"), (method, out.get("error"))
    failed = [field(c, "error") for c in out.get("llm_calls", []) if field(c, "error")]
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


@pytest.mark.parametrize("method", METHODS)
def test_a_run_whose_model_calls_all_fail_says_so_in_error(method):
    """One failure contract: no answer because the model failed is ``error``, never a quiet
    "Unknown" (ATOMR answered "Unknown" with no error)."""
    from atomgraph.testing import ScriptedChatModel

    down = ScriptedChatModel(default=ConnectionError("model server down"))
    graph = build_method(method, model=down, sources=[InMemorySource(PASSAGES, name="wikipedia")],
                         settings=Settings(cache=False))
    out = graph.invoke({"question": QUESTION})
    assert out["error"] and "model server down" in json.dumps(out["error"]) + json.dumps(
        [field(c, "error") for c in out["llm_calls"]]), (method, out["error"])
    assert ANSWER not in str(out["answer"])


@pytest.mark.parametrize("method", ["rag", "atomr", "react"])
def test_a_notebook_cell_mixes_invoke_and_await_ainvoke(keep_alive_server, loop, method):
    """A Jupyter cell runs inside the kernel's event loop: ``graph.invoke`` there, then
    ``await graph.ainvoke`` on that loop, then ``invoke`` again, with one pooled client."""
    graph = graph_of(method, keep_alive_server)

    async def cells():
        outs = [graph.invoke({"question": QUESTION})]
        outs.append(await graph.ainvoke({"question": QUESTION}))
        outs.append(graph.invoke({"question": QUESTION}))
        outs.append(await graph.ainvoke({"question": QUESTION}))
        return outs

    for out in loop.run_until_complete(cells()):
        answered(out, method)


@pytest.mark.parametrize("method", METHODS)
def test_asyncio_run_again_and_again_with_the_same_model(keep_alive_server, method):
    """A ChatOpenAI given to a graph, awaited on a new event loop each time (``asyncio.run``)."""
    model = client(keep_alive_server)
    default_async = model.root_async_client
    graph = build_method(method, model=model, sources=[InMemorySource(PASSAGES, name="wikipedia")],
                         settings=Settings(cache=False))
    for _ in range(3):
        answered(asyncio.run(graph.ainvoke({"question": QUESTION})), method)
    assert model.root_async_client is default_async  # the caller's object is left as it was (a copy changed)
    answered(graph.invoke({"question": QUESTION}), method)
    answered(asyncio.run(graph.ainvoke({"question": QUESTION})), method)


def test_graphs_built_from_settings_on_new_event_loops(keep_alive_server):
    """Fresh graphs from the settings, each on its own loop: langchain-openai's client cache is
    process-wide, so the second loop's call failed ("Event loop is closed") before."""
    settings = Settings(model="local-served", openai_base_url=keep_alive_server, openai_api_key="x", cache=False,
                        max_retries=0)
    for method in ["standard", "cot", "rag", "standard"]:
        graph = build_method(method, settings=settings, sources=[InMemorySource(PASSAGES, name="wikipedia")])
        answered(asyncio.run(graph.ainvoke({"question": QUESTION})), method)


def test_a_model_with_its_own_async_client_is_left_alone(keep_alive_server):
    from langchain_openai._compat import httpx

    from atomgraph.loop_clients import is_loop_local, loop_safe

    own = httpx.AsyncClient()
    model = ChatOpenAI(model="local", base_url=keep_alive_server, api_key="x", http_async_client=own)
    assert loop_safe(model, copy=True) is model
    plain = client(keep_alive_server)
    safe = loop_safe(plain, copy=True)
    assert safe is not plain and is_loop_local(safe.root_async_client._client)
    assert not is_loop_local(plain.root_async_client._client)


COLLECT = """
import asyncio
import gc


def collect_on_another_loop():  # the garbage collector running while another loop runs, as in a longer script
    async def collect():
        gc.collect()
        await asyncio.sleep(0.2)

    asyncio.run(collect())
    gc.collect()
"""


def _run_quietly(script: Path, body: str) -> None:
    """Run ``body`` as a script (with ``collect_on_another_loop``): it succeeds, and no connection is
    closed on a loop that has ended."""
    script.write_text(COLLECT + body)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Event loop is closed" not in out.stderr and "never retrieved" not in out.stderr, out.stderr[-2000:]


def test_run_eval_twice_in_one_script_closes_its_connections_on_its_own_loop(keep_alive_server, tmp_path):
    """A script running ``run_eval`` twice (two ``asyncio.run``): the first run's connections are
    closed before its loop ends (``closing_clients``), so no client collected later tries to close
    them on the second run's loop ("Task exception was never retrieved ... Event loop is closed")."""
    _run_quietly(tmp_path / "twice.py", f"""
from atomgraph.evaluation.datasets import Example
from atomgraph.evaluation.runner import EvalOptions, run_eval
from atomgraph.settings import Settings

settings = Settings(model="local-served", openai_base_url={keep_alive_server!r}, openai_api_key="x", cache=False,
                    max_retries=0)
for i in range(3):
    run_eval("standard", [Example(id=f"q{{i}}", question={QUESTION!r}, answers=[{ANSWER!r}])],
             {str(tmp_path)!r} + f"/run{{i}}", EvalOptions(settings=settings, progress=False, dataset_name="t"))
    collect_on_another_loop()
""")


def test_a_sync_call_nested_in_the_sync_loop_closes_its_own_loops_connections(keep_alive_server, tmp_path):
    """A sync call made from the sync loop's own thread (a sync graph call inside a node) runs on a
    loop of its own in a helper thread; that loop's connections close with it, so none is left for
    the garbage collector to close on another loop."""
    _run_quietly(tmp_path / "nested.py", f"""
import asyncio
from langchain_openai import ChatOpenAI
from atomgraph.loop_clients import loop_safe
from atomgraph.nodes.sync import run_sync, sync_loop

model = loop_safe(ChatOpenAI(model="local-served", base_url={keep_alive_server!r}, api_key="x", max_retries=0))

used = []

async def inner():
    used.append(model.root_async_client._client.for_running_loop())  # the nested loop's own client
    return (await model.ainvoke("Who directed Kuhle Wampe?")).content

async def outer():  # on the sync loop's thread: run_sync takes its nested path
    return run_sync(inner())

for i in range(3):
    assert {ANSWER!r} in asyncio.run_coroutine_threadsafe(outer(), sync_loop()).result(60)
    assert used[-1].is_closed, "the nested loop ended with its client open"
    collect_on_another_loop()
""")


def test_every_loops_client_shares_the_process_tls_context():
    """A new event loop's client takes the process's TLS context (the CA store loaded once, not once a loop:
    15-30 ms of CPU for each asyncio.run, ask and evaluation run)."""
    from atomgraph.loop_clients import LoopLocalAsyncClient, _httpx, tls_context

    shared = LoopLocalAsyncClient("http://127.0.0.1:9/v1")

    async def tls_of_this_loops_client():
        client = shared.for_running_loop()
        try:
            return client._transport._pool._ssl_context
        finally:
            await client.aclose()

    first, second = asyncio.run(tls_of_this_loops_client()), asyncio.run(tls_of_this_loops_client())
    assert first is second is tls_context(_httpx())
