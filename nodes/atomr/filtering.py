"""Filter's pre-selection as the authors run it (ATOMR §3.1; ``knowledge_sources.py``).

For each text or web source separately: retrieve the top passage for "{entity} {condition}"
per candidate entity; keep the entities whose overlap coefficient with that passage (title
included) reaches t (``filter_threshold``, 0.5); when the best entity scores at least 0.85,
keep only the entities scoring at least 0.85. The knowledge graph is never gated: it gets
the whole Filter call. The overlap coefficient is |q ∩ p| / min(|q|, |p|) over the
lower-cased whitespace-separated words of each side (stop-words included, as the authors
count them).
"""

from __future__ import annotations

__all__ = ["overlap_coefficient", "HIGH_CONFIDENCE", "gate"]

HIGH_CONFIDENCE = 0.85


def word_set(text: str) -> set[str]:
    return set((text or "").lower().split())


def overlap_coefficient(query: str, passage: str) -> float:
    q, p = word_set(query), word_set(passage)
    if not q or not p:
        return 0.0
    return len(q & p) / min(len(q), len(p))


def gate(scores: dict[str, float], threshold: float) -> list[str]:
    """The entities kept from ``{entity: overlap}``: those ≥ ``threshold``; only those
    ≥ 0.85 when the best reaches 0.85. Best first."""
    kept = sorted(((e, s) for e, s in scores.items() if s >= threshold), key=lambda es: -es[1])
    if kept and kept[0][1] >= HIGH_CONFIDENCE:
        kept = [(e, s) for e, s in kept if s >= HIGH_CONFIDENCE]
    return [e for e, _ in kept]
