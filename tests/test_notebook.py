"""The experiment notebook runs top to bottom with the scripted model."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "experiment.ipynb"


@pytest.mark.slow
def test_experiment_notebook_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_NOTEBOOK_SCRIPTED", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "\n".join(
        o.get("text", "") + str(o.get("data", {}).get("text/markdown", "")) + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    assert "| rag |" in text and "| standard |" in text and "| atomr |" in text
    assert "answer: Munich" in text
    assert any(p.suffix == ".png" for p in (tmp_path / "notebook_runs" / "plots").iterdir())
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
