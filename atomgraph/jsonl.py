"""Strict reading of the files a user hands the CLI (and the library): one place for every
command that reads JSON, JSON lines or text.

Every failure is one :class:`~atomgraph.errors.ParseError` (or the caller's own error class,
``error=``) whose message names the file and, where there is one, the line:

- a path that does not exist, is a directory, or cannot be read (:func:`check_file`);
- text that is not in the file's encoding (UTF-8 unless the caller passes another; the message
  says how: fix the file or pass ``--encoding``) — never replaced silently;
- a line (or document) that is not JSON, a number of more than 4,300 digits, nesting deeper
  than Python can parse (:func:`loads_strict`);
- a line that is not a JSON object where objects are expected.

Blank lines are not records. What a caller skips on purpose it counts in a
``collections.Counter`` (reason → how many) that its summary prints.

    for lineno, obj in iter_json_lines(path, encoding=args.encoding):   # JSON lines
        ...
    data = read_json(path)                                             # one JSON document
    text = read_text(path)                                             # any text file
"""

from __future__ import annotations

import codecs
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from atomgraph.errors import ConfigError, ParseError

ENCODING_HINT = "fix the file or pass its --encoding"
UTF8_ONLY = "fix the file: it must be UTF-8"  # for files no option can give another encoding (TOML, run records)


def check_encoding(encoding: str) -> str:
    """``encoding`` when Python knows it; ConfigError naming it otherwise."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ConfigError(f"unknown text encoding {encoding!r}") from None
    return encoding


def check_file(path: str | os.PathLike, *, what: str = "file", error: type[Exception] = ParseError) -> Path:
    """``path`` as a Path when it is a readable file; ``error`` saying what it is otherwise (no
    such file, a directory, not readable)."""
    p = Path(path)
    try:
        if not p.exists():
            raise error(f"{p}: no such file" + (f" (the {what})" if what != "file" else ""))
        if p.is_dir():
            raise error(f"{p} is a directory, not a {what}")
        if not os.access(p, os.R_OK):
            raise error(f"{p}: cannot read it (permission denied)")
    except OSError as exc:  # a name too long, a loop of links, ...
        raise error(f"{p}: cannot read it ({exc.strerror or exc})") from None
    return p


def decode_line(raw: bytes | str, where: str, encoding: str = "utf-8", *, error: type[Exception] = ParseError,
                hint: str = ENCODING_HINT) -> str:
    """``raw`` as text; ``error`` naming ``where`` when it is not ``encoding``."""
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not {encoding} text ({exc.reason} at byte {exc.start} of the line); {hint}") from None


def loads_strict(text: str, where: str, *, error: type[Exception] = ParseError,
                 loads: Callable[[str], Any] = json.loads) -> Any:
    """``loads(text)`` with every failure (bad JSON, a number of over 4,300 digits, nesting too
    deep) as ``error`` naming ``where``."""
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        line = f" line {exc.lineno}," if exc.lineno > 1 else ""
        raise error(f"{where}: not valid JSON ({exc.msg} at{line} column {exc.colno})") from None
    except RecursionError:
        raise error(f"{where}: JSON nested too deeply to read") from None
    except ValueError as exc:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        raise error(f"{where}: unreadable JSON value ({str(exc)[:160]})") from None


def read_bytes(path: str | os.PathLike, *, what: str = "file", error: type[Exception] = ParseError) -> bytes:
    p = check_file(path, what=what, error=error)
    try:
        return p.read_bytes()
    except OSError as exc:
        raise error(f"{p}: cannot read it ({exc.strerror or exc})") from None


def read_text(path: str | os.PathLike, *, encoding: str = "utf-8", what: str = "file",
              error: type[Exception] = ParseError, hint: str = ENCODING_HINT) -> str:
    """The whole text of a file, decoded strictly; a byte that is not ``encoding`` is an error
    naming the file and its line."""
    check_encoding(encoding)
    raw = read_bytes(path, what=what, error=error)
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1)
        raise error(f"{path}:{line}: not {encoding} text ({exc.reason} at byte {col} of the line); {hint}") from None


def read_json(path: str | os.PathLike, *, encoding: str = "utf-8", what: str = "file",
              error: type[Exception] = ParseError, loads: Callable[[str], Any] = json.loads,
              hint: str = ENCODING_HINT) -> Any:
    """One JSON document, read strictly; errors name the file and line."""
    text = read_text(path, encoding=encoding, what=what, error=error, hint=hint)
    if not text.strip():
        raise error(f"{path}: the {what} is empty")
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    except (ValueError, RecursionError):
        return loads_strict(text, str(path), error=error, loads=loads)  # raises the error that says why


def iter_json_objects(
    lines: Iterable[str | bytes],
    where: str,
    *,
    error: type[Exception] = ParseError,
    loads: Callable[[str], Any] = json.loads,
    encoding: str = "utf-8",
    hint: str = ENCODING_HINT,
) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for each non-blank line; a line that is not ``encoding`` text,
    not JSON or not a JSON object raises ``error("WHERE:N: ...")``."""
    for lineno, raw in enumerate(lines, 1):
        at = f"{where}:{lineno}"
        line = decode_line(raw, at, encoding, error=error, hint=hint)
        if not line.strip():
            continue
        obj = loads_strict(line, at, error=error, loads=loads)
        if not isinstance(obj, dict):
            raise error(f"{at}: expected a JSON object, found {type(obj).__name__}")
        yield lineno, obj


def iter_json_lines(path: str | os.PathLike, *, encoding: str = "utf-8", what: str = "file",
                    error: type[Exception] = ParseError,
                    loads: Callable[[str], Any] = json.loads) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for each non-blank line of a JSON-lines file, read strictly
    (see :func:`iter_json_objects`)."""
    check_encoding(encoding)
    p = check_file(path, what=what, error=error)
    try:
        with open(p, "rb") as fh:
            yield from iter_json_objects(fh, str(p), error=error, loads=loads, encoding=encoding)
    except OSError as exc:
        raise error(f"{p}: cannot read it ({exc.strerror or exc})") from None


def check_out_dir(path: str | os.PathLike, *, what: str = "output folder", error: type[Exception] = ConfigError,
                  create: bool = True) -> Path:
    """``path`` as a folder this process can write in, created with its parents when missing
    (``create=False``: nothing is created; a missing folder is judged by the nearest folder
    above it that exists); ``error`` in one line when it (or that folder) is a file, or cannot
    be created or written."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise error(f"{p} is a file, not a folder (the {what})")
    if not create and not p.exists():
        above = p.parent
        while not above.exists() and above != above.parent:
            above = above.parent
        if not above.is_dir():
            raise error(f"{above} is a file, not a folder (on the way to the {what} {p})")
        _probe(above, f"folder {above} (where the {what} {p} would be created)", error)
        return p
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise error(f"cannot create the {what} {p}: {exc.strerror or exc}") from None
    _probe(p, f"{what} {p}", error)
    return p


def _probe(folder: Path, label: str, error: type[Exception]) -> None:
    """A real write in ``folder``: permissions, a read-only file system, root's exceptions
    (``os.access`` says yes to root)."""
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".atomgraph-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise error(f"the {label} is not writable ({exc.strerror or exc})") from None


def check_out_file(path: str | os.PathLike, *, what: str = "output file", error: type[Exception] = ConfigError) -> Path:
    """``path`` as a file this process can write (its folder created when missing)."""
    p = Path(path)
    if p.is_dir():
        raise error(f"{p} is a directory, not a file (the {what})")
    check_out_dir(p.parent if str(p.parent) else Path("."), what=f"folder of the {what}", error=error)
    if p.exists() and not os.access(p, os.W_OK):
        raise error(f"the {what} {p} is not writable")
    return p


__all__ = ["ENCODING_HINT", "UTF8_ONLY", "check_encoding", "check_file", "check_out_dir", "check_out_file", "decode_line",
           "iter_json_lines", "iter_json_objects", "loads_strict", "read_bytes", "read_json", "read_text"]
