"""One run beside another, question by question: ``atomgraph eval compare RUN_A RUN_B``.

Both runs' records are matched by question id. For each question both answers and their F1,
and whether it *flipped* (right by exact match in one run and not in the other); over the
questions both runs hold, the paired difference of the metric (B − A) with a 95 % bootstrap
interval (questions resampled with replacement, the same resample for both runs, a fixed seed),
and the wins, losses and ties. Questions only one run holds are counted, not compared.
"""

from __future__ import annotations

import os
import random
from typing import Any

from atomgraph.evaluation.metrics import mean


def paired_bootstrap(diffs: list[float], *, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """The 95 % interval of the mean of ``diffs`` (paired differences) by bootstrap."""
    if not diffs:
        return (0.0, 0.0)
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * (resamples - 1))], means[int(0.975 * (resamples - 1))]


def _score(rec: dict, metric: str) -> float:
    return 100.0 * float((rec.get("metrics") or {}).get(metric, 0.0) or 0.0)


def compare_runs(run_a: str | os.PathLike, run_b: str | os.PathLike, *, metric: str = "f1",
                 resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """The comparison of two run directories (or predictions files): see the module docstring."""
    from atomgraph.evaluation.report import load_run

    (meta_a, recs_a), (meta_b, recs_b) = load_run(run_a), load_run(run_b)
    b_by_id = {str(r["id"]): r for r in recs_b}
    a_ids = {str(r["id"]) for r in recs_a}
    rows = []
    for a in recs_a:
        b = b_by_id.get(str(a["id"]))
        if b is None:
            continue
        right_a, right_b = _score(a, "em") > 0, _score(b, "em") > 0
        rows.append({
            "id": str(a["id"]), "question": a.get("question", ""), "gold": list(a.get("gold") or a.get("answers") or []),
            "a": {"predicted": a.get("predicted", ""), metric: _score(a, metric), "error": a.get("error")},
            "b": {"predicted": b.get("predicted", ""), metric: _score(b, metric), "error": b.get("error")},
            "flip": "gained" if right_b and not right_a else "lost" if right_a and not right_b else "",
        })
    diffs = [r["b"][metric] - r["a"][metric] for r in rows]
    low, high = paired_bootstrap(diffs, resamples=resamples, seed=seed)
    return {
        "a": {"run": str(run_a), "method": meta_a.get("method"), "dataset": meta_a.get("dataset"),
              metric: mean(r["a"][metric] for r in rows) if rows else 0.0,
              "degraded": bool((meta_a.get("run") or {}).get("degraded"))},
        "b": {"run": str(run_b), "method": meta_b.get("method"), "dataset": meta_b.get("dataset"),
              metric: mean(r["b"][metric] for r in rows) if rows else 0.0,
              "degraded": bool((meta_b.get("run") or {}).get("degraded"))},
        "metric": metric, "n": len(rows),
        "only_a": len(a_ids - set(b_by_id)), "only_b": len(set(b_by_id) - a_ids),
        "difference": mean(diffs) if diffs else 0.0, "interval": [low, high], "resamples": resamples,
        "wins": sum(1 for d in diffs if d > 0), "losses": sum(1 for d in diffs if d < 0),
        "ties": sum(1 for d in diffs if d == 0),
        "gained": sum(1 for r in rows if r["flip"] == "gained"), "lost": sum(1 for r in rows if r["flip"] == "lost"),
        "rows": rows,
    }


def format_comparison(c: dict, *, every: bool = False, width: int = 40) -> str:
    """The comparison as text: a head, the paired difference, then one line per question that
    differs (``every``: per question)."""
    from atomgraph.text import escape

    m = c["metric"].upper() if c["metric"] in ("em", "f1") else c["metric"]

    def cut(text: Any) -> str:
        text = escape(str(text or "")).replace("\n", " ")
        return text if len(text) <= width else text[: width - 1] + "…"

    lines = [f"A: {c['a']['run']} ({c['a']['method']} on {c['a']['dataset']}) {m} {c['a'][c['metric']]:.2f}"
             + (" DEGRADED" if c["a"]["degraded"] else ""),
             f"B: {c['b']['run']} ({c['b']['method']} on {c['b']['dataset']}) {m} {c['b'][c['metric']]:.2f}"
             + (" DEGRADED" if c["b"]["degraded"] else ""),
             f"{c['n']} questions in both ({c['only_a']} only in A, {c['only_b']} only in B): "
             f"B − A {m} {c['difference']:+.2f} (95% paired bootstrap {c['interval'][0]:+.2f} to "
             f"{c['interval'][1]:+.2f}, {c['resamples']} resamples); {c['wins']} better, {c['losses']} worse, "
             f"{c['ties']} the same; flipped by EM: {c['gained']} gained, {c['lost']} lost", ""]
    shown = [r for r in c["rows"] if every or r["a"]["predicted"] != r["b"]["predicted"] or r["flip"]]
    if shown:
        lines.append(f"{'id':<16} {'A answer':<{width}} {m:>6}  {'B answer':<{width}} {m:>6}  flip")
    for r in shown:
        lines.append(f"{cut(r['id'])[:16]:<16} {cut(r['a']['predicted']):<{width}} {r['a'][c['metric']]:>6.1f}  "
                     f"{cut(r['b']['predicted']):<{width}} {r['b'][c['metric']]:>6.1f}  {r['flip']}")
    return "\n".join(lines)
