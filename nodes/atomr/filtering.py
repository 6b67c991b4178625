"""Filter's pre-selection (ATOMR §3.1): drop entities whose retrieved passages barely
overlap the query "{entity} {condition}".

The overlap coefficient is |q ∩ p| / min(|q|, |p|) over sets of lower-cased word tokens,
with a few function words removed so that "born in 1955" is judged on "born" and "1955".
"""

from __future__ import annotations

import json
import re

_TOKEN = re.compile(r"[\w']+", re.UNICODE)
_STOP = frozenset(
    "a an the of in on at to for from by with and or is was are were be been as that which who whom "
    "whose what its it this these those among".split()
)


def tokens(text: str) -> set[str]:
    return {t for t in (m.group(0).lower() for m in _TOKEN.finditer(text or "")) if t not in _STOP}


def overlap_coefficient(query: str, passage: str) -> float:
    q, p = tokens(query), tokens(passage)
    if not q or not p:
        return 0.0
    return len(q & p) / min(len(q), len(p))


def split_entities(text: str) -> list[str]:
    """An entity list written as text: a JSON/Python list, or items separated by commas/'and'."""
    text = (text or "").strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            items = json.loads(text)
            if isinstance(items, list):
                return [str(x).strip() for x in items if str(x).strip()]
        except json.JSONDecodeError:
            text = text[1:-1]
    parts = re.split(r",|;|\band\b", text)
    return [p.strip().strip("'\"") for p in parts if p.strip().strip("'\"")]
