"""Strict reading of the files a user hands the CLI (and the library): one place for every
command that reads JSON, JSON lines or text.

Every failure is one :class:`~atomgraph.errors.ParseError` (or the caller's own error class,
``error=``) whose message names the file and, where there is one, the line:

- a path that does not exist, is a directory, is no regular file (a FIFO, a device such as
  ``/dev/zero``, a socket: reading one could block forever or never end), or cannot be read
  (:func:`check_file`);
- a file larger than :func:`max_file_bytes` (read whole) or a line longer than
  :func:`max_line_bytes` (read line by line) — both configurable (``ATOMGRAPH_MAX_FILE_MB``,
  ``ATOMGRAPH_MAX_LINE_MB``, or the functions' ``max_bytes``/``max_line`` arguments); a file
  read line by line (a corpus) is bounded by ``ATOMGRAPH_MAX_STREAM_MB`` (default 64 GB);
- text that is not in the file's encoding (UTF-8 unless the caller passes another; the message
  says how: fix the file or pass ``--encoding``) — never replaced silently;
- a line (or document) that is not JSON, a number of more than 4,300 digits, nesting deeper
  than ``MAX_JSON_DEPTH`` (100) levels, a non-finite number (``NaN``, ``Infinity``, ``1e999999``) or a lone
  surrogate (``"\\ud800"``: valid JSON escapes, no text) (:func:`loads_strict`);
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
import math
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from atomgraph.errors import ConfigError, ParseError
from atomgraph.text import MAX_JSON_DEPTH, TooDeep, check_depth

ENCODING_HINT = "fix the file or pass its --encoding"
UTF8_ONLY = "fix the file: it must be UTF-8"  # for files no option can give another encoding (TOML, run records)


DEFAULT_MAX_FILE_MB = 1024  # a file read whole into memory
DEFAULT_MAX_LINE_MB = 64  # one line of a file read line by line
DEFAULT_MAX_STREAM_MB = 64 * 1024  # a file read line by line (a corpus): 64 GB


def _limit(env: str, default_mb: float) -> int:
    from atomgraph.environment import env_value

    value = env_value(env) or ""
    try:
        mb = float(value) if value else default_mb
    except ValueError:
        raise ConfigError(f"{env}={value!r} is not a number of megabytes") from None
    if not math.isfinite(mb) or mb <= 0:
        raise ConfigError(f"{env}={value!r} must be a positive number of megabytes")
    return int(mb * 1024 * 1024)


def max_file_bytes() -> int:
    """The most bytes a file read whole may hold: ``$ATOMGRAPH_MAX_FILE_MB`` megabytes (default 1024)."""
    return _limit("ATOMGRAPH_MAX_FILE_MB", DEFAULT_MAX_FILE_MB)


def max_line_bytes() -> int:
    """The most bytes one line of a file read line by line may hold: ``$ATOMGRAPH_MAX_LINE_MB`` (default 64)."""
    return _limit("ATOMGRAPH_MAX_LINE_MB", DEFAULT_MAX_LINE_MB)


def max_stream_bytes() -> int:
    """The most bytes a file read line by line may hold: ``$ATOMGRAPH_MAX_STREAM_MB`` (default 65536, 64 GB)."""
    return _limit("ATOMGRAPH_MAX_STREAM_MB", DEFAULT_MAX_STREAM_MB)


def _mb(n: int) -> str:
    return f"{n / 1024 / 1024:,.0f} MB" if n >= 1024 * 1024 else f"{n:,} bytes"


def check_encoding(encoding: str) -> str:
    """``encoding`` when Python knows it; ConfigError naming it otherwise."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ConfigError(f"unknown text encoding {encoding!r}") from None
    return encoding


def check_file(path: str | os.PathLike, *, what: str = "file", error: type[Exception] = ParseError) -> Path:
    """``path`` as a Path when it is a readable regular file; ``error`` saying what it is
    otherwise (no such file, a directory, a FIFO, a device or a socket, not readable)."""
    p = Path(path)
    try:
        if not p.exists():
            raise error(f"{p}: no such file" + (f" (the {what})" if what != "file" else ""))
        if p.is_dir():
            raise error(f"{p} is a directory, not a {what}")
        mode = p.stat().st_mode
        if not stat.S_ISREG(mode):
            kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
            raise error(f"{p} is {kind}, not a regular {what}: it could block or never end")
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


class _NotText(ValueError):
    pass


def _constant(name: str) -> Any:
    raise _NotText(f"a non-finite number ({name})")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotText(f"a number too large for a float ({len(text)} characters)")
    return value


def json_loads(text: str, **kwargs: Any) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and numbers that overflow to infinity."""
    return json.loads(text, parse_constant=_constant, parse_float=_finite, **kwargs)


# text that may hold a non-finite number or a surrogate escape (what a custom ``loads`` must be checked for)
_SUSPECT = re.compile(r"NaN|Infinity|[eE][+-]?\d{3,}|\d{300,}|\\u[dD][89a-fA-F]")


def _check_value(value: Any, depth: int = 0, surrogates: bool = False) -> None:
    """_NotText for a lone surrogate in any string (unless ``surrogates``), or a non-finite float, of a parsed value."""
    if isinstance(value, str):
        if surrogates:
            return
        for ch in value:
            if "\ud800" <= ch <= "\udfff":
                raise _NotText(f"a lone surrogate (\\u{ord(ch):04x}), not text")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise _NotText(f"a non-finite number ({value})")
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_value(k, depth + 1, surrogates)
            _check_value(v, depth + 1, surrogates)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _check_value(v, depth + 1, surrogates)


def loads_strict(text: str, where: str, *, error: type[Exception] = ParseError,
                 loads: Callable[[str], Any] | None = None, surrogates: bool = False) -> Any:
    """``loads(text)`` (default :func:`json_loads`) with every failure (bad JSON, a number of
    over 4,300 digits, nesting too deep, a non-finite number, a lone surrogate) as ``error``
    naming ``where``. ``surrogates=True`` lets lone surrogates through (files atomgraph wrote
    itself, which record a model's reply as it came, escaped)."""
    try:
        check_depth(text)
        value = (loads or json_loads)(text)
        if _SUSPECT.search(text):
            _check_value(value, surrogates=surrogates)
        return value
    except _NotText as exc:
        raise error(f"{where}: {exc}") from None
    except json.JSONDecodeError as exc:
        line = f" line {exc.lineno}," if exc.lineno > 1 else ""
        raise error(f"{where}: not valid JSON ({exc.msg} at{line} column {exc.colno})") from None
    except (RecursionError, TooDeep):
        raise error(f"{where}: JSON nested too deeply to read (at most {MAX_JSON_DEPTH} levels)") from None
    except ValueError as exc:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        raise error(f"{where}: unreadable JSON value ({str(exc)[:160]})") from None


def read_bytes(path: str | os.PathLike, *, what: str = "file", error: type[Exception] = ParseError,
               max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (default :func:`max_file_bytes`)."""
    p = check_file(path, what=what, error=error)
    limit = max_bytes or max_file_bytes()
    try:
        with open(p, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise error(f"{p}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise error(f"{p}: the {what} is larger than {_mb(limit)} (the limit: set ATOMGRAPH_MAX_FILE_MB to raise it)")
    return data


def bounded_lines(fh, where: str, *, error: type[Exception] = ParseError,
                  max_line: int | None = None) -> Iterator[bytes]:
    """The lines of a binary file object, each of at most ``max_line`` bytes (default
    :func:`max_line_bytes`); a longer line is ``error`` naming ``where`` and the line, read no
    further than the limit (a file of one endless line costs ``max_line`` bytes of memory)."""
    limit = max_line or max_line_bytes()
    total_limit = max_stream_bytes()
    lineno = total = 0
    while True:
        raw = fh.readline(limit + 1)
        if not raw:
            return
        lineno += 1
        total += len(raw)
        if total > total_limit:
            raise error(f"{where}:{lineno}: the file is larger than {_mb(total_limit)} (the limit: set "
                        "ATOMGRAPH_MAX_STREAM_MB to raise it)")
        if len(raw) > limit and not raw.endswith(b"\n"):
            raise error(f"{where}:{lineno}: a line longer than {_mb(limit)} (the limit: set ATOMGRAPH_MAX_LINE_MB to raise it)")
        yield raw


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
              error: type[Exception] = ParseError, loads: Callable[[str], Any] | None = None,
              hint: str = ENCODING_HINT) -> Any:
    """One JSON document, read strictly; errors name the file and line."""
    text = read_text(path, encoding=encoding, what=what, error=error, hint=hint)
    if not text.strip():
        raise error(f"{path}: the {what} is empty")
    try:
        value = (loads or json_loads)(text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    except (ValueError, RecursionError):
        return loads_strict(text, str(path), error=error, loads=loads)  # raises the error that says why
    if _SUSPECT.search(text):
        try:
            _check_value(value)
        except _NotText as exc:
            raise error(f"{path}: {exc}") from None
    return value


def iter_json_objects(
    lines: Iterable[str | bytes],
    where: str,
    *,
    error: type[Exception] = ParseError,
    loads: Callable[[str], Any] | None = None,
    encoding: str = "utf-8",
    hint: str = ENCODING_HINT,
    max_line: int | None = None,
) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for each non-blank line; a line that is not ``encoding`` text,
    not JSON, not a JSON object or longer than ``max_line`` bytes (default :func:`max_line_bytes`;
    characters for text lines) raises ``error("WHERE:N: ...")``."""
    limit = max_line or max_line_bytes()
    for lineno, raw in enumerate(lines, 1):
        at = f"{where}:{lineno}"
        if len(raw) > limit:
            raise error(f"{at}: a line longer than {_mb(limit)} (the limit: set ATOMGRAPH_MAX_LINE_MB to raise it)")
        line = decode_line(raw, at, encoding, error=error, hint=hint)
        if not line.strip():
            continue
        obj = loads_strict(line, at, error=error, loads=loads)
        if not isinstance(obj, dict):
            raise error(f"{at}: expected a JSON object, found {type(obj).__name__}")
        yield lineno, obj


def iter_json_lines(path: str | os.PathLike, *, encoding: str = "utf-8", what: str = "file",
                    error: type[Exception] = ParseError,
                    loads: Callable[[str], Any] | None = None) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for each non-blank line of a JSON-lines file, read strictly
    (see :func:`iter_json_objects`), each line bounded (:func:`bounded_lines`)."""
    check_encoding(encoding)
    p = check_file(path, what=what, error=error)
    try:
        with open(p, "rb") as fh:
            yield from iter_json_objects(bounded_lines(fh, str(p), error=error), str(p), error=error, loads=loads,
                                         encoding=encoding)
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


__all__ = ["DEFAULT_MAX_FILE_MB", "DEFAULT_MAX_LINE_MB", "ENCODING_HINT", "UTF8_ONLY", "bounded_lines", "check_encoding", "check_file", "check_out_dir", "check_out_file", "decode_line",
           "iter_json_lines", "iter_json_objects", "json_loads", "loads_strict", "max_file_bytes", "max_line_bytes", "max_stream_bytes", "read_bytes", "read_json", "read_text"]
