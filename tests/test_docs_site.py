"""The docs site builds with ``mkdocs build --strict`` (no broken link, every page in the navigation, the settings
reference generated from the settings models), and the README stays a newcomer's page."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def mkdocs_build(root: Path, site: Path) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of the site at ``root``. Never with ``-q``: quiet mode drops the warnings strict
    mode counts, and a broken link or a page outside the navigation then builds with exit status 0."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                          cwd=root, capture_output=True, text=True, env=env, timeout=300)


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    run = mkdocs_build(REPO, tmp_path / "site")
    assert run.returncode == 0, run.stdout + run.stderr
    settings_page = (tmp_path / "site" / "reference" / "settings" / "index.html").read_text(encoding="utf-8")
    assert "ATOMGRAPH_ATOMR__TOP_K" in settings_page and "settings-reference" not in settings_page


def test_a_broken_link_or_a_page_outside_the_navigation_fails_the_build(tmp_path):
    """The build above would fail on either (it has teeth): a copy of the site with one of each."""
    import shutil

    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    (tmp_path / "docs" / "guides" / "orphan.md").write_text("# Orphan\n", encoding="utf-8")
    with (tmp_path / "docs" / "index.md").open("a", encoding="utf-8") as f:
        f.write("\n[gone](guides/no-such-page.md)\n")
    run = mkdocs_build(tmp_path, tmp_path / "site")
    assert run.returncode != 0
    assert "orphan.md" in run.stderr and "no-such-page.md" in run.stderr, run.stderr


def test_readme_is_a_newcomers_page():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    for needed in ("make demo", "make test", "deviation", "## Architecture", "## Adding a method", "## Layout"):
        assert needed in readme
    # Every docs page the README links to exists.
    import re

    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / link).is_file(), link


# --- every code reference in the README and the docs names something that exists ------------------
PROJECT_DIRS = ("atomgraph", "state", "nodes", "graphs", "tools", "prompts", "evaluation", "tests", "benchmarks",
                "notebooks", "docs")
EXAMPLE_NAMES = ("shout",)  # the files of "Adding a method"'s example method, which its reader writes
_PATH = r"(?<![\w/.$-])((?:%s)(?:/[\w.{},-]+)+/?)" % "|".join(PROJECT_DIRS)


def _expand(ref: str) -> list[str]:
    """``prompts/{a,b}.py`` → ``prompts/a.py``, ``prompts/b.py``."""
    import re

    m = re.search(r"\{([^}]*)\}", ref)
    if not m:
        return [ref]
    return [p for alt in m.group(1).split(",") for p in _expand(ref[:m.start()] + alt + ref[m.end():])]


def _defines(path: Path, name: str) -> bool:
    import re

    return bool(re.search(rf"^\s*(?:async\s+)?def {name}\b|^\s*class {name}\b|^{name}\s*[:=]", path.read_text(), re.M))


def _missing_path(ref: str) -> str | None:
    """Why ``ref`` (a file, a folder, ``folder/module`` or ``folder/module.attr``) names nothing; None when it does."""
    ref = ref.rstrip(".,;:")
    if (REPO / ref).exists() or any(name in ref for name in EXAMPLE_NAMES):
        return None
    head, _, last = ref.rpartition("/")
    stem, _, attr = last.partition(".")
    module = REPO / head / f"{stem}.py"
    if attr in ("py", "md", "json", "jsonl", "toml", "ipynb", "yml", "txt"):
        return "no such file"
    if not module.is_file():
        return "no such file, folder or module"
    if attr and not _defines(module, attr.split(".")[0]):
        return f"{head}/{stem}.py defines no {attr.split('.')[0]}"
    return None


def _missing_module(dotted: str) -> str | None:
    """Why ``atomgraph.x.y[.attr]`` names nothing importable; None when it does."""
    import importlib

    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):
                continue
            raise
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return f"{name} has no {'.'.join(parts[i:])}"
            obj = getattr(obj, attr)
        return None
    return "no such module"


def test_every_code_reference_in_the_docs_exists():
    """A module, file or function the README or a docs page names exists today (modules move; the pages follow)."""
    import re

    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{page.relative_to(REPO)}:{n}"
            for ref in re.findall(_PATH, line):
                for one in _expand(ref):
                    why = _missing_path(one)
                    if why:
                        broken.append(f"{where}: {one} ({why})")
            for path, name in re.findall(r"((?:%s)/[\w/]+\.py):(\w+)" % "|".join(PROJECT_DIRS), line):
                if (REPO / path).is_file() and not _defines(REPO / path, name):
                    broken.append(f"{where}: {path}:{name} (not defined there)")
            for dotted in re.findall(r"(?<![\w./])(atomgraph(?:\.\w+)+)", line):
                if dotted.endswith((".toml", ".json")) or any(name in dotted for name in EXAMPLE_NAMES):
                    continue  # atomgraph.toml, the settings file
                why = _missing_module(dotted)
                if why:
                    broken.append(f"{where}: {dotted} ({why})")
    assert not broken, "\n".join(broken)
