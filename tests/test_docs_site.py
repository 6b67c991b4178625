"""The docs site builds with ``mkdocs build --strict`` (no broken link, every page in the navigation, the settings
reference generated from the settings models), and the README stays a newcomer's page."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                         cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    settings_page = (tmp_path / "site" / "reference" / "settings" / "index.html").read_text(encoding="utf-8")
    assert "ATOMGRAPH_ATOMR__TOP_K" in settings_page and "settings-reference" not in settings_page


def test_readme_is_a_newcomers_page():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    for needed in ("make demo", "make test", "deviation", "## Architecture", "## Adding a method", "## Layout"):
        assert needed in readme
    # Every docs page the README links to exists.
    import re

    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / link).is_file(), link
