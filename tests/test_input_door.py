"""Input validation at the door: unknown role keys, a missing question, an unknown
prompt pack, an unknown run parameter -> one-line errors naming what is accepted, in Python
(sync, async, batch), the CLI and the graphs Studio serves (langgraph.json's modules)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from atomgraph.errors import AtomgraphError, ConfigError
from atomgraph.graphs.registry import build_method
from atomgraph.settings import Settings
from atomgraph.testing import ScriptedChatModel
from atomgraph.tools.memory_source import InMemorySource

MODEL = ScriptedChatModel(default="So the answer is: Ulm")
SRC = [InMemorySource([{"title": "Ulm", "text": "Einstein was born in Ulm."}], name="wikipedia", description="x")]


def _graph(method="rag", **settings):
    return build_method(method, model=MODEL, settings=Settings(cache=False, **settings), sources=SRC)


@pytest.mark.parametrize("inp,context,message", [
    ({}, None, "the input has no 'question' (got no keys); accepted: question"),
    ({"query": "Who?"}, None, "no 'question' (got ['query'])"),
    ({"question": 3}, None, "must be a string"),
    ({"question": "Who?", "bogus": 1}, None, "unknown input key(s) ['bogus']; accepted: question"),
    ({"question": "Who?"}, {"models": {"bogus": "gpt-4o"}}, "unknown model role(s) ['bogus']"),
    ({"question": "Who?"}, {"bogus": 1}, "unknown RagContext parameter(s): bogus; known:"),
    ({"question": "Who?"}, {"top_k": 0}, "'top_k' is invalid"),
])
async def test_bad_input_is_one_line_naming_what_is_accepted(inp, context, message):
    graph = _graph()
    for call in ("invoke", "ainvoke", "stream"):
        with pytest.raises(AtomgraphError) as exc:
            if call == "invoke":
                graph.invoke(inp, context=context)
            elif call == "ainvoke":
                await graph.ainvoke(inp, context=context)
            else:
                list(graph.stream(inp, context=context))
        assert message in str(exc.value) and "\n" not in str(exc.value), (call, str(exc.value))


def test_an_unknown_role_key_in_python_and_a_good_input_still_runs():
    with pytest.raises(ConfigError, match=r"unknown model role\(s\) \['bogus'\]; roles are planner"):
        build_method("rag", model={"bogus": MODEL}, settings=Settings(cache=False), sources=SRC)
    assert _graph().invoke({"question": "Where was Einstein born?"}, context={"top_k": 2})["answer"] == "Ulm"
    out = _graph().batch([{"question": "Where was Einstein born?"}, {}], return_exceptions=True)
    assert out[0]["answer"] == "Ulm" and isinstance(out[1], AtomgraphError)


def test_an_unknown_prompt_pack_is_refused_in_context_and_settings():
    graph = _graph("atomr")
    with pytest.raises(ConfigError, match=r"unknown prompt pack 'nope'; packs are general, hotpotqa"):
        graph.invoke({"question": "Where was Einstein born?"}, context={"prompt_pack": "nope"})
    with pytest.raises(ValueError, match=r"unknown prompt pack 'nope'; packs are general"):
        Settings(cache=False, atomr={"prompt_pack": "nope"})


def test_the_graphs_studio_serves_check_their_input():
    """Studio runs the modules langgraph.json names: compiled graphs whose edge from START passes
    the door (a missing or non-text question, a bad parameter, an unknown model role)."""
    import json
    from pathlib import Path

    from langgraph.graph.state import CompiledStateGraph

    from atomgraph.graphs import baselines

    spec = json.loads((Path(__file__).resolve().parents[1] / "langgraph.json").read_text())
    assert isinstance(baselines.rag, CompiledStateGraph) and "rag" in spec["graphs"]
    assert baselines.rag.get_input_jsonschema()["required"] == ["question"]
    served = _graph().graph  # the same door as baselines.rag, over the scripted model
    assert served.invoke({"question": "Where was Einstein born?"})["answer"] == "Ulm"
    for inp, context, message in [({}, None, "the input has no 'question'"), ({"question": 3}, None, "must be a string"),
                                  ({"question": "Who?"}, {"top_k": 0}, "'top_k' is invalid"),
                                  ({"question": "Who?"}, {"models": {"bogus": "x"}}, "unknown model role(s) ['bogus']")]:
        with pytest.raises(AtomgraphError) as exc:
            served.invoke(inp, context=context)
        assert message in str(exc.value) and "\n" not in str(exc.value), str(exc.value)


def test_cli_unknown_prompt_pack_and_empty_question_are_one_line(tmp_path):
    env = {**os.environ, "ATOMGRAPH_CACHE": "false", "ATOMGRAPH_ATOMR__PROMPT_PACK": "nope"}
    p = subprocess.run([sys.executable, "-m", "atomgraph.cli", "ask", "Who?", "--method", "atomr", "--model",
                        "scripted:" + str(_rules(tmp_path))], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2 and "unknown prompt pack 'nope'" in p.stderr and "Traceback" not in p.stderr, p.stderr[-1500:]
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def _rules(tmp_path):
    f = tmp_path / "rules.json"
    f.write_text('{"default": "So the answer is: Ulm"}')
    return f
