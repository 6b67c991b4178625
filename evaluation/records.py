"""Prediction files: one JSON object per line, appended safely and read back with repair.

A line is written with a single ``write`` on an ``O_APPEND`` descriptor, then fsync'ed, so
a killed process leaves at most one incomplete last line; :func:`read_records` with
``repair=True`` cuts that line off so a rerun continues from the last complete record.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from atomgraph.evaluation.datasets import DatasetError
from atomgraph.jsonl import ENCODING_HINT, UTF8_ONLY, decode_line, loads_strict, read_bytes


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


def safe_json(value: Any, **kwargs: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)`` that is always valid UTF-8: a lone surrogate
    (``"\\ud800"``, valid in JSON, not encodable in UTF-8) is written as its JSON escape."""
    text = json.dumps(value, ensure_ascii=False, **kwargs)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


class RecordWriter:
    """Appends one JSON record per line; each line durable before :meth:`write` returns (or,
    on an event loop, :meth:`append` then ``await`` :meth:`synced`)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._syncer: ThreadPoolExecutor | None = None

    def append(self, record: dict) -> None:
        """The record's line appended (one ``write``: in the file for every reader, and past a
        killed process, from here on); :meth:`synced` makes it durable."""
        os.write(self._fd, (safe_json(jsonable(record)) + "\n").encode("utf-8"))

    def write(self, record: dict) -> None:
        self.append(record)
        os.fsync(self._fd)

    async def synced(self) -> None:
        """``fsync`` of the lines appended so far, from an event loop: it waits in a thread
        (milliseconds on a disk), not on the loop, and runs to its end if the caller is cancelled."""
        if self._syncer is None:
            self._syncer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="records-fsync")
        await asyncio.shield(asyncio.get_running_loop().run_in_executor(self._syncer, os.fsync, self._fd))

    def close(self) -> None:
        if self._syncer is not None:  # every fsync started ends before the descriptor closes
            self._syncer.shutdown(wait=True)
            self._syncer = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


RUN_RECORD_FIELDS: dict[str, type | tuple[type, ...]] = {
    "id": (str, int), "predicted": str, "gold": list, "metrics": dict, "usage": dict, "method": str,
}


class RecordError(DatasetError):
    """A record file that cannot be used as it is; the message names the file and the line."""


# The full schema of a run record, nested fields included: each known field, *when present*,
# must have its type (a field RUN_RECORD_FIELDS requires must also be present). A number is a
# finite int or float, never a bool; a count is a whole number >= 0.
_NUM, _COUNT, _STR, _OPT_STR = "number", "count", "string", "string or null"
RECORD_SCHEMA: dict[str, Any] = {
    "id": "id", "question": _STR, "question_type": _OPT_STR, "predicted": _STR, "answers": [_STR],
    "gold": [_STR], "gold_titles": [_STR], "gold_ids": ["id"], "retrieved_titles": [_STR], "retrieved_ids": ["id"],
    "metrics": {"em": _NUM, "f1": _NUM, "cover_em": _NUM,
                "retrieval": ("optional", {"*": _NUM}), "retrieval_ids": ("optional", {"*": _NUM})},
    "usage": {"llm_calls": _COUNT, "prompt_tokens": _COUNT, "completion_tokens": _COUNT, "retriever_calls": _COUNT,
              "llm_errors": _COUNT, "retriever_errors": _COUNT, "cost_usd": _NUM, "cached_calls": _COUNT,
              "llm_calls_by_role": {"*": _COUNT}, "retriever_calls_by_source": {"*": _COUNT},
              "retriever_failures_by_source": {"*": _COUNT}, "tokens_by_role": {"*": [_COUNT]}, "tokens_by_model": {"*": [_COUNT]}, "unpriced_models": [_STR],
              "usage_flagged": _COUNT},
    "latency_s": _NUM, "stopped": _OPT_STR, "error": _OPT_STR, "fallbacks": [dict], "trace": dict,
    "method": _STR, "dataset": _STR, "finished_at": _STR,
}


def _type_problem(value: Any, spec: Any, path: str) -> str | None:
    """Why ``value`` at ``path`` does not fit ``spec`` (None when it does)."""
    import math

    def bad(expected: str) -> str:
        shown = json.dumps(value, ensure_ascii=True, default=str)
        return f"field {path!r} is {shown[:60]} (a {type(value).__name__}), not {expected}"

    if isinstance(spec, tuple) and spec and spec[0] == "optional":
        return None if value is None else _type_problem(value, spec[1], path)
    if spec == "id":
        return None if isinstance(value, (str, int)) and not isinstance(value, bool) else bad("a string or an integer")
    if spec == _STR:
        return None if isinstance(value, str) else bad("a string")
    if spec == _OPT_STR:
        return None if value is None or isinstance(value, str) else bad("a string or null")
    if spec in (_NUM, _COUNT):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return bad("a number")
        if spec == _COUNT and (value < 0 or value != int(value)):
            return bad("a whole number >= 0")
        return None
    if spec is dict:
        return None if isinstance(value, dict) else bad("an object")
    if isinstance(spec, list):
        if not isinstance(value, list):
            return bad("a list")
        for i, item in enumerate(value):
            why = _type_problem(item, spec[0], f"{path}[{i}]")
            if why:
                return why
        return None
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return bad("an object")
        for k, v in value.items():
            sub = spec.get(k, spec.get("*"))
            if sub is not None:
                why = _type_problem(v, sub, f"{path}.{k}")
                if why:
                    return why
        return None
    return None


def _key(rec: dict) -> str | None:
    for k in ("id", "index", "_id"):
        if rec.get(k) is not None:
            return str(rec[k])
    return None


def _example_key(rec: dict) -> tuple[str, str | None] | None:
    """What names one example in a predictions file: its id *and* its question (whitespace
    collapsed). The released BlendQA file joins three sub-sets each numbered from 0, so one
    index holds three different questions; the same id with the same question is a duplicate."""
    key = _key(rec)
    if key is None:
        return None
    question = rec.get("question")
    return key, " ".join(question.split()) if isinstance(question, str) else None


def check_record(rec: dict, where: str, *, method: str | None = None,
                 fields: tuple[str, ...] = tuple(RUN_RECORD_FIELDS)) -> None:
    """RecordError unless ``rec`` is a whole run record (every field of :data:`RUN_RECORD_FIELDS`,
    or of ``fields``, with its type, a numeric F1) of ``method`` (when given and recorded), and
    every field it holds fits :data:`RECORD_SCHEMA` (nested fields too: ``usage.cost_usd: "lots"``
    is refused, naming the field)."""
    missing = [k for k in fields if k not in rec]
    if missing:
        stub = " (a stub: its prediction is lost)" if "id" in rec and (len(missing) >= 3 or set(rec) <= {"id"}) else ""
        raise RecordError(f"{where}: the record lacks {', '.join(missing)}{stub}")
    for k in fields:
        t = RUN_RECORD_FIELDS[k]
        if not isinstance(rec[k], t) or isinstance(rec[k], bool):
            raise RecordError(f"{where}: field {k!r} is a {type(rec[k]).__name__}, not the expected type")
    for k, spec in RECORD_SCHEMA.items():  # every known field present, nested ones too
        if k in rec:
            why = _type_problem(rec[k], spec, k)
            if why:
                raise RecordError(f"{where}: {why}")
    f1 = rec["metrics"].get("f1")
    if not isinstance(f1, (int, float)) or isinstance(f1, bool):
        raise RecordError(f"{where}: the record has no numeric metrics.f1")
    if method is not None and "method" in rec and rec["method"] != method:
        raise RecordError(f"{where}: a record of method {rec['method']!r} in a run of {method!r}")


def _cut_off(raw: bytes, encoding: str) -> bool:
    """Whether an unreadable line is a record cut off mid-write (a prefix of one: the text or the
    JSON ends too early), rather than a bad record (a wrong byte, a 5,000-digit number, deep
    nesting, a stray character)."""
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        return exc.reason == "unexpected end of data" and exc.end >= len(raw)
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip())
    except (ValueError, RecursionError):
        return False
    return False


def read_records(path: str | os.PathLike, *, repair: bool = False, validate: str | None = None,
                 method: str | None = None, encoding: str | None = None, skips: Counter | None = None) -> list[dict]:
    """The records of a JSON-lines file, read strictly (:mod:`atomgraph.jsonl`).

    A *last* line cut off mid-write (a run killed while writing it) is dropped, counted in
    ``skips`` (``"cut-off last line"``), and with ``repair=True`` cut from the file. Any other
    unreadable line — elsewhere, or a last line that is whole but bad (a byte that is not
    ``encoding``, a 5,000-digit number, deep nesting) — is an error naming the line. ``encoding``:
    a user's file read with ``--encoding`` (None: a file atomgraph wrote, UTF-8).

    ``validate="run"``: every record must be a whole run record (:func:`check_record`, of
    ``method`` when given) and no example may appear twice; ``validate="report"``: the same
    with only ``id`` and ``metrics`` required; ``validate="predictions"``: every
    record needs ``predicted`` and ``gold``, and no example may repeat, an example being its id
    (``id``/``index``) *and* its question: a repeated id with another question is another example
    (the released BlendQA file numbers each of its three sub-sets from 0). A failed
    check raises :class:`RecordError` naming the file and line, and nothing is rewritten.
    """
    path = Path(path)
    if not path.exists():
        return []
    # records atomgraph wrote are UTF-8; a file of the user's may say its own --encoding
    hint = UTF8_ONLY if encoding is None else ENCODING_HINT
    encoding = encoding or "utf-8"
    data = read_bytes(path, what="records file", error=RecordError)
    lines = data.split(b"\n")
    records: list[dict] = []
    seen: dict[str, int] = {}
    good_end = 0  # byte offset just past the last complete, valid line
    offset = 0
    for lineno, raw in enumerate(lines, 1):
        is_last = lineno == len(lines)
        end = offset + len(raw) + (0 if is_last else 1)
        if raw.strip():
            at = f"{path}: line {lineno}"
            try:
                rec = loads_strict(decode_line(raw, at, encoding, error=RecordError, hint=hint), at, error=RecordError,
                                   surrogates=validate != "predictions")  # a run's own records keep text as it came
                if not isinstance(rec, dict):
                    raise RecordError(f"{at}: not a JSON record (a {type(rec).__name__}, not an object)")
            except RecordError:
                if is_last and _cut_off(raw, encoding):  # no newline after it: the write never finished
                    if skips is not None:
                        skips["cut-off last line"] += 1
                    break
                raise
            where = at
            if validate == "run":
                check_record(rec, where, method=method)
            elif validate == "report":  # what a report reads: a scored record of this run's method
                check_record(rec, where, method=method, fields=("id", "metrics"))
            elif validate == "predictions" and ("predicted" not in rec or "gold" not in rec):
                raise RecordError(f"{where}: the record needs 'predicted' and 'gold' fields")
            if validate:
                # a run's records are keyed by the dataset's (unique) ids; a predictions file to
                # score by id and question (a released file may number its sub-sets each from 0)
                key = _example_key(rec) if validate == "predictions" else _key(rec)
                if key is not None and key in seen:
                    name = key[0] if isinstance(key, tuple) else key
                    same = " with the same question" if isinstance(key, tuple) and key[1] is not None else ""
                    raise RecordError(f"{where}: example {name!r} again{same} (first on line {seen[key]}); "
                                      "a duplicate would be counted twice")
                if key is not None:
                    seen[key] = lineno
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
