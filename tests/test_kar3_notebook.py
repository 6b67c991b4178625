"""The KAR³ notebook runs top to bottom with the scripted model."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "kar3.ipynb"


@pytest.mark.slow
def test_kar3_notebook_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_NOTEBOOK_SCRIPTED", "1")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "\n".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    assert "atomized 97, skipped 0" in text and "answer: Munich" in text
    assert "round 1: proposals ['Who was the doctoral advisor of Werner Heisenberg?']" in text
    assert "exit: enough" in text and "'llm_calls': 6" in text
