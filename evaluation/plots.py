"""PNG plots of report rows (see :func:`atomgraph.evaluation.report.summarize_runs`):
F1 against cost per question, and F1 per question type, one figure per dataset."""

from __future__ import annotations

import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Sequence


def _pyplot():
    import matplotlib

    if not os.environ.get("MPLBACKEND"):
        matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt

    return plt


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "dataset"


def plot_f1_vs_cost(rows: Sequence[dict], path: str | os.PathLike, *, title: str | None = None):
    """Scatter of F1 against dollars per question, one labelled point per method."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for r in rows:
        ax.scatter(r["cost_per_question"], r["f1"], s=40)
        ax.annotate(str(r["method"]), (r["cost_per_question"], r["f1"]), textcoords="offset points", xytext=(5, 4))
    ax.set_xlabel("cost per question (USD)")
    ax.set_ylabel("F1 (%)")
    ax.set_title(title or "F1 vs cost")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return fig


def plot_type_f1(rows: Sequence[dict], path: str | os.PathLike, *, title: str | None = None):
    """Grouped bars: F1 per question type (and overall), one bar per method."""
    plt = _pyplot()
    types = sorted({t for r in rows for t in r["by_type"]}) + ["overall"]
    fig, ax = plt.subplots(figsize=(max(5.5, 1.2 * len(types) * max(1, len(rows)) / 2), 4))
    width = 0.8 / max(1, len(rows))
    for i, r in enumerate(rows):
        values = [r["by_type"].get(t, 0.0) for t in types[:-1]] + [r["f1"]]
        xs = [j + i * width for j in range(len(types))]
        ax.bar(xs, values, width=width, label=str(r["method"]))
    ax.set_xticks([j + width * (len(rows) - 1) / 2 for j in range(len(types))])
    ax.set_xticklabels(types, rotation=20, ha="right")
    ax.set_ylabel("F1 (%)")
    ax.set_title(title or "F1 per question type")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return fig


def write_plots(rows: Sequence[dict], out_dir: str | os.PathLike) -> list[Path]:
    """Both plots for each dataset in ``rows``, as PNG files in ``out_dir``; their paths."""
    plt = _pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_dataset: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_dataset[str(r["dataset"])].append(r)
    paths = []
    for dataset, rs in by_dataset.items():
        slug = _slug(Path(dataset).stem if os.sep in dataset else dataset)
        for name, fn in (("f1_vs_cost", plot_f1_vs_cost), ("f1_by_type", plot_type_f1)):
            p = out / f"{slug}_{name}.png"
            fig = fn(rs, p, title=f"{dataset}: {name.replace('_', ' ')}")
            plt.close(fig)
            paths.append(p)
    return paths
