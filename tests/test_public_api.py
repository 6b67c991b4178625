"""The public API as a LangChain application uses it, and the package as pip installs it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from langchain_core.runnables import Runnable, RunnableLambda

from atomgraph.errors import ConfigError
from atomgraph.settings import Settings
from atomgraph.state.run import Evidence
from atomgraph.testing import answer_reply, atomr_scripted_model

REPO = Path(__file__).resolve().parents[1]

QUESTION = "Where was the director of Kuhle Wampe born?"
TREE = {
    QUESTION: ["1. Who directed Kuhle Wampe?", "2. Where was [1] born?"],
    "1. Who directed Kuhle Wampe?": 'Relate("Kuhle Wampe", "director")',
    "2. Where was [1] born?": 'Relate([1], "place of birth")',
}
OTHER_QUESTION = "Who directed Kuhle Wampe?"
OTHER_TREE = {OTHER_QUESTION: 'Relate("Kuhle Wampe", "director")'}


def scripted_answers(stage: str, text: str) -> str:
    question = text.rsplit("Question:", 1)[-1]
    if "Who directed" in question:
        return answer_reply("Slatan Dudow")
    return answer_reply("Tsaribrod", paraphrase="He was born in Tsaribrod")


def model():
    return atomr_scripted_model({QUESTION: TREE, OTHER_QUESTION: OTHER_TREE}, answer=scripted_answers)


@pytest.fixture
def registry(monkeypatch):
    """register_source calls in a test stay in that test."""
    from atomgraph.tools import registry as reg

    monkeypatch.setattr(reg, "_FACTORIES", dict(reg._FACTORIES))
    return reg


def test_public_names_import():
    from atomgraph import KnowledgeSource, build_atomr_graph, build_method, graph, register_source  # noqa: F401
    from atomgraph.testing import ScriptedChatModel  # test doubles: imported by name, not by the package
    from langgraph.graph.state import CompiledStateGraph

    assert isinstance(graph, CompiledStateGraph)
    assert {"plan", "schedule", "run_operator", "finalize"} <= set(graph.nodes)
    assert build_method("atomr", model=ScriptedChatModel(default="x")).nodes.keys() == graph.nodes.keys()
    import atomgraph

    assert not hasattr(atomgraph, "ScriptedChatModel")


class FilmNotes:
    """A user's own data: film facts in a dict."""

    FACTS = {
        "Kuhle Wampe": "Kuhle Wampe is a 1932 German film directed by Slatan Dudow.",
        "Slatan Dudow": "Slatan Dudow was a Bulgarian film director born in Tsaribrod in 1903.",
        "Metropolis": "Metropolis is a 1927 German film directed by Fritz Lang.",
    }


def make_notes_source():
    from atomgraph import KnowledgeSource

    class NotesSource(KnowledgeSource):
        name = "notes"
        description = "The team's film notes."
        kind = "text"

        def __init__(self):
            self.queries: list[str] = []

        def search(self, query: str, k: int = 3) -> list[Evidence]:
            self.queries.append(query)
            words = set(query.lower().split())
            hits = [(t, x) for t, x in FilmNotes.FACTS.items() if words & set(t.lower().split())]
            return [Evidence(title=t, text=x, source=self.name) for t, x in hits[:k]]

    return NotesSource()


def test_user_source_registered_by_name_answers_a_question(registry):
    from atomgraph import build_atomr_graph, register_source

    source = make_notes_source()
    register_source("notes", lambda settings: source)
    graph = build_atomr_graph(model=model(), settings=Settings(sources=["notes"], cache=False))
    out = graph.invoke({"question": QUESTION})
    assert out["answer"] == "Tsaribrod"
    # the second operator got the first one's answer, and both queried the user's source
    assert source.queries == ["Kuhle Wampe director", "Slatan Dudow place of birth"]
    nodes = {n["id"]: n for n in out["trace"]["nodes"]}
    assert nodes[2]["sources"] == ["notes"]
    assert nodes[2]["evidence"][0]["title"] == "Slatan Dudow"
    assert {c["source"] for c in out["retriever_calls"]} == {"notes"}


def test_sources_are_not_built_when_the_graph_compiles(registry):
    from atomgraph import build_atomr_graph, register_source

    built = []
    register_source("notes", lambda settings: built.append(1) or make_notes_source())
    graph = build_atomr_graph(model=model(), settings=Settings(sources=["notes"], cache=False))
    assert built == []
    graph.invoke({"question": OTHER_QUESTION})
    assert built == [1]


def test_compiled_graph_is_a_runnable_inside_an_lcel_chain():
    from atomgraph import build_atomr_graph

    graph = build_atomr_graph(model=model(), sources=[make_notes_source()], settings=Settings(cache=False))
    assert isinstance(graph, Runnable)
    chain = RunnableLambda(lambda q: {"question": q}) | graph | RunnableLambda(lambda o: o["answer"])
    assert chain.invoke(QUESTION) == "Tsaribrod"
    assert chain.batch([QUESTION, OTHER_QUESTION]) == ["Tsaribrod", "Slatan Dudow"]


async def test_lcel_chain_async_and_streaming():
    from atomgraph import build_atomr_graph

    graph = build_atomr_graph(model=model(), sources=[make_notes_source()], settings=Settings(cache=False))
    chain = RunnableLambda(lambda q: {"question": q}) | graph | RunnableLambda(lambda o: o["answer"])
    assert await chain.ainvoke(OTHER_QUESTION) == "Slatan Dudow"
    steps = [list(chunk)[0] async for chunk in graph.astream({"question": QUESTION}, stream_mode="updates")]
    assert steps[0] == "plan" and steps[-1] == "finalize" and "run_operator" in steps


def test_settings_graph_without_a_model_names_the_setting():
    from atomgraph import build_atomr_graph

    graph = build_atomr_graph(sources=[make_notes_source()], settings=Settings(cache=False))
    with pytest.raises(ConfigError, match="ATOMGRAPH_MODEL"):
        graph.invoke({"question": QUESTION})


# --- packaging ---------------------------------------------------------------------------

def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def mapped_packages() -> dict[str, Path]:
    """Every folder with __init__.py under the folders package-dir maps → its dotted name."""
    found: dict[str, Path] = {}
    for prefix, folder in pyproject()["tool"]["setuptools"]["package-dir"].items():
        root = REPO / folder
        for init in root.rglob("__init__.py"):
            rel = init.parent.relative_to(root)
            if any(part.startswith((".", "__")) for part in rel.parts):
                continue
            found[".".join([prefix, *rel.parts])] = init.parent
    return found


def test_every_sub_package_is_listed_in_pyproject():
    listed = set(pyproject()["tool"]["setuptools"]["packages"])
    found = mapped_packages()
    missing = sorted(set(found) - listed)
    assert not missing, f"sub-packages not in pyproject [tool.setuptools] packages: {missing}"
    stale = sorted(listed - set(found))
    assert not stale, f"pyproject lists packages with no folder/__init__.py: {stale}"


@pytest.mark.slow
def test_wheel_contains_every_module_and_the_demo_data(tmp_path):
    # Build from a copy so the working tree gets no build/ or egg-info; no build isolation,
    # so the already-installed setuptools is used and no network is needed.
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
        ".langgraph_api", ".atomgraph", "runs", ".ipynb_checkpoints"))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
         "--no-index", "-q", "-w", str(tmp_path / "dist")],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = (tmp_path / "dist").glob("atomgraph-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in ["atomgraph/__init__.py", "atomgraph/commands/ask.py", "atomgraph/state/atomr.py",
                 "atomgraph/graphs/atomr.py", "atomgraph/nodes/atomr/plan.py", "atomgraph/tools/base.py",
                 "atomgraph/prompts/atomr/plan.py", "atomgraph/evaluation/runner.py",
                 "atomgraph/demo/kg.ttl", "atomgraph/demo/passages.jsonl", "atomgraph/demo/questions.jsonl"]:
        assert path in names, f"{path} missing from {wheel.name}"
    # every module of every mapped package, at its installed path
    for dotted, folder in mapped_packages().items():
        for py in folder.glob("*.py"):
            installed = "/".join([*dotted.split("."), py.name])
            assert installed in names, f"{installed} missing from {wheel.name}"
    assert not any(n.startswith(("tests/", "benchmarks/", "notebooks/")) for n in names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "atomgraph = atomgraph.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
