"""Filter's pre-selection (ATOMR §3.1): drop entities whose retrieved passages barely
overlap the query "{entity} {condition}".

The overlap coefficient is |q ∩ p| / min(|q|, |p|) over the content words of each side
(:func:`atomgraph.text.content_words`: lower-cased, function words removed, so that
"born in 1955" is judged on "born" and "1955").
"""

from __future__ import annotations

from atomgraph.text import content_words, split_entities

__all__ = ["overlap_coefficient", "split_entities"]


def overlap_coefficient(query: str, passage: str) -> float:
    q, p = content_words(query), content_words(passage)
    if not q or not p:
        return 0.0
    return len(q & p) / min(len(q), len(p))
