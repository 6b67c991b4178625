"""notebooks/arm.ipynb runs top to bottom with the scripted model."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "arm.ipynb"


@pytest.mark.slow
def test_arm_notebook_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_NOTEBOOK_SCRIPTED", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "answer: Munich" in text
    aligned = [ln for ln in text.splitlines() if " -> " in ln and "(snapped" in ln or "(constrained" in ln]
    assert aligned and all(ln.rstrip().endswith("True") for ln in aligned)  # every one a corpus n-gram
    assert "draft 0" in text and "vote:" in text and "replayed" in text
