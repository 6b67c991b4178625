"""What the benchmarks share: nearest-rank percentiles, writing a result."""

from __future__ import annotations

from typing import Iterable


def percentile(values: Iterable[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by nearest rank of the sorted values."""
    xs = sorted(values)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * (len(xs) - 1))))]


def write_result(result: dict, out: str | None, *, show: bool = True) -> None:
    """Print a benchmark's JSON result (``show``) and write it to ``out`` when given."""
    import json
    from pathlib import Path

    text = json.dumps(result, indent=2, ensure_ascii=False)
    if show:
        print(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text + "\n", encoding="utf-8")
