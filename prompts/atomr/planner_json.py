"""Read the JSON object out of a planner's raw text, leniently but visibly.

Models wrap their JSON in code fences, put prose around it, leave trailing commas or write
Python literals (single quotes, ``None``).  :func:`extract_json_object` undoes each of these
and appends a short note to ``repairs`` for every change; what it cannot read raises
:class:`~atomgraph.state.tree.TreeParseError` with the reason.

Objects are decoded into :class:`PairsDict`, a ``dict`` that also remembers every
``(key, value)`` pair in order, so that a key the model wrote twice is not silently lost.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from atomgraph.state.tree import TreeParseError

FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)(?:```|\Z)", re.S)
TRAILING_COMMA_RE = re.compile(r",(\s*[}\]])")
AUTHORS_ERROR = "TREE_PARSING_ERROR"


class PairsDict(dict):
    """A dict that keeps all of its source pairs (duplicated keys included) in ``pairs``."""

    pairs: list[tuple[str, Any]]

    @classmethod
    def from_pairs(cls, pairs: list[tuple[str, Any]]) -> "PairsDict":
        d = cls(pairs)
        d.pairs = list(pairs)
        return d


def loads(text: str) -> Any:
    """``json.loads`` whose objects are :class:`PairsDict` (duplicate keys kept)."""
    return json.loads(text, object_pairs_hook=PairsDict.from_pairs)


def is_authors_error(value: Any) -> bool:
    return isinstance(value, str) and value.strip().strip("\"'").strip() == AUTHORS_ERROR


def _object_span(text: str, start: int) -> int | None:
    """Index one past the ``}`` that closes the object opening at ``start`` (quote-aware)."""
    depth, quote, i, prev = 0, "", start, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote, prev = "", c
            i += 1
            continue
        if c in "\"'":
            # an apostrophe outside a string is a quote only where it opens a Python-literal
            # string (after {, [, : or ,)
            if c == '"' or prev in ("{", "[", ":", ","):
                quote = c
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        if not c.isspace():
            prev = c
        i += 1
    return None


def _decode(body: str, repairs: list[str]) -> Any:
    try:
        return loads(body)
    except json.JSONDecodeError as exc:
        first_error = exc
    fixed = TRAILING_COMMA_RE.sub(r"\1", body)
    if fixed != body:
        try:
            value = loads(fixed)
            repairs.append("removed trailing commas from the JSON")
            return value
        except json.JSONDecodeError:
            pass
    try:
        value = ast.literal_eval(body)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        value = None
    else:
        repairs.append("read the planner output as a Python literal (not strict JSON)")
        return value
    line = body.count("\n", 0, first_error.pos) + 1
    raise TreeParseError(
        f"planner output is not valid JSON: {first_error.msg} (line {line} of the JSON object)"
    )


def extract_json_object(raw: str, repairs: list[str]) -> Any:
    """The JSON value in ``raw`` (normally an object), with notes on what was cleaned."""
    text = raw.strip()
    if not text:
        raise TreeParseError("empty planner output")
    if is_authors_error(text):
        raise TreeParseError(f"the planner output is the authors' {AUTHORS_ERROR} marker (no tree)")
    fences = [m for m in FENCE_RE.finditer(text) if "{" in m.group(2)]
    if fences:
        repairs.append("removed the ``` code fence around the JSON")
        outside = (text[: fences[0].start()] + text[fences[0].end():]).strip()
        text = fences[0].group(2).strip()
        if outside:
            repairs.append("ignored prose outside the code fence")
    start = text.find("{")
    if start < 0:
        try:  # a bare JSON string such as "\"TREE_PARSING_ERROR\""
            value = json.loads(text)
        except json.JSONDecodeError:
            raise TreeParseError("no JSON object found in the planner output") from None
        if is_authors_error(value):
            raise TreeParseError(f"the planner output is the authors' {AUTHORS_ERROR} marker (no tree)")
        raise TreeParseError(f"planner output must be a JSON object, got {type(value).__name__}")
    end = _object_span(text, start)
    if end is None:
        raise TreeParseError("planner output is truncated: the JSON object is never closed")
    if text[:start].strip() and not fences:
        repairs.append("ignored text before the JSON object")
    if text[end:].strip() and not fences:
        repairs.append("ignored text after the JSON object")
    return _decode(text[start:end], repairs)


def extract_json_objects(raw: str) -> list[Any]:
    """Every JSON object written one after another in ``raw`` (code-fenced or bare), decoded,
    in order; objects that cannot be decoded are left out. A reply that holds several plans
    (a copied demonstration's and ours) holds several objects."""
    text = (raw or "").strip()
    fences = [m.group(2) for m in FENCE_RE.finditer(text) if "{" in m.group(2)]
    bodies = fences or [text]
    out: list[Any] = []
    for body in bodies:
        i = body.find("{")
        while i >= 0:
            end = _object_span(body, i)
            if end is None:
                break
            try:
                out.append(_decode(body[i:end], []))
            except TreeParseError:
                pass
            i = body.find("{", end)
    return out
