"""Settings, the chat-model factory, the response cache, and an OpenAI-compatible server.

The server is a real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions
protocol (as vLLM, Ollama and llama.cpp do) and answers from an ATOMR script, so the whole
graph runs through langchain-openai's client, configured by settings alone.
"""

from __future__ import annotations

import json

import pytest
from atomgraph.cache import ReplyCache
from langchain_openai import ChatOpenAI

from atomgraph.errors import ConfigError
from atomgraph.graphs.atomr import build_atomr_graph
from atomgraph.models import chat_model, resolve_models
from atomgraph.settings import Settings, get_settings
from atomgraph.testing import ScriptedChatModel, answer_reply
from atomgraph.tools.memory_source import InMemorySource


def test_defaults_env_and_toml_in_priority_order(tmp_path, monkeypatch):
    assert get_settings().temperature == 0.0 and get_settings().cache is True
    cfg = tmp_path / "atomgraph.toml"
    cfg.write_text('model = "from-toml"\nsources = ["wikipedia"]\n[atomr]\ntop_k = 5\n')
    assert get_settings().model == "from-toml"  # ./atomgraph.toml is read (tests run in tmp_path)
    monkeypatch.setenv("ATOMGRAPH_MODEL", "from-env")
    monkeypatch.setenv("ATOMGRAPH_SOURCES", "wikidata, google")
    monkeypatch.setenv("ATOMGRAPH_CACHE", "off")
    s = get_settings()
    monkeypatch.setenv("ATOMGRAPH_ATOMR__MAX_PARALLEL", "2")
    s = get_settings()
    assert (s.model, s.atomr.top_k, s.atomr.max_parallel, s.sources, s.cache) == (
        "from-env", 5, 2, ["wikidata", "google"], False)
    assert get_settings(model="override").model == "override"


def test_roles_default_to_the_one_model(monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_MODEL", "m-all")
    monkeypatch.setenv("ATOMGRAPH_PLANNER_MODEL", "m-plan")
    s = get_settings()
    assert [s.model_for(r) for r in ("planner", "executor", "answerer")] == ["m-plan", "m-all", "m-all"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("[atomr]\ntop_k = 0", "atomr.top_k"),
        ("nonsense = 1", "unknown setting"),
        ("model = ", "not valid TOML"),
    ],
)
def test_bad_config_is_a_clear_error(tmp_path, content, message):
    cfg = tmp_path / "atomgraph.toml"
    cfg.write_text(content)
    with pytest.raises(ConfigError, match=message):
        get_settings()


def test_missing_config_file_is_named(monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_CONFIG", "/nonexistent/atomgraph.toml")
    with pytest.raises(ConfigError, match="/nonexistent/atomgraph.toml"):
        get_settings()


def test_no_model_names_every_way_to_configure_one():
    with pytest.raises(ConfigError) as err:
        chat_model("planner", Settings())
    for needle in ("ATOMGRAPH_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "init_chat_model"):
        assert needle in str(err.value)


def test_openai_model_without_key_or_base_url_is_a_clear_error():
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        chat_model("answerer", Settings(model="gpt-4o"))


def test_openai_compatible_server_and_provider_strings(tmp_path):
    m = chat_model("executor", Settings(model="llama3.1:8b", openai_base_url="http://127.0.0.1:9/v1", cache=False))
    assert isinstance(m, ChatOpenAI)
    assert m.model_name == "llama3.1:8b"  # an Ollama tag is a model name, not a provider
    assert str(m.openai_api_base).startswith("http://127.0.0.1:9/v1")
    assert m.temperature == 0.0
    m = chat_model("executor", Settings(model="openai:gpt-4o-mini", openai_api_key="sk-test", cache=False))
    assert isinstance(m, ChatOpenAI) and m.model_name == "gpt-4o-mini"
    with pytest.raises(ConfigError, match="provider package|cannot build"):
        chat_model("executor", Settings(model="anthropic:claude-x", cache=False))


def test_resolve_models_accepts_one_model_or_a_role_map():
    a, b = ScriptedChatModel(default="a"), ScriptedChatModel(default="b")
    assert all(m is a for m in resolve_models(a).values())
    roles = resolve_models({"planner": a, "answerer": b}, Settings())
    assert roles["planner"] is a and roles["answerer"] is b and roles["executor"] is b
    with pytest.raises(ConfigError, match="unknown model role"):
        resolve_models({"critic": a})


def test_response_cache_answers_repeated_prompts(tmp_path):
    model = ScriptedChatModel(default="cached answer")
    model.cache = ReplyCache(tmp_path / "c.sqlite")
    assert model.invoke("same prompt").content == "cached answer"
    assert model.invoke("same prompt").content == "cached answer"
    assert len(model.prompts) == 1


# --- an OpenAI-compatible server process on loopback that honours only max_tokens ---------

QUESTION = "Who directed Kuhle Wampe?"
PLAN = {QUESTION: ["1. What is Kuhle Wampe?", "2. Who directed [1]?"],
        "1. What is Kuhle Wampe?": 'Search("Kuhle Wampe")', "2. Who directed [1]?": 'Relate([1], "director")'}
def _structured_answer(answer: str) -> dict:
    return {"reasoning": "From the passage.", "paraphrase": f"The answer is {answer}", "answers": [answer]}


SCRIPT = {
    "plan.json": {"nodes": [{"question": QUESTION, "children": list(PLAN[QUESTION])},
                            {"question": "1. What is Kuhle Wampe?", "operator": PLAN["1. What is Kuhle Wampe?"]},
                            {"question": "2. Who directed [1]?", "operator": PLAN["2. Who directed [1]?"]}]},
    "search.json": _structured_answer("Kuhle Wampe"),
    "relate.json": _structured_answer("Slatan Dudow"),
    "child_reasoning.json": _structured_answer("Slatan Dudow"),
    "plan": json.dumps(PLAN),
    "search": answer_reply("Kuhle Wampe"),
    "relate": answer_reply("Slatan Dudow"),
    "child_reasoning": answer_reply("Slatan Dudow"),
    "direct_rag": answer_reply("Slatan Dudow"),
}


@pytest.fixture
def openai_compatible_server(tmp_path):
    """tests/openai_compat_server.py in its own process: (base URL, function reading its requests)."""
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    server = Path(__file__).with_name("openai_compat_server.py")
    proc = subprocess.Popen([sys.executable, str(server), str(script)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        log = tmp_path / "script.json.requests.jsonl"

        def requests() -> list[dict]:
            return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []

        yield f"http://127.0.0.1:{port}/v1", requests
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_atomr_runs_unchanged_against_an_openai_compatible_server(openai_compatible_server, monkeypatch):
    base_url, requests = openai_compatible_server
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("ATOMGRAPH_MODEL", "local-llama")
    passages = [{"title": "Kuhle Wampe", "text": "Kuhle Wampe is a 1932 film directed by Slatan Dudow."}]
    graph = build_atomr_graph(sources=[InMemorySource(passages, name="wikipedia")])
    out = await graph.ainvoke({"question": QUESTION})
    assert out["answer"] == "Slatan Dudow"
    sent = requests()
    # plan, Search, Relate, child reasoning (one source: no selection call); the server rambles to
    # the cap (finish_reason "length"), so each step is asked once more at its retry cap, as the authors do
    assert len(sent) == 8
    assert {r["model"] for r in sent} == {"local-llama"} and all(r["temperature"] == 0 for r in sent)
    # Every call is capped, and the cap reaches a server that reads only max_tokens.
    caps = [(c["stage"], c["max_tokens"], c["retry"]) for c in out["llm_calls"]]
    assert caps == [("plan", 512, False), ("plan", 768, True), ("search", 256, False), ("search", 512, True),
                    ("relate", 256, False), ("relate", 512, True),
                    ("child_reasoning", 256, False), ("child_reasoning", 512, True)]
    assert [r["max_tokens"] for r in sent] == [r["max_completion_tokens"] for r in sent] == [c[1] for c in caps]
    # each call capped: the server rambled to the cap, never to its 7,000-token runaway; the retry
    # came back cut too and was read as any cut reply (its answer lies whole inside it)
    assert [c["completion_tokens"] for c in out["llm_calls"]] == [c[1] for c in caps]
    assert all(c["cut"] and c["finish_reason"] == "length" for c in out["llm_calls"])
    assert all(c["prompt_tokens"] == 100 and c["error"] is None for c in out["llm_calls"])
    # the response cache (on by default) answers the same question again without the server
    graph2 = build_atomr_graph(sources=[InMemorySource(passages, name="wikipedia")])
    again = await graph2.ainvoke({"question": QUESTION})
    assert again["answer"] == "Slatan Dudow" and len(requests()) == 8


async def test_stage_caps_are_settable_and_the_server_ignores_max_completion_tokens(openai_compatible_server,
                                                                                    monkeypatch):
    base_url, requests = openai_compatible_server
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("ATOMGRAPH_MODEL", "local-llama")
    monkeypatch.setenv("ATOMGRAPH_CACHE", "off")
    monkeypatch.setenv("ATOMGRAPH_STAGE_MAX_TOKENS", '{"plan": 300}')
    monkeypatch.setenv("ATOMGRAPH_MAX_TOKENS", "64")
    # The control: ChatOpenAI's own cap (max_completion_tokens) alone does not stop this server.
    raw = ChatOpenAI(model="local-llama", base_url=base_url, api_key="x", max_tokens=50)
    reply = await raw.ainvoke("hello")
    assert reply.usage_metadata["output_tokens"] == 7000
    passages = [{"title": "Kuhle Wampe", "text": "Kuhle Wampe is a 1932 film directed by Slatan Dudow."}]
    s = get_settings(stage_max_tokens={"plan": 300, "search": 40, "relate": 40, "child_reasoning": 40})
    out = await build_atomr_graph(sources=[InMemorySource(passages, name="wikipedia")], settings=s).ainvoke(
        {"question": QUESTION})
    assert out["answer"] == "Slatan Dudow"
    # each cut reply asked again once, at the stage's retry ratio (plan 512 → 768, answers 256 → 512)
    assert [r.get("max_tokens") for r in requests()[1:]] == [300, 450, 40, 80, 40, 80, 40, 80]
    assert max(c["completion_tokens"] for c in out["llm_calls"]) == 450


async def test_structured_output_mode_sends_json_schemas_and_reads_them(openai_compatible_server, monkeypatch):
    """With structured_output on, each stage asks for its JSON schema (response_format) and the
    reply is read into the same values the text parsers give."""
    base_url, requests = openai_compatible_server
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("ATOMGRAPH_MODEL", "local-llama")
    monkeypatch.setenv("ATOMGRAPH_CACHE", "off")
    monkeypatch.setenv("ATOMGRAPH_STRUCTURED_OUTPUT", "true")
    passages = [{"title": "Kuhle Wampe", "text": "Kuhle Wampe is a 1932 film directed by Slatan Dudow."}]
    out = await build_atomr_graph(sources=[InMemorySource(passages, name="wikipedia")]).ainvoke({"question": QUESTION})
    assert out["answer"] == "Slatan Dudow"
    sent = requests()
    assert [r["response_format"]["json_schema"]["name"] for r in sent] == [
        "PlanSchema", "AnswerSchema", "AnswerSchema", "AnswerSchema"]
    assert all(r["max_tokens"] for r in sent)
    assert [n["operator"] for n in out["trace"]["nodes"] if n["operator"]] == [
        'Search("Kuhle Wampe")', 'Relate("Kuhle Wampe", "director")']
