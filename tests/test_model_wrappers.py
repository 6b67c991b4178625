"""Any LangChain chat model or Runnable wrapper of one is accepted as ``model=``: role maps are
told apart from wrappers explicitly, anything else is a clear error, and structured output
works through the wrappers (``with_fallbacks`` crashed with NameError, ``with_retry`` with
AttributeError). Graph runs use a real ``ChatOpenAI`` against the keep-alive test server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from langchain.chat_models import init_chat_model
from langchain_core.runnables import ConfigurableField
from langchain_openai import ChatOpenAI

from atomgraph.errors import ConfigError
from atomgraph.graphs.atomr import build_atomr_graph
from atomgraph.models import resolve_models
from atomgraph.settings import ROLES, Settings
from atomgraph.testing import ScriptedChatModel
from atomgraph.tools.memory_source import InMemorySource
from tests.test_models_settings import QUESTION, SCRIPT

SERVER = Path(__file__).with_name("openai_compat_server.py")
PASSAGES = [{"title": "Kuhle Wampe", "text": "Kuhle Wampe is a 1932 film directed by Slatan Dudow."}]

WRAPPERS = {
    "with_fallbacks": lambda m, backup: m.with_fallbacks([backup]),
    "with_retry": lambda m, backup: m.with_retry(stop_after_attempt=2),
    "bind": lambda m, backup: m.bind(seed=7),
    "configurable_fields": lambda m, backup: m.configurable_fields(
        temperature=ConfigurableField(id="temperature", name="temperature")),
}


@pytest.mark.parametrize("wrap", sorted(WRAPPERS))
def test_a_wrapper_is_one_model_for_every_role(wrap):
    model = WRAPPERS[wrap](ScriptedChatModel(default="x"), ScriptedChatModel(default="y"))
    roles = resolve_models(model, Settings())
    assert set(roles) == set(ROLES) and all(m is model for m in roles.values())


def test_init_chat_model_with_configurable_fields_is_a_model():
    model = init_chat_model(configurable_fields="any")
    assert all(m is model for m in resolve_models(model, Settings()).values())


def test_a_role_map_may_hold_wrappers_and_model_strings():
    a = ScriptedChatModel(default="a").with_retry()
    roles = resolve_models({"planner": a, "answerer": "gpt-4o-mini"},
                           Settings(openai_base_url="http://127.0.0.1:9/v1"))
    assert roles["planner"] is a and isinstance(roles["answerer"], ChatOpenAI)
    assert roles["executor"] is roles["answerer"]


@pytest.mark.parametrize("bad, says", [
    (42, "got int"),
    ([ScriptedChatModel()], "got list"),
    ({"planner": 42}, "model for role 'planner'"),
    ({"critic": ScriptedChatModel()}, "unknown model role"),
])
def test_anything_else_is_a_clear_error(bad, says):
    with pytest.raises(ConfigError, match=says) as info:
        resolve_models(bad, Settings())
    assert isinstance(info.value, ValueError)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wrappers")
    script = tmp / "script.json"
    script.write_text(json.dumps(SCRIPT))
    proc = subprocess.Popen([sys.executable, str(SERVER), str(script)], stdout=subprocess.PIPE, text=True)
    try:
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def openai(base_url: str) -> ChatOpenAI:
    return ChatOpenAI(model="local", base_url=base_url, api_key="not-needed", temperature=0, max_retries=0)


@pytest.mark.parametrize("structured", [False, True])
@pytest.mark.parametrize("wrap", sorted(WRAPPERS))
def test_atomr_runs_with_a_wrapped_model(server, wrap, structured):
    """Each wrapper drives a whole ATOMR run, in text and in structured-output mode. The
    fallbacks case's first model points at a closed port: every answer comes from the backup."""
    first = openai("http://127.0.0.1:9/v1") if wrap == "with_fallbacks" else openai(server)
    model = WRAPPERS[wrap](first, openai(server))
    graph = build_atomr_graph(model=model, sources=[InMemorySource(PASSAGES, name="wikipedia")],
                              settings=Settings(cache=False, structured_output=structured))
    out = graph.invoke({"question": QUESTION})
    assert out["answer"] == "Slatan Dudow", (out.get("error"), [c.error or c.parse_error for c in out["llm_calls"]])
    assert not out.get("error")
