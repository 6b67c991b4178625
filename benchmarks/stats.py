"""What the benchmarks share: nearest-rank percentiles."""

from __future__ import annotations

from typing import Iterable


def percentile(values: Iterable[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by nearest rank of the sorted values."""
    xs = sorted(values)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * (len(xs) - 1))))]
