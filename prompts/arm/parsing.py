"""What ARM's parsers share: the first JSON value in a reply, and plain-line items.

Every ARM parser reads JSON when it finds it and plain lines otherwise, and raises
:class:`~atomgraph.errors.ParseError` on text it cannot read.
"""

from __future__ import annotations

import re
from typing import Any

from atomgraph.text import read_json

BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\(\d+\))\s*")
NONE = re.compile(r"^\s*(?:none|no changes?|nothing|n/a|-)\s*\.?\s*$", re.I)
_MAX_ITEM_CHARS = 200


def json_value(text: str) -> Any:
    """The JSON object or list of ``text`` (code fences allowed), or None: the one reader of model
    JSON (:func:`atomgraph.text.read_json`; a citation marker such as the ``[1]`` of
    ``'Sure! [1] is the first. Then: ["a", "b"]'`` is not taken for the list)."""
    return read_json(text)


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
