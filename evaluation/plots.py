"""PNG plots of report rows (see :func:`atomgraph.evaluation.report.summarize_runs`):
F1 against cost per question, F1 per question type, and (``usage=True``) the cost side by
side — LLM calls, retriever calls, tokens and dollars per question — one figure each per dataset."""

from __future__ import annotations

import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Sequence

from atomgraph.extras import require


def _pyplot():
    matplotlib = require("matplotlib", "plots", "evaluation plots")

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


def plot_usage(rows: Sequence[dict], path: str | os.PathLike, *, title: str | None = None):
    """Four panels, one bar per method: LLM calls, retriever calls, tokens (in + out) and
    dollars, each per question."""
    plt = _pyplot()
    panels = [
        ("LLM calls / q", lambda r: r["llm_calls"]),
        ("retriever calls / q", lambda r: sum(r["retriever_calls"].values())),
        ("tokens / q", lambda r: r["tokens_in"] + r["tokens_out"]),
        ("USD / q", lambda r: r["cost_per_question"]),
    ]
    names = [str(r["method"]) for r in rows]
    fig, axes = plt.subplots(2, 2, figsize=(max(7.0, 1.3 * len(rows) + 2), 6.4))
    colors = [f"C{i % 10}" for i in range(len(rows))]
    for ax, (label, value) in zip(axes.flat, panels):
        ax.bar(range(len(rows)), [value(r) for r in rows], color=colors)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels(names, rotation=35, ha="right", fontsize="small")
        ax.set_title(label, fontsize="medium")
        ax.set_ylim(bottom=0)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title or "cost per question")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return fig


def write_plots(rows: Sequence[dict], out_dir: str | os.PathLike, *, usage: bool = False) -> list[Path]:
    """The plots for each dataset in ``rows`` (F1 vs cost, F1 by type, and with ``usage`` the
    calls/tokens/dollars comparison), as PNG files in ``out_dir``; their paths."""
    plt = _pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_dataset: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_dataset[str(r["dataset"])].append(r)
    paths = []
    for dataset, rs in by_dataset.items():
        slug = _slug(Path(dataset).stem if os.sep in dataset else dataset)
        plots = [("f1_vs_cost", plot_f1_vs_cost), ("f1_by_type", plot_type_f1)]
        if usage:
            plots.append(("usage", plot_usage))
        for name, fn in plots:
            p = out / f"{slug}_{name}.png"
            fig = fn(rs, p, title=f"{dataset}: {name.replace('_', ' ')}")
            plt.close(fig)
            paths.append(p)
    return paths
