"""An ATOMGRAPH_* environment variable that names no setting is said, never ignored in silence
(atomgraph/settings.py: unknown_environment, ENV_ONLY): a typo is named with the closest real name,
once, on the command line's first line and as a warning when the settings load."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from atomgraph import settings as settings_mod
from atomgraph.cli import main
from atomgraph.settings import ENV_ONLY, UnknownSettingWarning, get_settings, unknown_environment

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _fresh_reports(monkeypatch):
    monkeypatch.setattr(settings_mod, "_WARNED", set())


def test_typos_are_named_with_the_closest_setting_and_real_names_are_not():
    env = {"ATOMGRAPH_MODLE": "gpt-4o", "ATOMGRAPH_TOPK": "5", "ATOMGRAPH_XYZZY": "1",
           "ATOMGRAPH_MODEL": "gpt-4o", "ATOMGRAPH_CACHE": "false", "ATOMGRAPH_ATOMR__TOP_K": "5",
           "ATOMGRAPH_PLANNER_MODEL": "x", "ATOMGRAPH_CRITIC_MODEL": "x",  # a role registered at run time
           "ATOMGRAPH_LOCAL_THREADS": "1", "OPENAI_API_KEY": "k", "PATH": "/bin"}
    found = dict(unknown_environment(env))
    assert set(found) == {"ATOMGRAPH_MODLE", "ATOMGRAPH_TOPK", "ATOMGRAPH_XYZZY"}
    assert found["ATOMGRAPH_MODLE"] == "ATOMGRAPH_MODEL"
    assert "__TOP_K" in found["ATOMGRAPH_TOPK"] and found["ATOMGRAPH_XYZZY"] is None


def test_loading_the_settings_warns_once_per_name_and_still_loads(monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_MODLE", "gpt-4o")
    with pytest.warns(UnknownSettingWarning, match=r"ATOMGRAPH_MODLE .*did you mean ATOMGRAPH_MODEL"):
        s = get_settings()
    assert s.model is None  # the typo had no effect, and said so
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        get_settings()  # said once


def test_a_wrong_name_inside_a_section_is_still_refused(monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_ATOMR__TOPK", "5")
    assert unknown_environment() == []  # the settings refuse it themselves, naming the field
    with pytest.raises(ValueError, match="atomr.topk"):
        get_settings()


def test_the_command_line_says_it_first(monkeypatch, capsys):
    monkeypatch.setenv("ATOMGRAPH_TOPK", "5")
    assert main(["eval", "methods"]) == 0
    out = capsys.readouterr()
    assert out.err.splitlines()[0].startswith("atomgraph: warning: ATOMGRAPH_TOPK is not an atomgraph setting")
    assert "atomr" in out.out  # the command ran


def test_every_name_the_code_and_docs_use_is_known():
    names = set()
    for folder in ("atomgraph", "nodes", "tools", "state", "prompts", "graphs", "evaluation", "docs", "benchmarks"):
        for path in (REPO / folder).rglob("*"):
            if path.suffix in (".py", ".md") and path.is_file():
                names |= set(re.findall(r"\bATOMGRAPH_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8")))
    names |= set(re.findall(r"\bATOMGRAPH_[A-Z0-9_]*[A-Z0-9]\b", (REPO / "README.md").read_text(encoding="utf-8")))
    names = {n for n in names if "SHOUT" not in n and n != "ATOMGRAPH_TOPK"}  # the guide's toy method; the typo the settings page shows
    assert names, "no names found"
    assert unknown_environment({n: "1" for n in names}) == []
    assert set(ENV_ONLY) <= names | {"ATOMGRAPH_CONFIG"}
