"""`langgraph dev` (the in-memory LangGraph server) serves every graph of langgraph.json.

The server runs from the repository root, as a user would start it, on 127.0.0.1 and a
free port, fully offline: no browser, no reload watcher, no LangSmith tracing, no CLI
analytics, no version check against PyPI. It is stopped (its whole process group) when
the fixture ends.
"""

from __future__ import annotations

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
STARTUP_TIMEOUT_S = 45

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


def server_env(tmp: Path) -> dict[str, str]:
    """The caller's environment without model keys, tracing or atomgraph settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LANGSMITH_", "LANGCHAIN_", "LANGGRAPH_", "OPENAI_", "SERPAPI_", "ATOMGRAPH_"))}
    env.update(OFFLINE_ENV)
    env["ATOMGRAPH_CACHE_PATH"] = str(tmp / "llm_cache.sqlite")
    env["ATOMGRAPH_CHROMA_PATH"] = str(tmp / "chroma")
    return env


@pytest.fixture(scope="module")
def langgraph_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("langgraph_dev")
    log_path = tmp / "server.log"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1",
             "--port", str(port), "--config", "langgraph.json", "--server-log-level", "WARNING"],
            cwd=REPO, env=server_env(tmp), stdout=log, stderr=subprocess.STDOUT,
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
        with httpx.Client(base_url=base, timeout=20) as client:
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
