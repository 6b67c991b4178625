"""Methods are declared once (atomgraph/methods.py); the rest is derived and held to the table."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Annotated

from langchain_core.prompts import ChatPromptTemplate
from langgraph.graph import END, START
from pydantic import Field

from atomgraph.graphs.registry import build_method, method_descriptions, method_names, register_method
from atomgraph.methods import METHODS, Method
from atomgraph.nodes.runtime import MethodRuntime, dual
from atomgraph.prompts.stage import Stage, text_parser
from atomgraph.settings import Settings
from atomgraph.state.baselines import BaselineState
from atomgraph.testing import ScriptedChatModel

REPO = Path(__file__).resolve().parents[1]


def test_langgraph_json_lists_exactly_the_declared_graphs():
    graphs = json.loads((REPO / "langgraph.json").read_text())["graphs"]
    assert graphs == {m.name: m.graph for m in METHODS}


def test_settings_sections_eval_methods_and_cli_come_from_the_declarations():
    sections = {m.settings_section for m in METHODS}
    assert sections <= set(Settings.model_fields)
    for m in METHODS:
        assert isinstance(getattr(Settings(), m.settings_section), m.context)
    builtin = subprocess.run([sys.executable, "-c", "from atomgraph.graphs.registry import method_names; "
                              "print(' '.join(method_names()))"], capture_output=True, text=True, check=True).stdout
    assert builtin.split() == sorted(m.name for m in METHODS if m.kind == "qa")
    help_text = subprocess.run([sys.executable, "-m", "atomgraph.cli", "eval", "run", "--help"],
                               capture_output=True, text=True).stdout
    assert all(m.name in help_text for m in METHODS if m.kind == "qa")


@dataclasses.dataclass(kw_only=True)
class ShoutContext:
    """Run parameters of a toy method."""

    exclaim: Annotated[int, Field(ge=0, le=5, description="How many exclamation marks to add.")] = 1


SHOUT = Stage(name="shout", role="answerer", parser=text_parser(lambda t: t.strip().upper(), "upper"),
              prompt=ChatPromptTemplate.from_messages([("human", "Repeat: {question}")]), max_tokens=32)


def build_shout_graph(model=None, sources=None, settings=None, checkpointer=None):
    rt = MethodRuntime.for_method(SHOUT_METHOD, model, [], settings)

    async def answer(state, config):
        result = await rt.ask(SHOUT, {"question": state["question"]}, config)
        text = (result.value or "") + "!" * rt.params(config).exclaim
        return {"answer": text, "answers": [text], "llm_calls": [result.call], "error": result.problem}

    g = rt.state_graph(BaselineState)
    g.add_node("answer", dual(answer))
    g.add_edge(START, "answer")
    g.add_edge("answer", END)
    return g.compile(checkpointer=checkpointer, name="shout")


SHOUT_METHOD = Method("shout", build_shout_graph, ShoutContext, "Toy: repeat the question in capitals")


def test_a_toy_method_from_its_declaration_alone():
    register_method(SHOUT_METHOD)
    assert "shout" in method_names() and method_descriptions()["shout"].startswith("Toy")
    graph = build_method("shout", model=ScriptedChatModel(stages={"shout": "hello there"}))
    assert "exclaim" in graph.get_context_jsonschema()["properties"]
    out = graph.invoke({"question": "hello there"}, context={"exclaim": 3})
    assert out["answer"] == "HELLO THERE!!!" and out["llm_calls"][0]["stage"] == "shout"
