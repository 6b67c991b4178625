"""What a run's client may name (tools/access.py, docs/guides/security.md): sources and models
by name, never code or a model file; files only under the operator's ``data_dirs``. The same over
a real ``langgraph dev``: tests/test_langgraph_dev.py (``test_a_client_names_*``)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from atomgraph.tools.access import client_model, client_path, client_sources
from atomgraph.cli import main
from atomgraph.errors import ConfigError
from atomgraph.settings import Settings


@pytest.fixture
def folders(tmp_path):
    data, private = tmp_path / "data", tmp_path / "private"
    data.mkdir()
    private.mkdir()
    (private / "secret.txt").write_text("PRIVATE-c0ffee\n")
    (data / "ok.jsonl").write_text("{}\n")
    (data / "link").symlink_to(private / "secret.txt")
    return data, private, Settings(data_dirs=[str(data)], cache=False)


def test_a_client_path_lies_under_the_data_folders_after_symlinks_and_dotdot(folders):
    data, private, settings = folders
    assert client_path(data / "ok.jsonl", settings) == str(data / "ok.jsonl")
    assert client_path(data / "not-yet" / "cache", settings, "index cache")  # a folder to be written, inside
    for outside in (private / "secret.txt", data / "link", data / ".." / "private" / "secret.txt", "/etc/passwd"):
        with pytest.raises(ConfigError, match="outside the data folders .*data_dirs.* not opened"):
            client_path(outside, settings, "objects path")
    with pytest.raises(ConfigError, match="must be a path"):
        client_path("bad\x00name", settings)
    from atomgraph.tools.access import BUNDLED_DATA  # atomgraph's demo pack: read by any run, written by none

    assert client_path(BUNDLED_DATA / "passages.jsonl", settings)
    with pytest.raises(ConfigError, match="outside the data folders"):
        client_path(BUNDLED_DATA / "cache", settings, "index cache", write=True)


def test_data_dirs_default_to_the_shared_data_folder_and_the_working_stores(monkeypatch, shared_data):
    monkeypatch.delenv("ATOMGRAPH_DATA_DIRS")
    dirs = Settings().data_dirs
    assert dirs[-1] == ".atomgraph" and os.path.samefile(dirs[0], shared_data)
    monkeypatch.setenv("ATOMGRAPH_DATA_DIRS", "/srv/a, /srv/b")
    assert Settings().data_dirs == ["/srv/a", "/srv/b"]


def test_a_client_names_models_never_model_files():
    settings = Settings(cache=False)
    for name in ("gpt-4o-mini", "local", "anthropic:claude-sonnet-4-5", "meta-llama/Llama-3.1-8B-Instruct"):
        assert client_model(name, settings) == name
    for name in ("local:/etc/passwd", "local:model.gguf", "huggingface:/srv/weights", "ollama:../../x"):
        with pytest.raises(ConfigError, match="is a file .*chooses models by name"):
            client_model(name, settings)
    configured = Settings(model="local:/models/m.gguf", cache=False)  # the operator's file: by its exact name
    assert client_model("local:/models/m.gguf", configured) == "local:/models/m.gguf"
    offered = Settings(model="gpt-4o", allowed_models=["gpt-4o-mini"], cache=False)
    assert client_model("gpt-4o-mini", offered) and client_model("gpt-4o", offered)
    with pytest.raises(ConfigError, match="'o1' is not offered here; choose one of: gpt-4o, gpt-4o-mini"):
        client_model("o1", offered)


def test_a_client_names_sources_by_declared_name_never_code(monkeypatch):
    settings = Settings(sources=["wikipedia", "user_sources:kb"], cache=False)
    assert client_sources(["wikipedia", "google"], settings) == ["wikipedia", "google"]
    assert client_sources(["user_sources:kb"], settings)  # the operator's settings name it
    assert client_sources(["mydocs"], settings, offered=["mydocs"])  # the graph's own (Python) source
    for name in ("subprocess:getoutput", "os:system", "builtins:eval"):
        with pytest.raises(ConfigError, match=f"unknown knowledge source '{name}'.*names no code"):
            client_sources([name], settings)


def test_a_run_context_naming_code_is_refused_before_any_call(tmp_path):
    """In process too: the run's context is a client's, whoever invokes the graph."""
    from atomgraph.graphs.registry import build_method
    from atomgraph.testing import ScriptedChatModel

    marker = tmp_path / "ran"
    model = ScriptedChatModel(default="So the answer is: x")
    graph = build_method("rag", model=model, settings=Settings(cache=False))
    for source in ("subprocess:getoutput", "os:system"):
        with pytest.raises(ConfigError, match="names no code"):
            graph.invoke({"question": f"touch {marker}"}, context={"sources": [source]})
    with pytest.raises(ConfigError, match="chooses models by name"):
        graph.invoke({"question": "Who?"}, context={"models": {"answerer": "local:/etc/passwd"}})
    assert not marker.exists() and not model.calls


def _recipe(tmp_path, settings: str, dataset: str | None = None):
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": "1", "question": "Where?", "answers": ["Paris"]}) + "\n")
    p = tmp_path / "shared.toml"
    p.write_text(f'title = "x"\npaper = "p"\ntable = "T"\nmethod = "rag"\ndataset = "{dataset or data}"\n'
                 f'metric = "f1"\npaper_value = 1.0\n[settings]\n{settings}')
    return p


@pytest.mark.parametrize("settings, says", [
    ('sources = ["subprocess:getoutput"]\n', "knowledge source 'subprocess:getoutput' is not a registered name"),
    ('sources = ["os:system"]\n', "knowledge source 'os:system' is not a registered name"),
    ('model = "local:/etc/passwd"\n', "the model is a file"),
    ('planner_model = "local:../m.gguf"\n', "the planner_model is a file"),
    ('data_dirs = ["/"]\n', "sets 'data_dirs', which only the operator's settings set"),
    ('model = "m"\nwikidata_file = "/etc/passwd"\n', "Wikidata file '/etc/passwd' lies outside the data folders"),
    ('model = "m"\n[settings.arm]\nindex_cache = "/tmp/anywhere"\n', "arm.index_cache '/tmp/anywhere' lies outside"),
])
def test_a_shared_recipe_names_no_code_and_no_file_outside(tmp_path, capsys, settings, says):
    marker = tmp_path / "ran"
    recipe = _recipe(tmp_path, settings)
    code = main(["eval", "run", "--recipe", str(recipe), "--out", str(tmp_path / "run"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and says in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "run").exists() and not marker.exists()


def test_a_recipe_dataset_outside_the_data_folders_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_DATA_DIRS", str(tmp_path / "data"))
    recipe = _recipe(tmp_path, 'model = "m"\n')
    assert main(["eval", "run", "--recipe", str(recipe), "--out", str(tmp_path / "run"), "--no-progress"]) != 0
    err = capsys.readouterr().err.strip()
    assert "the dataset" in err and "outside the data folders" in err and len(err.splitlines()) == 1, err


def test_the_operators_settings_still_name_code(tmp_path, monkeypatch):
    """``module:attr`` in the operator's settings is imported, and a run may pick it by that name."""
    from atomgraph.graphs.registry import build_method
    from atomgraph.testing import ScriptedChatModel

    (tmp_path / "op_sources.py").write_text(
        "from langchain_core.documents import Document\n"
        "def kb(query):\n    return [Document(page_content='Kuhle Wampe was directed by Slatan Dudow.')]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    settings = Settings(sources=["op_sources:kb"], cache=False)
    graph = build_method("rag", model=ScriptedChatModel(default="So the answer is: Slatan Dudow"), settings=settings)
    out = graph.invoke({"question": "Who directed Kuhle Wampe?"}, context={"sources": ["op_sources:kb"]})
    assert out["answer"] == "Slatan Dudow" and out["retriever_calls"], out["error"]
    sys.modules.pop("op_sources", None)


def test_readers_errors_name_places_never_content(tmp_path):
    """A file read as the wrong thing: the error says where and what is wrong, never what the file holds."""
    from atomgraph.errors import ParseError
    from atomgraph.local.engine import check_gguf_path
    from atomgraph.tools.corpus_readers import read_passages
    from atomgraph.tools.objects import load_objects

    secret, digits = "PRIVATE-c0ffee", "1" + "7" * 20
    files = {"header.tsv": f"{secret}\tb\n1\t2\n", "keys.json": f'[{{"{secret}": 1}}]',
             "kind.jsonl": json.dumps({"id": "a", "kind": secret, "title": "t", "text": "x"}) + "\n",
             "big.jsonl": f'{{"title": "t", "text": {digits}e999}}\n', "weights.gguf": f"{secret} not a model"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    readers = [lambda: list(read_passages(tmp_path / "header.tsv", "tsv")),
               lambda: list(read_passages(tmp_path / "keys.json", "hipporag")),
               lambda: load_objects(tmp_path / "kind.jsonl"),
               lambda: list(read_passages(tmp_path / "big.jsonl", "jsonl")),
               lambda: check_gguf_path(tmp_path / "weights.gguf")]
    for read in readers:
        with pytest.raises((ConfigError, ParseError)) as err:
            read()
        message = str(err.value)
        assert secret.lower() not in message.lower() and digits not in message and str(tmp_path) in message, message
        assert "PRIV" not in message, message  # not even the first bytes
