"""Readers for passage corpora: each yields :class:`Passage` ``(title, text)`` records.

Formats (``detect_format`` picks one from the extension and first bytes):

- ``jsonl``: one ``{"title": ..., "text": ...}`` object per line (``text`` may be a list of
  sentences);
- ``hipporag``: one JSON document, either a list of ``{"title", "text"}`` objects
  (``musique_train_corpus.json``, ``2wikimultihopqa_corpus.json``) or a map
  ``{title: [sentences]}`` (``hotpotqa_train_corpus.json``);
- ``hotpot-bz2``: the HotpotQA Wikipedia abstracts dump, ``.bz2`` files of JSON lines with
  ``title`` and ``text`` (a list of sentences), or a directory tree of such files;
- ``tsv``: DPR/Atlas-style ``id<TAB>text<TAB>title`` with a header line.

Input is read strictly: text that is not in the given encoding (UTF-8 unless told
otherwise), a line that is not JSON (a 5,000-digit number and nesting deeper than Python can
parse included) or a record of the wrong shape raises :class:`~atomgraph.errors.ParseError`
naming the file and line; so does a file that is no regular file (a FIFO, a device), a file
read whole over ``ATOMGRAPH_MAX_FILE_MB``, a line over ``ATOMGRAPH_MAX_LINE_MB``, a non-finite
number or a lone surrogate (:mod:`atomgraph.jsonl`). Records that hold no text are skipped and counted in ``skips``
(a Counter, reason -> records) where the caller passes one.
"""

from __future__ import annotations

import bz2
import csv
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from atomgraph.errors import ConfigError, ParseError
from atomgraph.jsonl import (bounded_lines, check_encoding, check_file, decode_line, loads_strict,  # the shared strict reading
                             read_json)

FORMATS = ("jsonl", "hipporag", "hotpot-bz2", "tsv")


@dataclass(frozen=True)
class Passage:
    title: str
    text: str
    origin: str = ""  # "file:line" (or "file#index") it was read from


def join_sentences(value: Any) -> str:
    """A passage text from a string or a (nested) list of sentences."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple)):
        parts = (join_sentences(v) for v in value)
        return " ".join(p for p in parts if p)
    raise TypeError(f"expected text or a list of sentences, got {type(value).__name__}")


def _record(obj: Any, where: str) -> Passage | None:
    if not isinstance(obj, dict):
        raise ParseError(f"{where}: expected an object with 'title' and 'text', got {type(obj).__name__}")
    if "text" not in obj:
        raise ParseError(f"{where}: missing key 'text' (the object has {len(obj)} other key(s))")  # no content quoted
    try:
        text = join_sentences(obj["text"])
    except TypeError as exc:
        raise ParseError(f"{where}: field 'text': {exc}") from None
    title = obj.get("title") or ""
    if not isinstance(title, str):
        raise ParseError(f"{where}: field 'title' must be a string, got {type(title).__name__}")
    return Passage(title.strip(), text, where) if text else None


def _kept(p: Passage | None, skips: Counter | None) -> Passage | None:
    if p is None and skips is not None:
        skips["no text"] += 1
    return p


def _json_lines(lines, name: str, encoding: str = "utf-8", skips: Counter | None = None) -> Iterator[Passage]:
    for lineno, raw in enumerate(lines, 1):
        where = f"{name}:{lineno}"
        line = decode_line(raw, where, encoding)
        if not line.strip():
            continue
        p = _kept(_record(loads_strict(line, where), where), skips)
        if p:
            yield p


def read_jsonl(path: Path, encoding: str = "utf-8", skips: Counter | None = None) -> Iterator[Passage]:
    with open(check_file(path, what="corpus file"), "rb") as f:
        yield from _json_lines(bounded_lines(f, str(path)), str(path), encoding, skips)


def read_hipporag(path: Path, encoding: str = "utf-8", skips: Counter | None = None) -> Iterator[Passage]:
    data = read_json(path, encoding=encoding, what="corpus file")  # bounded, strict, errors name the line
    if isinstance(data, list):
        for i, obj in enumerate(data):
            p = _kept(_record(obj, f"{path}#{i}"), skips)
            if p:
                yield p
    elif isinstance(data, dict):
        for i, (title, sentences) in enumerate(data.items()):
            p = _kept(_record({"title": title, "text": sentences}, f"{path}#{i}"), skips)
            if p:
                yield p
    else:
        raise ParseError(f"{path}: expected a JSON list of {{title, text}} objects or a {{title: [sentences]}} map")


def _bz2_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.bz2") if p.is_file())
        if not files:
            raise ConfigError(f"{path}: directory holds no .bz2 files")
        return files
    return [path]


def read_hotpot_bz2(path: Path, encoding: str = "utf-8", skips: Counter | None = None) -> Iterator[Passage]:
    for file in _bz2_files(path):
        try:
            with bz2.open(check_file(file, what="corpus file"), "rb") as f:
                yield from _json_lines(bounded_lines(f, str(file)), str(file), encoding, skips)
        except (OSError, EOFError) as exc:
            raise ParseError(f"{file}: cannot decompress ({exc})") from None


def _decoded_lines(f, name: str, encoding: str) -> Iterator[str]:
    for lineno, raw in enumerate(bounded_lines(f, name), 1):
        yield decode_line(raw, f"{name}:{lineno}", encoding)


def read_tsv(path: Path, encoding: str = "utf-8", skips: Counter | None = None) -> Iterator[Passage]:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    with open(check_file(path, what="corpus file"), "rb") as f:
        reader = csv.reader(_decoded_lines(f, str(path), encoding), delimiter="\t")
        try:
            header = [h.strip().lower() for h in next(reader)]
        except StopIteration:
            return
        if "text" not in header:
            raise ParseError(f"{path}:1: TSV header must name a 'text' column (id<TAB>text<TAB>title); "
                             f"it names {len(header)} column(s), none of them 'text'")  # no content quoted
        ti = header.index("text")
        hi = header.index("title") if "title" in header else None
        for row in reader:
            lineno = reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) < len(header):
                raise ParseError(f"{path}:{lineno}: expected {len(header)} tab-separated columns, got {len(row)}")
            text = row[ti].strip()
            if text:
                yield Passage(row[hi].strip() if hi is not None else "", text, f"{path}:{lineno}")
            elif skips is not None:
                skips["no text"] += 1


READERS: dict[str, Callable[..., Iterator[Passage]]] = {
    "jsonl": read_jsonl,
    "hipporag": read_hipporag,
    "hotpot-bz2": read_hotpot_bz2,
    "tsv": read_tsv,
}


def detect_format(path: Path) -> str:
    """The format of ``path`` from its extension, else its first non-blank character/line."""
    if path.is_dir():
        return "hotpot-bz2"
    suffix = path.suffix.lower()
    if suffix == ".bz2":
        return "hotpot-bz2"
    if suffix in {".jsonl", ".ndjson"}:
        return "jsonl"
    if suffix in {".tsv", ".tab"}:
        return "tsv"
    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(65536)
    first_line = next((ln for ln in head.splitlines() if ln.strip()), "")
    stripped = first_line.lstrip()
    if stripped.startswith("["):
        return "hipporag"
    if stripped.startswith("{"):
        try:
            json.loads(first_line)
            return "jsonl"  # a whole object on the first line
        except json.JSONDecodeError:
            return "hipporag"
    if "\t" in first_line:
        return "tsv"
    raise ConfigError(f"{path}: cannot tell the corpus format; pass --format ({'|'.join(FORMATS)})")


def read_passages(path: str | Path, fmt: str = "auto", *, encoding: str = "utf-8",
                  skips: Counter | None = None) -> Iterator[Passage]:
    """Passages from ``path`` in format ``fmt`` (``auto`` detects it), decoded strictly as
    ``encoding``; records without text are counted in ``skips``."""
    check_encoding(encoding)
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or directory")
    if not path.is_dir():
        check_file(path, what="corpus file", error=ConfigError)  # a FIFO or a device: an error, not a hang
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt not in READERS:
        raise ConfigError(f"unknown corpus format {fmt!r}; choose one of auto, {', '.join(FORMATS)}")
    if path.is_dir() and fmt != "hotpot-bz2":
        raise ConfigError(f"{path} is a directory; only --format hotpot-bz2 reads directories")
    return READERS[fmt](path, encoding, skips)


def count_hint(path: str | Path, fmt: str = "auto") -> int | None:
    """A cheap upper bound on the number of records (for a progress total), or None."""
    path = Path(path)
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt in {"jsonl", "tsv"} and path.is_file():
        n = 0
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                n += block.count(b"\n")
        return max(0, n - (1 if fmt == "tsv" else 0)) or None
    if fmt == "hipporag" and path.is_file() and path.stat().st_size < 512 << 20:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (ValueError, OSError):
            return None  # the reader reports the problem with its line number
        return len(data) if isinstance(data, (list, dict)) else None
    return None
