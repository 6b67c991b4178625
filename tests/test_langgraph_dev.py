"""`langgraph dev` (the in-memory LangGraph server) serves every graph of langgraph.json,
and runs every one of them to completion through ``langgraph_sdk``.

The server runs from the repository root, as a user would start it, on 127.0.0.1 and a
free port, fully offline: no browser, no reload watcher, no LangSmith tracing, no CLI
analytics, no version check against PyPI. It is stopped (its whole process group) when
the fixture ends. It runs with the default settings (response cache on; blocking I/O in
an async node is an error there), with ``OPENAI_BASE_URL`` pointing at the project's
keep-alive fake OpenAI-compatible server (``tests/openai_compat_server.py``) and no model
configured: a run picks its model in its context (``{"model": MODEL}``), as a Studio user
does in the form; a run that picks none gets the "no chat model is configured" text.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
LANGGRAPH = Path(sys.executable).parent / "langgraph"
STARTUP_TIMEOUT_S = 180  # about 15 s on a loaded 2-CPU machine

# What keeps `langgraph dev` off the network (see langgraph_cli/analytics.py and
# langgraph_api/cli.py, langgraph_api/config): analytics ping, PyPI version check, tracing.
OFFLINE_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGCHAIN_TRACING": "false",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
}

pytestmark = pytest.mark.skipif(not LANGGRAPH.exists(), reason="langgraph-cli[inmem] is not installed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(tmp: Path, model_server: str | None = None) -> dict[str, str]:
    """The caller's environment without model keys, tracing or atomgraph settings (and with
    ``OPENAI_BASE_URL`` at ``model_server``, where given)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LANGSMITH_", "LANGCHAIN_", "LANGGRAPH_", "OPENAI_", "SERPAPI_", "ATOMGRAPH_"))}
    env.update(OFFLINE_ENV)
    env["ATOMGRAPH_CACHE_PATH"] = str(tmp / "llm_cache.sqlite")
    env["ATOMGRAPH_CHROMA_PATH"] = str(tmp / "chroma")
    if os.environ.get("ATOMGRAPH_MODEL_DIR"):  # the session's model folder (the embedding model's ONNX export)
        env["ATOMGRAPH_MODEL_DIR"] = os.environ["ATOMGRAPH_MODEL_DIR"]
    # the Wikidata source from the demo pack's KG file (in process): with no network the public
    # endpoint fails every call, and a question whose every source call failed has no evidence (an error)
    from atomgraph.demo_pack import kg_path

    env["ATOMGRAPH_WIKIDATA_FILE"] = str(kg_path())
    env["ATOMGRAPH_DATA_DIRS"] = str(tmp.parent)  # pytest's folders: the files the runs name (server_files) live there
    if model_server:
        env["OPENAI_BASE_URL"] = model_server
    return env


# What the fake model server answers, per stage of every method (tests/openai_compat_server.py).
MODEL = "fake-served-model"  # any name: the fake server answers for every model but "down"
QUESTION = "Who directed Kuhle Wampe?"
ANSWER = "Slatan Dudow"
ARM_QUESTION = "In which city did Werner Heisenberg's doctoral advisor die?"
SCRIPT = {
    "*": f"Kuhle Wampe was directed by {ANSWER}.\nSo the answer is: {ANSWER}",
    "plan": json.dumps({QUESTION: "Relate(Kuhle Wampe, director)"}),
    "relate": f"Answer: {ANSWER}",
    "direct_rag": f"Answer: {ANSWER}",
    "self_ask_step": f"So the final answer is: {ANSWER}",
    "decomposed_rag_plan": "1. Who directed Kuhle Wampe?",
    "atomize": "Who directed Kuhle Wampe?\nWhen was Kuhle Wampe released?",
    "propose": json.dumps({"thinking": "the director is missing", "sub_questions": ["Who directed Kuhle Wampe?"]}),
    "select": json.dumps({"thinking": "the first candidate asks what is missing", "question_idx": 1}),
    "answer": json.dumps({"rationale": "from the passages", "answer": ANSWER}),
    "arm_decompose": json.dumps(["Heisenberg doctoral advisor", "died city"]),
    "arm_align": {"first_line_after": "Options:\n"},
    "arm_verify": json.dumps({"reasoning": "advisor, then where he died", "objects": ["p1", "p2"]}),
    "arm_answer": "Sommerfeld died in Munich.\nSo the answer is: Munich",
}


MODEL_REQUESTS: list[Path] = []


@pytest.fixture(scope="module")
def model_server(tmp_path_factory):
    """The keep-alive fake OpenAI-compatible server, answering every method's stages."""
    tmp = tmp_path_factory.mktemp("model_server")
    script = tmp / "script.json"
    script.write_text(json.dumps(SCRIPT))
    MODEL_REQUESTS[:] = [Path(f"{script}.requests.jsonl")]  # every request body the server got
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "openai_compat_server.py"), str(script),
                             "--all-stages"], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def server_files(tmp_path_factory) -> Path:
    """The corpus and ARM objects the runs index and read."""
    from tests.arm_graph_fixtures import OBJECTS

    tmp = tmp_path_factory.mktemp("server_files")
    passages = [{"title": "Kuhle Wampe", "text": "Kuhle Wampe is a 1932 German film directed by Slatan Dudow."},
                {"title": "Slatan Dudow", "text": "Slatan Dudow was a Bulgarian film director who worked in Germany."}]
    (tmp / "corpus.jsonl").write_text("".join(json.dumps(p) + "\n" for p in passages))
    (tmp / "objects.jsonl").write_text("".join(json.dumps(o.to_json()) + "\n" for o in OBJECTS))
    return tmp


@pytest.fixture(scope="module")
def langgraph_server(tmp_path_factory, model_server):
    tmp = tmp_path_factory.mktemp("langgraph_dev")
    log_path = tmp / "server.log"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1",
             "--port", str(port), "--config", "langgraph.json", "--server-log-level", "WARNING"],
            cwd=REPO, env=server_env(tmp, model_server), stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{log_path.read_text(errors='replace')[-4000:]}")
            try:
                if httpx.get(f"{base}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"langgraph dev did not answer in {STARTUP_TIMEOUT_S}s:\n"
                            f"{log_path.read_text(errors='replace')[-4000:]}")
            time.sleep(0.25)
        with httpx.Client(base_url=base, timeout=120) as client:  # a run takes seconds; a loaded machine more
            client.log_path = log_path  # type: ignore[attr-defined]
            yield client
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def assistant_of(client: httpx.Client, graph_id: str) -> dict:
    r = client.post("/assistants/search", json={"graph_id": graph_id, "limit": 10})
    r.raise_for_status()
    found = [a for a in r.json() if a["graph_id"] == graph_id]
    assert found, f"no assistant for graph {graph_id!r} in {r.json()}"
    return found[0]


def atomr_assistant(client: httpx.Client) -> dict:
    return assistant_of(client, "atomr")


def registered_graphs() -> list[str]:
    return sorted(json.loads((REPO / "langgraph.json").read_text())["graphs"])


def test_langgraph_json_registers_every_method_and_the_indexing_graph():
    graphs = set(registered_graphs())
    assert {"atomr", "standard", "cot", "rag", "wikipedia_index"} <= graphs
    # the built-in methods, read in a fresh interpreter (tests register methods of their own)
    names = subprocess.run([sys.executable, "-c", "from atomgraph.graphs.registry import method_names; "
                            "print(' '.join(method_names()))"], capture_output=True, text=True, check=True).stdout
    missing = [m for m in names.split() if m not in graphs]
    assert not missing, f"registered methods not in langgraph.json: {missing}"


def test_every_graph_loads_with_a_parameter_form(langgraph_server):
    """Each graph is drawn, and Studio gets a non-empty run-parameter (context) schema."""
    for graph_id in registered_graphs():
        assistant = assistant_of(langgraph_server, graph_id)
        r = langgraph_server.get(f"/assistants/{assistant['assistant_id']}/graph")
        assert r.status_code == 200, (graph_id, r.text[:500])
        assert len(r.json()["nodes"]) >= 3, graph_id  # __start__, at least one node, __end__
        r = langgraph_server.get(f"/assistants/{assistant['assistant_id']}/schemas")
        assert r.status_code == 200, (graph_id, r.text[:500])
        context = r.json().get("context_schema") or {}
        assert context.get("properties"), f"{graph_id}: empty parameter schema {r.json()}"
        for name, prop in context["properties"].items():
            assert prop.get("description"), f"{graph_id}.{name} has no description"


def test_langgraph_json_is_valid_and_names_atomr():
    from langgraph_cli.config import validate_config_file

    config = validate_config_file(REPO / "langgraph.json")
    path, _, attr = config["graphs"]["atomr"].partition(":")
    assert attr == "graph" and (REPO / path).is_file()
    assert "." in config["dependencies"]


def test_server_lists_the_atomr_graph_with_its_nodes(langgraph_server):
    assistant = atomr_assistant(langgraph_server)
    r = langgraph_server.get(f"/assistants/{assistant['assistant_id']}/graph")
    r.raise_for_status()
    drawing = r.json()
    nodes = {n["id"] for n in drawing["nodes"]}
    assert {"plan", "schedule", "select_sources", "run_operator", "reason_children",
            "reason_siblings", "direct_rag", "finalize"} <= nodes
    edges = {(e["source"], e["target"]) for e in drawing["edges"]}
    assert ("__start__", "plan") in edges and ("plan", "review_plan") in edges and ("review_plan", "schedule") in edges
    assert ("schedule", "finalize") in edges and ("finalize", "__end__") in edges
    assert ("run_operator", "schedule") in edges


def test_server_describes_the_input_schema(langgraph_server):
    assistant = atomr_assistant(langgraph_server)
    r = langgraph_server.get(f"/assistants/{assistant['assistant_id']}/schemas")
    r.raise_for_status()
    schemas = r.json()
    assert "question" in json.dumps(schemas.get("input_schema"))
    assert "answer" in json.dumps(schemas.get("output_schema"))


# --- runs through the SDK -------------------------------------------------------------------------

def sdk(server: httpx.Client):
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=str(server.base_url), timeout=120)


def run(server: httpx.Client, graph_id: str, inp: dict, context: dict | None = None, **kw) -> tuple[dict, dict]:
    """Run ``graph_id`` on a new thread and wait: (its last run record, its output values)."""
    client = sdk(server)
    thread = client.threads.create()
    out = client.runs.wait(thread["thread_id"], graph_id, input=inp, context=context, raise_error=False, **kw)
    record = client.runs.list(thread["thread_id"])[0]
    return record, out if isinstance(out, dict) else {}


def server_log(server: httpx.Client) -> str:
    return server.log_path.read_text(errors="replace")[-3000:]  # type: ignore[attr-defined]


QUESTION_GRAPHS = ["atomr", "standard", "cot", "rag", "self_ask", "ircot", "iter_retgen", "decomposed_rag", "react"]


def test_the_run_tests_cover_every_registered_graph():
    covered = set(QUESTION_GRAPHS) | {"arm", "kar3", "kar3_index", "wikipedia_index"}
    assert covered == set(registered_graphs())


def answered(record: dict, out: dict, expected: str, server: httpx.Client) -> None:
    from atomgraph.state.run import OUTPUT_KEYS

    assert record["status"] == "success", (record, out, server_log(server))
    assert set(OUTPUT_KEYS) <= set(out), sorted(out)
    assert not out["error"], out["error"]
    assert expected.lower() in out["answer"].lower(), out["answer"]
    assert out["llm_calls"] and not any(c.get("error") for c in out["llm_calls"]), out["llm_calls"]


@pytest.mark.parametrize("graph_id", QUESTION_GRAPHS)
def test_every_question_graph_runs_to_completion(langgraph_server, graph_id):
    """Default settings (the response cache on), the run's model picked in its context (rag
    twice in a row: the second run replays from the cache, which opens and writes off the loop)."""
    for _ in range(2 if graph_id == "rag" else 1):
        record, out = run(langgraph_server, graph_id, {"question": QUESTION}, {"model": MODEL})
        if graph_id == "react":  # the fake server calls no tools: ReAct says it never searched (an error, as data)
            assert record["status"] == "success" and "never searched" in (out.get("error") or ""), out
            continue
        answered(record, out, ANSWER, langgraph_server)


def test_arm_runs_over_its_data_collection(langgraph_server, server_files):
    record, out = run(langgraph_server, "arm", {"question": ARM_QUESTION},
                      {"model": MODEL, "objects": str(server_files / "objects.jsonl")})
    answered(record, out, "Munich", langgraph_server)
    assert {"p1", "p2"} <= set(out["retrieved_ids"])


def test_indexing_graphs_then_kar3_over_its_atoms(langgraph_server, server_files):
    corpus = str(server_files / "corpus.jsonl")
    record, out = run(langgraph_server, "wikipedia_index", {"inputs": [corpus], "collection": "studio_wiki"})
    assert record["status"] == "success" and out["error"] is None, (out, server_log(langgraph_server))
    assert out["stats"]["added"] == 2

    record, out = run(langgraph_server, "kar3_index", {"inputs": [corpus], "collection": "studio_kar3"},
                      {"model": MODEL})
    assert record["status"] == "success" and out.get("error") is None, (out, server_log(langgraph_server))
    assert out["stats"]["atomized"] == 2 and out["stats"]["atoms"] >= 2, out["stats"]

    record, out = run(langgraph_server, "kar3", {"question": QUESTION}, {"model": MODEL, "collection": "studio_kar3"})
    answered(record, out, ANSWER, langgraph_server)
    assert out["retrieved_ids"], json.dumps(out["trace"], default=str)[:3000]


def test_plan_review_interrupts_and_resumes_through_the_sdk(langgraph_server):
    client = sdk(langgraph_server)
    thread = client.threads.create()
    tid = thread["thread_id"]
    context = {"model": MODEL, "review_plan": True}
    client.runs.wait(tid, "atomr", input={"question": QUESTION}, context=context, raise_error=False)
    state = client.threads.get_state(tid)
    assert state["next"] == ["review_plan"], state["next"]
    pending = [i for task in state["tasks"] for i in task.get("interrupts", [])]
    assert pending and "Relate" in json.dumps(pending[0]["value"]["plan"]), pending
    # resume with an edited tree: the run answers from the edited plan
    edited = {QUESTION: "Relate(Kuhle Wampe, director)"}
    out = client.runs.wait(tid, "atomr", command={"resume": edited}, context=context, raise_error=False)
    assert client.runs.list(tid)[0]["status"] == "success"
    assert ANSWER in out["answer"] and not out["error"], out
    assert "plan edited in review" in json.dumps(out["trace"])


# --- errors a Studio user reads ---------------------------------------------------------------

def failed_with(record: dict, out: dict) -> str:
    """The error text of a failed run (the run record's status and the streamed error)."""
    assert record["status"] == "error", (record, out)
    return json.dumps(out)


def test_no_model_configured_says_what_to_set(langgraph_server):
    record, out = run(langgraph_server, "rag", {"question": QUESTION})
    text = failed_with(record, out)
    assert "no chat model is configured" in text and "ATOMGRAPH_MODEL" in text, text
    assert "internal error" not in text


def test_an_unreachable_model_is_an_error_in_the_output(langgraph_server):
    """A model server that drops the connection: the run ends with ``error`` set, no answer."""
    for graph_id in ("rag", "atomr"):
        record, out = run(langgraph_server, graph_id, {"question": QUESTION}, {"model": "down"})
        assert record["status"] == "success", (record, out)
        assert out["error"] and "Connection" in out["error"], (graph_id, out.get("error"), out.get("answer"))
        assert out["llm_calls"] and all(c["error"] for c in out["llm_calls"])


@pytest.mark.parametrize("context, says", [
    ({"top_k": 0}, "top_k"),
    ({"top_k": "five"}, "top_k"),
])
def test_bad_context_values_are_named(langgraph_server, context, says):
    record, out = run(langgraph_server, "rag", {"question": QUESTION}, {"model": MODEL, **context})
    text = failed_with(record, out)
    assert says in text and "internal error" not in text, text


def test_a_misspelt_context_key_is_dropped_by_the_server(langgraph_server):
    """LangGraph Server itself drops context keys its form does not list (langgraph_api's
    ``_filter_context_by_schema``, logged at debug level) before the graph sees them, so the
    graph cannot reject ``topk`` there as it does in process (a ConfigError naming the valid
    keys); the run goes on with the default. Documented in docs/guides/studio.md."""
    record, out = run(langgraph_server, "rag", {"question": QUESTION}, {"model": MODEL, "topk": 1})
    assert record["status"] == "success" and not out["error"]
    from atomgraph.graphs.registry import build_method
    from atomgraph.settings import Settings
    from atomgraph.testing import ScriptedChatModel

    graph = build_method("rag", model=ScriptedChatModel(default="So the answer is: x"), sources=[],
                         settings=Settings(cache=False))
    with pytest.raises(ValueError, match="unknown RagContext parameter.*topk.*known: top_k"):
        graph.invoke({"question": QUESTION}, context={"topk": 1})


def test_the_bundled_local_model_runs_under_the_server(langgraph_server):
    """``{"model": "local"}``: the in-process Gemma model, loaded and called off the server's
    event loop (loading it in the node was a BlockingError). One call (closed-book standard
    prompting) keeps it quick; a tiny model answers poorly, so the run must complete with its
    call recorded, whatever it says."""
    pytest.importorskip("llama_cpp")
    record, out = run(langgraph_server, "standard", {"question": QUESTION}, {"model": "local"})
    assert record["status"] == "success", (record, out, server_log(langgraph_server))
    assert out["llm_calls"] and not any(c.get("error") for c in out["llm_calls"]), out["llm_calls"]


def test_a_run_picks_its_sources(langgraph_server, server_files):
    """``sources`` in the form: the run's knowledge sources are built (Chroma opened) off the
    event loop, and the trace names what was used. A chosen source that cannot be used is the
    run's error (asked for means required), named, before any model call."""
    record, out = run(langgraph_server, "rag", {"question": QUESTION}, {"model": MODEL, "sources": ["google"]})
    text = failed_with(record, out)  # no SerpAPI key on the server
    assert "requested knowledge source unavailable" in text and "google: no SerpAPI key" in text, text
    record, out = run(langgraph_server, "wikipedia_index", {"inputs": [str(server_files / "corpus.jsonl")]})
    assert record["status"] == "success" and out["error"] is None, (out, server_log(langgraph_server))
    record, out = run(langgraph_server, "rag", {"question": QUESTION}, {"model": MODEL, "sources": ["wikipedia"]})
    answered(record, out, ANSWER, langgraph_server)
    assert {c["source"] for c in out["retriever_calls"]} == {"wikipedia"}, out["retriever_calls"]
    assert all(not c["error"] for c in out["retriever_calls"]), out["retriever_calls"]


# --- eval run --server: each question a server run, records and resume in the client ---------------

def _server_dataset(tmp: Path, n: int) -> Path:
    data = tmp / "questions.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"{QUESTION} (variant {i})",
                                        "answers": [ANSWER]}) + "\n" for i in range(n)))
    return data


def _records(out: Path) -> list[dict]:
    path = out / "predictions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _runs_per_thread(server: httpx.Client, records: list[dict]) -> dict[str, int]:
    client = sdk(server)
    return {r["id"]: len(client.runs.list(r["server"]["thread_id"], limit=10)) for r in records}


def test_eval_run_on_the_server_resumes_after_kill_9(langgraph_server, tmp_path):
    """`eval run --server`: the client is killed (-9) mid-run and started again; every example is
    recorded once, and run once on the server (an in-flight run is joined or read back, not redone)."""
    data, out = _server_dataset(tmp_path, 6), tmp_path / "run"
    cmd = [sys.executable, "-m", "atomgraph.cli", "eval", "run", "--method", "standard", "--dataset", str(data),
           "--out", str(out), "--server", str(langgraph_server.base_url), "--model", MODEL, "--concurrency", "2",
           "--no-progress"]
    env = server_env(tmp_path)
    first = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while not _records(out) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    first.kill()  # SIGKILL: no cleanup in the client
    first.wait(timeout=30)
    killed_with = len(_records(out))
    assert killed_with >= 1, first.stderr.read()[-2000:]
    again = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    records = _records(out)
    assert sorted(r["id"] for r in records) == [f"q{i}" for i in range(6)]  # each once
    assert all(r["error"] is None and r["predicted"] == ANSWER for r in records), [r["error"] for r in records]
    assert f"{6 - killed_with} run now, {killed_with} already done, 0 with errors" in again.stdout
    assert all(r["server"]["url"] == str(langgraph_server.base_url) and r["server"]["run_id"] for r in records)
    assert set(_runs_per_thread(langgraph_server, records).values()) == {1}, "an example ran twice on the server"
    meta = json.loads((out / "run.json").read_text())
    assert meta["server"] == str(langgraph_server.base_url) and meta["fingerprint"]["models"]["model"] == MODEL
    assert "embedding_runtime" not in meta.get("run", {})  # closed-book: no embedding model anywhere


async def test_server_runs_in_flight_or_finished_are_joined_or_read_back(langgraph_server, tmp_path):
    """A question the server already ran (the client died before recording it) is read back, one
    still running is joined; an errored record retried gets a fresh run; --force-new starts afresh."""
    from langgraph_sdk import get_client

    from atomgraph.evaluation.remote import server_thread_id
    from atomgraph.evaluation.runner import EvalOptions, arun_eval

    data, out = _server_dataset(tmp_path, 3), tmp_path / "run"
    url = str(langgraph_server.base_url)
    kw = dict(server=url, server_context={"model": MODEL}, progress=False, concurrency=2)
    first = await arun_eval("standard", str(data), out, EvalOptions(limit=1, **kw))
    assert first.finished == 1 and first.errors == 0
    run_id = json.loads((out / "run.json").read_text())["server_run_id"]
    client = get_client(url=url)
    tids = {f"q{i}": server_thread_id(run_id, "standard", f"q{i}") for i in range(3)}
    for qid in ("q1", "q2"):  # submitted by a client that then died
        run = await client.runs.create(tids[qid], "standard", input={"question": f"{QUESTION} (variant {qid})"},
                                       context={"model": MODEL}, if_not_exists="create")
        if qid == "q1":
            await client.runs.join(tids[qid], run["run_id"])
    result = await arun_eval("standard", str(data), out, EvalOptions(**kw))
    by_id = {r["id"]: r for r in result.records}
    assert result.skipped == 1 and result.finished == 2 and result.errors == 0
    assert by_id["q1"]["server"]["reused"] and by_id["q1"]["predicted"] == ANSWER
    assert by_id["q2"]["server"]["joined"] or by_id["q2"]["server"]["reused"]
    for qid in ("q1", "q2"):
        assert len(await client.runs.list(tids[qid])) == 1
    # a new run id with --force-new: nothing of the earlier server run is reused
    fresh = await arun_eval("standard", str(data), out, EvalOptions(force_new=True, **kw))
    assert fresh.finished == 3 and not any(r["server"]["reused"] or r["server"]["joined"] for r in fresh.records)
    assert json.loads((out / "run.json").read_text())["server_run_id"] != run_id


async def test_server_mode_refuses_what_it_cannot_send_and_a_dead_server(langgraph_server, tmp_path):
    from atomgraph.errors import ConfigError
    from atomgraph.evaluation.runner import EvalOptions, arun_eval
    from atomgraph.testing import ScriptedChatModel

    data = _server_dataset(tmp_path, 1)
    with pytest.raises(ConfigError, match="server runs the graph with its own models"):
        await arun_eval("standard", str(data), tmp_path / "a", EvalOptions(
            server=str(langgraph_server.base_url), model=ScriptedChatModel(default="x"), progress=False))
    with pytest.raises(ConfigError, match="serves no graph 'nope'"):
        await arun_eval("nope", str(data), tmp_path / "b", EvalOptions(
            server=str(langgraph_server.base_url), progress=False))
    with pytest.raises(ConfigError, match="cannot be reached"):
        await arun_eval("standard", str(data), tmp_path / "c", EvalOptions(
            server=f"http://127.0.0.1:{free_port()}", progress=False))
    assert not (tmp_path / "c" / "predictions.jsonl").exists()


def _plan_requests_for(question: str) -> list[str]:
    """The text of every planner request the model server got for ``question``."""
    out = []
    for line in MODEL_REQUESTS[0].read_text().splitlines():
        text = "\n".join(str(m.get("content")) for m in json.loads(line).get("messages", []))
        if question in text and "Decomposition Tree" in text:
            out.append(text)
    return out


async def test_eval_run_on_the_server_sends_the_datasets_setting(langgraph_server, server_files, tmp_path):
    """`eval run --server` on a HotpotQA file: the server runs the dataset's setting, as a local run
    does: its declared sources (Wikipedia only: no Wikidata call, no query-program call) and,
    for ATOMR, its prompt pack; a file with no declared setting runs on the server's own sources."""
    from atomgraph.evaluation.runner import EvalOptions, arun_eval
    from atomgraph.prompts.atomr.stages import get_pack

    record, out = run(langgraph_server, "wikipedia_index", {"inputs": [str(server_files / "corpus.jsonl")]})
    assert record["status"] == "success" and out["error"] is None, (out, server_log(langgraph_server))
    line = json.dumps({"id": "q0", "question": QUESTION, "answers": [ANSWER]}) + "\n"
    hotpot, mine = tmp_path / "hotpotqa_sample.jsonl", tmp_path / "mine.jsonl"
    hotpot.write_text(line)
    mine.write_text(line)
    kw = dict(server=str(langgraph_server.base_url), server_context={"model": MODEL}, progress=False)

    declared = await arun_eval("rag", str(hotpot), tmp_path / "rag_hotpot", EvalOptions(**kw))
    (rec,) = declared.records
    assert rec["error"] is None and rec["predicted"] == ANSWER, rec["error"]
    assert set(rec["usage"]["retriever_calls_by_source"]) == {"wikipedia"}, rec["usage"]
    meta = json.loads((tmp_path / "rag_hotpot" / "run.json").read_text())
    assert meta["fingerprint"]["params"]["sources"] == ["wikipedia"] and meta["dataset_setting"]["declared"]
    # no declared setting: the server's own sources, the Wikipedia collection included although the
    # server opened its sources before it was indexed (looked at again every RunSources.recheck_s)
    from atomgraph.nodes.runtime import RunSources

    for attempt in range(3):
        general = await arun_eval("rag", str(mine), tmp_path / f"rag_mine{attempt}", EvalOptions(**kw))
        (rec,) = general.records
        if "wikipedia" in rec["usage"]["retriever_calls_by_source"]:
            break
        await asyncio.sleep(RunSources.recheck_s)
    assert set(rec["usage"]["retriever_calls_by_source"]) == {"wikipedia", "wikidata"}, rec["usage"]
    assert "sources" not in json.loads((tmp_path / f"rag_mine{attempt}" / "run.json").read_text())["fingerprint"]["params"]

    atomr = await arun_eval("atomr", str(hotpot), tmp_path / "atomr_hotpot", EvalOptions(**kw))
    (rec,) = atomr.records
    assert rec["error"] is None and set(rec["usage"]["retriever_calls_by_source"]) == {"wikipedia"}, rec
    assert not any(s.get("kg_program") for n in rec["trace"]["nodes"] for s in n.get("subcalls") or [])
    # with a deadline (sent as configurable: the server refuses context and configurable together)
    bounded = await arun_eval("rag", str(hotpot), tmp_path / "rag_deadline", EvalOptions(deadline_s=600, **kw))
    (rec,) = bounded.records
    assert rec["error"] is None and rec["predicted"] == ANSWER, rec["error"]
    assert set(rec["usage"]["retriever_calls_by_source"]) == {"wikipedia"}, rec["usage"]
    past = await arun_eval("rag", str(mine), tmp_path / "rag_past", EvalOptions(deadline_s=0.001, **kw))
    (rec,) = past.records  # the server got the deadline: its one model call was refused
    assert "deadline: the question's time ran out" in rec["error"] and rec["usage"]["llm_errors"] == 1, rec["error"]

    shown = get_pack("hotpotqa").plan_examples[0][0]
    assert shown not in {q for q, _ in get_pack("general").plan_examples}
    assert any(shown in text for text in _plan_requests_for(QUESTION))  # the hotpotqa pack's planner prompt


# --- what a client may name: names, never code; no server path (docs/guides/security.md) -----------

@pytest.fixture(scope="module")
def private_file():
    """A file outside the server's data folders, holding a secret line (TSV-shaped: a header's
    content would be quoted by a careless error)."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="atomgraph-private-"))
    secret = folder / "secret.tsv"
    secret.write_text("PRIVATE-c0ffee\tPRIVATE-beef\nrow\tvalue\n")
    try:
        yield secret
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def one_line_error(record: dict, out: dict) -> str:
    """The one-line refusal of a run: its failure (the run's status) or its output's ``error``."""
    if record["status"] == "success":
        message = out.get("error") or ""
        assert message and not out.get("answer"), out
    else:
        message = out.get("__error__", {}).get("message") or failed_with(record, out)
    assert "\n" not in message.strip(), message
    return message


@pytest.mark.parametrize("source, question", [
    ("subprocess:getoutput", "touch {marker}; echo Munich"),
    ("os:system", "touch {marker}"),
    ("builtins:eval", "__import__('pathlib').Path('{marker}').touch()"),
])
def test_a_client_names_no_code_as_a_source(langgraph_server, tmp_path, source, question):
    """A source name that is an importable object is refused before anything is imported or called:
    the shell command in the question never runs."""
    marker = tmp_path / "ran"
    for graph_id in ("rag", "atomr"):
        record, out = run(langgraph_server, graph_id, {"question": question.format(marker=marker)},
                          {"model": MODEL, "sources": [source]})
        message = one_line_error(record, out)
        assert f"unknown knowledge source '{source}'" in message and "names no code" in message, message
    assert not marker.exists()


def test_a_stateless_run_naming_code_runs_nothing(langgraph_server, tmp_path):
    """The request as an attacker sends it: ``POST /runs/wait`` with the shell command as the question."""
    marker = tmp_path / "ran"
    r = langgraph_server.post("/runs/wait", json={
        "assistant_id": "rag", "input": {"question": f"touch {marker}; echo Munich"},
        "context": {"model": MODEL, "sources": ["subprocess:getoutput"]}})
    assert "unknown knowledge source 'subprocess:getoutput'" in r.text and "names no code" in r.text, r.text[:2000]
    assert "Munich" not in r.text and not marker.exists()


def test_a_client_names_no_file_outside_the_data_folders(langgraph_server, private_file, tmp_path):
    """Indexing inputs, ARM's objects and index cache, a model file: each refused before it is
    opened, and no error quotes the file."""
    record, out = run(langgraph_server, "wikipedia_index", {"inputs": [str(private_file)], "collection": "stolen"},
                      {"format": "tsv"})
    assert record["status"] == "success" and "outside the data folders" in (out["error"] or ""), out
    assert out["stats"] == {} and "PRIVATE" not in json.dumps(out)
    record, out = run(langgraph_server, "kar3_index", {"inputs": [str(private_file)], "collection": "stolen2"},
                      {"model": MODEL, "format": "tsv"})
    assert "outside the data folders" in (out.get("error") or ""), out
    assert "PRIVATE" not in json.dumps(out)
    inside = tmp_path / "link.tsv"  # a symlink under the data folders to the file outside
    inside.symlink_to(private_file)
    cache = private_file.parent / "written"
    for context in ({"objects": str(private_file)}, {"objects": str(inside)},
                    {"objects": str(tmp_path / os.path.relpath(private_file, tmp_path))},  # '..' out of them
                    {"index_cache": str(cache)}):
        record, out = run(langgraph_server, "arm", {"question": ARM_QUESTION}, {"model": MODEL, **context})
        message = one_line_error(record, out)
        assert "outside the data folders" in message and "PRIVATE" not in json.dumps(out), message
    assert not cache.exists()
    for model in (f"local:{private_file}", "local:/etc/passwd"):
        record, out = run(langgraph_server, "standard", {"question": QUESTION}, {"model": model})
        message = one_line_error(record, out)
        assert "a run chooses models by name" in message, message
        assert "PRIVATE" not in json.dumps(out) and "root:" not in json.dumps(out)
