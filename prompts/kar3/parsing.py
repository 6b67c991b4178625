"""Tolerant readers shared by KAR³'s stages: a JSON object anywhere in a reply (code fences,
prose around it, single quotes, trailing commas; read by :mod:`atomgraph.text`,
the reader every stage shares), and question lines."""

from __future__ import annotations

import re
from typing import Any

from atomgraph.text import read_object

_BULLET = re.compile(r"^\s*(?:[-*•·]+|\(?\d{1,3}[.)\]:]|\(?[a-zA-Z][.)]|Q\d*[:.)]|#+)\s*")


def json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (code fences, prose around it, single quotes, trailing
    commas), or None: the one reader of model JSON (:func:`atomgraph.text.read_object`)."""
    return read_object(text)


def clean_line(line: str) -> str:
    """A line without list markers, quotes or surrounding markdown."""
    line = _BULLET.sub("", line.strip()).strip()
    return line.strip("*_`\"' ").strip().rstrip(",").strip("\"'").strip()


def question_lines(text: str) -> list[str]:
    """Every non-empty, de-bulleted line (duplicates removed, order kept)."""
    out = [clean_line(ln) for ln in (text or "").splitlines()]
    return list(dict.fromkeys(q for q in out if q))


def as_str_list(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [value] if value.strip() else []
    if not isinstance(value, (list, tuple)):
        return []
    return list(dict.fromkeys(clean_line(str(v)) for v in value if v is not None and clean_line(str(v))))
