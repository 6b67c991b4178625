"""The one reader of JSON in a model's reply, used by every stage that reads JSON.

A model writes JSON inside prose, in a code fence, with a trailing comma or as a Python literal
(single quotes, ``None``, ``True``). :func:`read_json` finds it:

1. the text of code fences (````json ... ````) first, then the reply itself;
2. in each, every top-level JSON value from left to right (a ``{`` or ``[`` that starts a
   value; its end found by :class:`json.JSONDecoder` or, for a value that is not strict JSON, by
   bracket matching that respects quoted strings);
3. each read strictly (``json.loads``), else with trailing commas dropped (outside strings),
   else as a Python literal whose bare names ``null``/``true``/``false``/``None``/``True``/``False``
   are read as *tokens* of the literal's syntax tree — the text of strings is never rewritten
   ("the nullification crisis" stays as written);
4. a list of bare numbers that sits inside a sentence (``"Sure! [1] is the first"``) is a
   citation marker, not the reply's JSON: it is taken only when nothing else is found;
5. the first value of a wanted type (``want``) that passes ``accept`` is returned; None when none.

LangChain's ``parse_json_markdown`` reads only a reply that *is* JSON (after its fence), and
json-repair is not a dependency: neither reads prose around a value, so this reader does.

>>> read_json('Sure! [1] is the first. Then: ["a", "b"]')
['a', 'b']
>>> read_json("{'answer': 'the nullification crisis', 'ok': true,}")
{'answer': 'the nullification crisis', 'ok': True}
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Callable, Iterator

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|python)?[ \t]*\n?(.*?)```", re.S)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_NAMES = {"null": None, "None": None, "true": True, "True": True, "false": False, "False": False}
MAX_CHARS = 100_000  # a reply longer than this is cut to it before reading (replies are capped long before)
MAX_STARTS = 64  # brackets tried per text, and characters scanned from each: a reply of 50,000 "[" is read
MAX_SPAN = 16_384  # in bounded time (a reply's JSON is far shorter: replies are capped at the stage's output cap)
_OPEN = re.compile(r"[\[{]")


def _literal(node: ast.AST) -> Any:
    """The value of a Python literal's syntax tree, its bare names read as JSON's / Python's constants."""
    if isinstance(node, ast.Expression):
        return _literal(node.body)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("** in a literal")
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)):
        return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    raise ValueError(f"not a literal: {type(node).__name__}")


def _outside_strings(text: str, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, str, bool]]:
    """``(index, character, inside)`` for ``text[start:stop]``, ``inside`` true for the characters of a
    quoted string (its quotes included; backslash escapes respected)."""
    quote, esc = None, False
    for i in range(start, len(text) if stop is None else min(len(text), stop)):
        ch = text[i]
        if quote:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                quote = None
            yield i, ch, True
        elif ch in "\"'":
            quote = ch
            yield i, ch, True
        else:
            yield i, ch, False


def _drop_trailing_commas(text: str) -> str:
    """``text`` without commas before a closing bracket, outside quoted strings."""
    return "".join(ch for i, ch, inside in _outside_strings(text)
                   if inside or ch != "," or not _TRAILING_COMMA.match(text, i))


def loads(text: str) -> Any:
    """``text`` (one whole value) as JSON, tolerantly (trailing commas, a Python literal); ValueError when it is none."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    fixed = _drop_trailing_commas(text)
    if fixed != text:
        try:
            return json.loads(fixed)
        except (ValueError, RecursionError):
            pass
    try:
        value = _literal(ast.parse(fixed.strip(), mode="eval"))
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        raise ValueError("not JSON, nor a Python literal") from None
    if not isinstance(value, (dict, list, str, int, float, bool)) and value is not None:
        raise ValueError("not a JSON value")
    return value


def _balanced_end(text: str, start: int) -> int:
    """The index just past the bracket closing the one at ``start`` (strings respected); -1 when unclosed."""
    depth = 0
    for i, ch, inside in _outside_strings(text, start, start + MAX_SPAN):
        if inside:
            continue
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _values(text: str) -> Iterator[tuple[Any, int, int]]:
    """``(value, start, end)`` for each top-level JSON value of ``text``, left to right."""
    decoder = json.JSONDecoder()
    i = 0
    for _ in range(MAX_STARTS):
        m = _OPEN.search(text, i)
        if not m:
            return
        start = m.start()
        try:
            value, end = decoder.raw_decode(text[start:start + MAX_SPAN])
            end += start
        except (ValueError, RecursionError):
            end = _balanced_end(text, start)
            value = ...
            if end > 0:
                try:
                    value = loads(text[start:end])
                except ValueError:
                    value = ...
        if value is ...:
            i = start + 1
            continue
        yield value, start, end
        i = end


def _citation(value: Any, text: str, start: int, end: int) -> bool:
    """A list of bare numbers written inside a sentence (text before or after it on its line)."""
    if not isinstance(value, list) or not value or not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        return False
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    before = text[line_start:start].strip()
    after = text[end:line_end if line_end >= 0 else len(text)].strip()
    return bool(re.search(r"\w", after)) or bool(re.search(r"\w", before) and not re.search(r"[:=]\s*$", before))


def read_json(text: str, *, want: type | tuple[type, ...] = (dict, list),
              accept: Callable[[Any], bool] | None = None) -> Any:
    """The JSON value a model's reply holds (see the module's docstring), or None."""
    text = (text or "")[:MAX_CHARS]
    fenced = [m.group(1) for m in _FENCE.finditer(text)]
    citations: list[Any] = []
    for cand in [*fenced, text]:
        for value, start, end in _values(cand):
            if not isinstance(value, want) or (accept is not None and not accept(value)):
                continue
            if _citation(value, cand, start, end):
                citations.append(value)
                continue
            return value
    return citations[0] if citations else None


def read_object(text: str, accept: Callable[[dict], bool] | None = None) -> dict | None:
    """The first JSON object of a reply (:func:`read_json` with ``want=dict``), or None."""
    return read_json(text, want=dict, accept=accept)


__all__ = ["MAX_CHARS", "loads", "read_json", "read_object"]
