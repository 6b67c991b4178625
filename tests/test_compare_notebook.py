"""The comparison notebook runs top to bottom with the scripted model and plots the comparison."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "compare.ipynb"
METHODS = ("rag", "self_ask", "ircot", "react", "iter_retgen", "decomposed_rag")


@pytest.mark.slow
def test_compare_notebook_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_NOTEBOOK_SCRIPTED", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    text = "\n".join(
        o.get("text", "") + str(o.get("data", {}).get("text/markdown", "")) + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    for method in METHODS:
        assert f"| {method} | 5 |" in text, method  # one report row per method, five questions each
        assert f"{method:15} finished 5, resumed past 0, errors 0" in text, method
    assert "answer: 'Munich'" in text  # the scripted methods find demo-2's answer in the passages
    pngs = sorted(p.name for p in (tmp_path / "compare_runs" / "plots").iterdir())
    assert pngs == ["demo_f1_by_type.png", "demo_f1_vs_cost.png", "demo_usage.png"]
