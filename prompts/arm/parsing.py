"""What ARM's parsers share: the first JSON value in a reply, and plain-line items.

Every ARM parser reads JSON when it finds it and plain lines otherwise, and raises
:class:`~atomgraph.errors.ParseError` on text it cannot read.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)
BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\(\d+\))\s*")
NONE = re.compile(r"^\s*(?:none|no changes?|nothing|n/a|-)\s*\.?\s*$", re.I)
_MAX_ITEM_CHARS = 200


def json_value(text: str) -> Any:
    """The first JSON object or list in ``text`` (code fences allowed), or None."""
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(text)
    decoder = json.JSONDecoder()
    for cand in candidates:
        for i, ch in enumerate(cand):
            if ch in "[{":
                try:
                    value, _ = decoder.raw_decode(cand[i:])
                except (ValueError, RecursionError):
                    continue
                return value
    return None


def clean(item: Any) -> str:
    s = item if isinstance(item, str) else ("" if item is None else str(item))
    return s.strip().strip("\"'`“”‘’").strip()[:_MAX_ITEM_CHARS]


def unique(items) -> list[str]:
    out: list[str] = []
    for it in items:
        s = clean(it)
        if s and s not in out:
            out.append(s)
    return out


def line_items(text: str, label: str | None = None) -> list[str]:
    """Items from plain lines: bullets or numbers stripped, a leading ``label:`` dropped, one
    comma-separated line split."""
    lines = [ln for ln in (x.strip() for x in text.splitlines()) if ln]
    if label:
        lab = re.compile(rf"^\s*{label}\s*[:：]\s*", re.I)
        lines = [x for x in (lab.sub("", ln).strip() for ln in lines) if x]
    items = [BULLET.sub("", ln) for ln in lines]
    if len(items) == 1 and "," in items[0]:
        items = items[0].split(",")
    return unique(items)
