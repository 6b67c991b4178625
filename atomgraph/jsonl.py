"""Reading JSON-lines files with errors that name the file and line."""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Iterator

from atomgraph.errors import ParseError


def iter_json_objects(
    lines: Iterable[str | bytes],
    where: str,
    *,
    error: type[Exception] = ParseError,
    loads: Callable[[str], Any] = json.loads,
) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for each non-blank line; a line that is not a JSON object
    raises ``error("WHERE:N: ...")``."""
    for lineno, line in enumerate(lines, 1):
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        if not line.strip():
            continue
        try:
            obj = loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{where}:{lineno}: not valid JSON ({exc.msg}, column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise error(f"{where}:{lineno}: expected a JSON object")
        yield lineno, obj
