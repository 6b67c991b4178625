"""Tolerant readers shared by KAR³'s stages: a JSON object anywhere in a reply (code fences,
prose around it, single quotes, trailing commas), and question lines."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_BULLET = re.compile(r"^\s*(?:[-*•·]+|\(?\d{1,3}[.)\]:]|\(?[a-zA-Z][.)]|Q\d*[:.)]|#+)\s*")


def json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` that parses, or None."""
    candidates = [m.group(1) for m in _FENCE.finditer(text or "")] + [text or ""]
    for cand in candidates:
        start = cand.find("{")
        while start != -1:
            depth, in_str, esc = 0, None, False
            for i in range(start, len(cand)):
                ch = cand[i]
                if in_str:
                    if esc:
                        esc = False
                    elif ch == "\\":
                        esc = True
                    elif ch == in_str:
                        in_str = None
                elif ch in "\"'":
                    in_str = ch
                elif ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                    if depth == 0:
                        obj = _load(cand[start:i + 1])
                        if isinstance(obj, dict):
                            return obj
                        break
            start = cand.find("{", start + 1)
    return None


def _load(s: str) -> Any:
    for attempt in (s, re.sub(r",\s*([}\]])", r"\1", s)):
        try:
            return json.loads(attempt)
        except ValueError:
            pass
        try:
            return ast.literal_eval(attempt.replace("null", "None").replace("true", "True").replace("false", "False"))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    return None


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
