"""Methods are declared once (atomgraph/methods.py); the rest is derived and held to the table."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import pytest
from langchain_core.prompts import ChatPromptTemplate
from langgraph.graph import END, START
from pydantic import Field

from atomgraph.graphs.registry import build_method, method_descriptions, method_names, register_method
from atomgraph.methods import METHODS, Method
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.nodes.sync import dual
from atomgraph.prompts.stage import Stage, text_parser
from atomgraph.settings import Settings
from atomgraph.state.baselines import BaselineState
from atomgraph.errors import ConfigError
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


def guide_example() -> str:
    """The Python block of docs/guides/adding-a-method.md (the first), as a reader copies it."""
    import re

    page = (REPO / "docs" / "guides" / "adding-a-method.md").read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", page, re.S).group(1)


def test_the_guides_method_runs_as_written(registry_restored):
    """The guide's toy method — its own files, a role of its own, one declaration — runs exactly as the page
    writes it, and returns the whole output contract."""
    from atomgraph.state.run import OUTPUT_KEYS

    namespace = {"my_model": ScriptedChatModel(stages={"shout": "hello"})}
    exec(compile(guide_example(), "adding-a-method.md", "exec", dont_inherit=True), namespace)  # as a script
    out = namespace["out"]
    assert out["answer"] == "HELLO!!!" and set(out) == set(OUTPUT_KEYS) and not out["error"]
    assert [(c["stage"], c["role"]) for c in out["llm_calls"]] == [("shout", "shouter")]
    assert "shout" in method_names() and method_descriptions()["shout"].startswith("Toy")
    graph = build_method("shout", model={"shouter": ScriptedChatModel(stages={"shout": "hi"})})
    assert "exclaim" in graph.get_context_jsonschema()["properties"]
    assert graph.invoke({"question": "hi"}, context={"exclaim": 0})["answer"] == "HI"
    # A failed model call is the run's error, not an answer of exclamation marks.
    down = ScriptedChatModel(stages={"shout": ConnectionError("server down")})
    failed = build_method("shout", model=down).invoke({"question": "hi"})
    assert failed["answer"] == "" and failed["error"] and set(failed) == set(OUTPUT_KEYS)
    with pytest.raises(ValueError, match="empty"):
        graph.invoke({"question": "  "})


# --- a method with roles of its own, from its declaration alone ----------------------------------
DRAFT = Stage(name="draft", role="drafter", parser=text_parser(str.strip, "text"),
              prompt=ChatPromptTemplate.from_messages([("human", "Draft an answer: {question}")]), max_tokens=32)
CRITIQUE = Stage(name="critique", role="critic", parser=text_parser(str.strip, "text"),
                 prompt=ChatPromptTemplate.from_messages([("human", "Improve: {draft}")]), max_tokens=32)


@dataclasses.dataclass(kw_only=True)
class CritiqueContext:
    """Run parameters of a toy two-role method (none)."""


def build_critique_graph(model=None, sources=None, settings=None, checkpointer=None):
    rt = MethodRuntime.for_method("critique", model, [], settings)

    async def answer(state, config):
        draft = await rt.ask(DRAFT, {"question": state["question"]}, config)
        final = await rt.ask(CRITIQUE, {"draft": draft.value or ""}, config)
        return {"answer": final.value or "", "answers": [final.value or ""], "llm_calls": [draft.call, final.call],
                "error": final.problem}

    g = rt.state_graph(BaselineState)
    g.add_node("answer", dual(answer))
    g.add_edge(START, "answer")
    g.add_edge("answer", END)
    return g.compile(checkpointer=checkpointer, name="critique")


@pytest.fixture
def registry_restored():
    """Run-time registrations made by a test do not outlive it (their roles would be accepted elsewhere)."""
    from atomgraph import methods

    saved = dict(methods._REGISTERED)
    yield
    methods._REGISTERED.clear()
    methods._REGISTERED.update(saved)


def test_a_method_with_new_roles_from_its_declaration_alone(registry_restored):
    register_method(Method("critique", build_critique_graph, CritiqueContext, "Toy: draft, then critique",
                           roles=("drafter", "critic")))
    drafter = ScriptedChatModel(stages={"draft": "a draft"})
    critic = ScriptedChatModel(stages={"critique": "the final answer"})
    # A model per new role, by name.
    out = build_method("critique", model={"drafter": drafter, "critic": critic}).invoke({"question": "q?"})
    assert out["answer"] == "the final answer"
    assert [(c["stage"], c["role"]) for c in out["llm_calls"]] == [("draft", "drafter"), ("critique", "critic")]
    # One model for both roles.
    both = ScriptedChatModel(stages={"draft": "d", "critique": "one model"})
    assert build_method("critique", model=both).invoke({"question": "q?"})["answer"] == "one model"
    # A role the method does not declare is named in the error (no silent default).
    with pytest.raises(ConfigError, match="unknown model role"):
        build_method("critique", model={"judge": both})
    # Settings: a run-time role takes the default model.
    assert Settings(model="m").model_for("critic") == "m"


def test_a_run_time_roles_model_comes_from_its_environment_variable(registry_restored, monkeypatch):
    """A role with no settings field (its method registered at run time) reads ATOMGRAPH_<ROLE>_MODEL; unset and with
    no default model, the missing-model help names that variable."""
    from atomgraph.models import chat_model, resolve_models

    register_method(Method("critique", build_critique_graph, CritiqueContext, "Toy", roles=("drafter", "critic")))
    monkeypatch.delenv("ATOMGRAPH_MODEL", raising=False)
    monkeypatch.setenv("ATOMGRAPH_CRITIC_MODEL", "served-critic")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the critic's client is built below, never called
    settings = Settings(model="m", cache=False)
    assert settings.role_model("critic") == "served-critic" and settings.model_for("critic") == "served-critic"
    assert settings.role_model("drafter") is None and settings.model_for("drafter") == "m"
    # A model given for one role stands in for the others, but not for a role set in the environment.
    drafter = ScriptedChatModel(stages={})
    models = resolve_models({"drafter": drafter}, settings, roles=("drafter", "critic"))
    assert models["drafter"] is drafter and getattr(models["critic"], "model_name", None) == "served-critic"
    monkeypatch.delenv("ATOMGRAPH_CRITIC_MODEL")
    with pytest.raises(ConfigError, match="ATOMGRAPH_CRITIC_MODEL"):
        chat_model("critic", Settings(cache=False))


def test_a_stage_of_an_undeclared_role_is_refused(registry_restored):
    register_method(Method("critique_misdeclared", build_critique_graph, CritiqueContext, "Toy", roles=("drafter",)))
    rt = MethodRuntime.for_method("critique_misdeclared", ScriptedChatModel(stages={}), [], Settings(cache=False))
    with pytest.raises(ConfigError, match="not declared by this method"):
        rt.model("critic")


def test_role_fields_and_missing_model_help_come_from_the_declarations():
    from atomgraph.models import MISSING_MODEL_HELP
    from atomgraph.settings import ROLES

    declared_roles = {r for m in METHODS for r in m.roles}
    assert set(ROLES) == declared_roles
    assert {f"{r}_model" for r in declared_roles} <= set(Settings.model_fields)
    assert all(r.upper() in MISSING_MODEL_HELP for r in declared_roles)


def test_every_stage_role_is_declared_by_its_method():
    """Each prompt module's stages use only the roles its method declares. A module belongs to the methods its path
    names (``prompts/arm.py``: arm; ``prompts/kar3/atomize.py``: kar3 and kar3_index; ``prompts/compare/ircot.py``:
    ircot), so a new method's ``prompts/<name>`` is checked with no list to extend."""
    import importlib
    import pkgutil

    import atomgraph.prompts
    from atomgraph.prompts.stage import Stage as StageType

    checked = []
    for info in pkgutil.walk_packages(atomgraph.prompts.__path__, "atomgraph.prompts."):
        module = importlib.import_module(info.name)
        stages = [v for v in vars(module).values() if isinstance(v, StageType)]
        if not stages:
            continue
        parts = info.name.split(".")[2:]
        owners = [m for m in METHODS if any(m.name == p or m.name.startswith(f"{p}_") for p in parts)]
        assert owners, f"{info.name} holds stages but its path names no declared method"
        roles = {r for m in owners for r in m.roles}
        assert {s.role for s in stages} <= roles, (info.name, {s.role for s in stages} - roles)
        checked.append(info.name)
    assert {"atomgraph.prompts.arm", "atomgraph.prompts.atomr.stages", "atomgraph.prompts.kar3.stages",
            "atomgraph.prompts.compare.react"} <= set(checked), checked


def test_pyproject_lists_every_package_folder():
    """The package list in pyproject.toml is every folder with an __init__.py under the mapped roots."""
    import tomllib

    tool = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs = tool["package-dir"]
    found = set()
    for package, root in dirs.items():
        for init in (REPO / root).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / root)
            if any(part.startswith((".", "_")) for part in rel.parts):
                continue
            found.add(".".join([package, *rel.parts]))
    assert set(tool["packages"]) == found
