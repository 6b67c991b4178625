"""Prediction files: one JSON object per line, appended safely and read back with repair.

A line is written with a single ``write`` on an ``O_APPEND`` descriptor, then fsync'ed, so
a killed process leaves at most one incomplete last line; :func:`read_records` with
``repair=True`` cuts that line off so a rerun continues from the last complete record.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from atomgraph.evaluation.datasets import DatasetError


def jsonable(value: Any) -> Any:
    """``value`` with pydantic models, tuples and sets turned into JSON values."""
    if isinstance(value, BaseModel):
        return jsonable(value.model_dump(mode="json"))
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


class RecordWriter:
    """Appends one JSON record per line; each line durable before :meth:`write` returns."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, record: dict) -> None:
        line = (json.dumps(jsonable(record), ensure_ascii=False) + "\n").encode("utf-8")
        os.write(self._fd, line)
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_records(path: str | os.PathLike, *, repair: bool = False) -> list[dict]:
    """The records of a JSON-lines file.

    An unreadable *last* line (a run killed mid-write) is dropped, and with ``repair=True``
    cut from the file. An unreadable line elsewhere is an error naming the line.
    """
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    records: list[dict] = []
    good_end = 0  # byte offset just past the last complete, valid line
    offset = 0
    for lineno, raw in enumerate(lines, 1):
        is_last = lineno == len(lines)
        end = offset + len(raw) + (0 if is_last else 1)
        if raw.strip():
            try:
                rec = json.loads(raw.decode("utf-8"))
                if not isinstance(rec, dict):
                    raise ValueError("not a JSON object")
            except (ValueError, UnicodeDecodeError) as exc:
                trailing = all(not x.strip() for x in lines[lineno:])
                if trailing:
                    break
                raise DatasetError(f"{path}: line {lineno}: not a JSON record ({exc})") from exc
            records.append(rec)
        good_end = end
        offset = end
    if repair and good_end < len(data):
        with open(path, "r+b") as fh:
            fh.truncate(good_end)
    elif repair and data and not data.endswith(b"\n"):
        with open(path, "ab") as fh:  # a complete last record missing its newline
            fh.write(b"\n")
    return records
