"""Shared fixtures. Data from ../shared/data is read in place; tests that need it skip
cleanly (with a message) where the folder is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ATOMGRAPH_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} is absent")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path, monkeypatch):
    """No test reads the developer's own model keys, config file or caches."""
    for key in list(os.environ):
        if key.startswith("ATOMGRAPH_") and key != "ATOMGRAPH_SHARED_DATA":
            monkeypatch.delenv(key, raising=False)
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SERPAPI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ATOMGRAPH_CACHE_PATH", str(tmp_path / "llm_cache.sqlite"))
    monkeypatch.setenv("ATOMGRAPH_CHROMA_PATH", str(tmp_path / "chroma"))
    monkeypatch.chdir(tmp_path)
