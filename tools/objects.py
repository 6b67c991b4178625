"""Data objects for object retrieval (ARM, §3.1 and Appendix A of the ARM paper), and questions.

An *object* is one passage or one table, read from ``objects.jsonl``::

    {"id": "...", "kind": "passage", "title": "...", "text": "..."}
    {"id": "...", "kind": "table", "title": "...", "text": "...", "columns": ["a", "b"],
     "rows": [["1", "x"], ...]?, "database": "..."?}

A question, read from ``questions.jsonl``::

    {"id": "...", "question": "...", "gold_ids": ["..."], "answers": [...]?, "keywords": [...]?}

Loaders validate every line and raise :class:`~atomgraph.errors.ParseError` reading
``FILE:LINE: what is wrong``. :func:`chunk_object` serialises an object into chunks the way
Appendix A describes (title + content; a table keeps its header in every chunk of rows).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from atomgraph.errors import ParseError
from atomgraph.jsonl import iter_json_objects, read_text

KINDS = ("passage", "table")


@dataclass(frozen=True)
class DataObject:
    """One passage or table of the data collection."""

    id: str
    kind: str
    title: str
    text: str
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    database: str | None = None
    # whether the object is a table (``kind == "table"``): set once, when the object is made
    is_table: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_table", self.kind == "table")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "title": self.title, "text": self.text}
        if self.is_table:
            out["columns"] = list(self.columns)
            if self.rows:
                out["rows"] = [list(r) for r in self.rows]
            if self.database is not None:
                out["database"] = self.database
        return out


@dataclass(frozen=True)
class Question:
    """A retrieval question with its gold object ids and, optionally, replayable keywords."""

    id: str
    question: str
    gold_ids: tuple[str, ...]
    answers: tuple[str, ...] = ()
    keywords: tuple[str, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Chunk:
    """A serialised piece of an object (Appendix A): what is embedded."""

    object_id: str
    index: int
    text: str


# --- validation ----------------------------------------------------------------------------

def _str_field(obj: dict, key: str, where: str, *, required: bool = True, allow_empty: bool = False) -> str | None:
    if key not in obj or obj[key] is None:
        if required:
            raise ParseError(f"{where}: missing field {key!r}")
        return None
    value = obj[key]
    if not isinstance(value, str):
        raise ParseError(f"{where}: field {key!r} must be a string, found {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ParseError(f"{where}: field {key!r} is empty")
    return value


def _str_list(obj: dict, key: str, where: str, *, required: bool) -> tuple[str, ...] | None:
    if key not in obj or obj[key] is None:
        if required:
            raise ParseError(f"{where}: missing field {key!r}")
        return None
    value = obj[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ParseError(f"{where}: field {key!r} must be a list of strings")
    return tuple(value)


def _cell(v: Any) -> str:
    return "" if v is None else str(v)


def parse_object(obj: dict, where: str) -> DataObject:
    """Validate one JSON object as a :class:`DataObject` (``where`` prefixes errors)."""
    oid = _str_field(obj, "id", where)
    kind = _str_field(obj, "kind", where)
    if kind not in KINDS:
        raise ParseError(f"{where}: field 'kind' must be 'passage' or 'table'")  # the file's value is not quoted
    title = _str_field(obj, "title", where, allow_empty=True) or ""
    text = _str_field(obj, "text", where, required=kind == "passage", allow_empty=kind == "table") or ""
    if kind == "passage":
        if not title.strip() and not text.strip():
            raise ParseError(f"{where}: passage {oid!r} has neither title nor text")
        return DataObject(oid, kind, title, text)
    columns = _str_list(obj, "columns", where, required=True)
    if not columns:
        raise ParseError(f"{where}: table {oid!r} has no columns")
    rows: list[tuple[str, ...]] = []
    raw_rows = obj.get("rows")
    if raw_rows is not None:
        if not isinstance(raw_rows, list):
            raise ParseError(f"{where}: field 'rows' must be a list of rows")
        for r, row in enumerate(raw_rows):
            if isinstance(row, dict):
                row = [row.get(c) for c in columns]
            if not isinstance(row, list) or len(row) != len(columns):
                raise ParseError(
                    f"{where}: row {r} of table {oid!r} must be a list of {len(columns)} cells "
                    "(or an object keyed by column name)"
                )
            rows.append(tuple(_cell(v) for v in row))
    database = _str_field(obj, "database", where, required=False, allow_empty=True)
    return DataObject(oid, kind, title, text, tuple(columns), tuple(rows), database)


def parse_question(obj: dict, where: str) -> Question:
    """Validate one JSON object as a :class:`Question`."""
    qid = obj.get("id")
    if isinstance(qid, int) and not isinstance(qid, bool):
        qid = str(qid)
    if not isinstance(qid, str) or not qid.strip():
        raise ParseError(f"{where}: field 'id' must be a non-empty string")
    question = _str_field(obj, "question", where)
    gold = _str_list(obj, "gold_ids", where, required=True)
    answers = obj.get("answers")
    if answers is None:
        answers_t: tuple[str, ...] = ()
    elif isinstance(answers, list):
        answers_t = tuple(str(a) for a in answers)
    elif isinstance(answers, str):
        answers_t = (answers,)
    else:
        raise ParseError(f"{where}: field 'answers' must be a list of strings")
    keywords = _str_list(obj, "keywords", where, required=False)
    known = {"id", "question", "gold_ids", "answers", "keywords"}
    return Question(qid, question, gold, answers_t, keywords, {k: v for k, v in obj.items() if k not in known})


def _read_lines(path: str | Path, encoding: str = "utf-8") -> tuple[Path, list[str]]:
    """The lines of a file, read strictly (:mod:`atomgraph.jsonl`: a byte that is not
    ``encoding`` is an error naming the file and line)."""
    p = Path(path)
    return p, read_text(p, encoding=encoding).splitlines()


def load_objects(path: str | Path, encoding: str = "utf-8") -> list[DataObject]:
    """All objects of an ``objects.jsonl`` file; ids must be unique."""
    p, lines = _read_lines(path, encoding)
    out: list[DataObject] = []
    seen: dict[str, int] = {}
    for n, obj in iter_json_objects(lines, str(p)):
        where = f"{p}:{n}"
        o = parse_object(obj, where)
        if o.id in seen:
            raise ParseError(f"{where}: duplicate object id {o.id!r} (first on line {seen[o.id]})")
        seen[o.id] = n
        out.append(o)
    if not out:
        raise ParseError(f"{p}: no objects (the file is empty)")
    return out


def load_questions(path: str | Path, *, object_ids: Iterable[str] | None = None,
                   encoding: str = "utf-8") -> list[Question]:
    """All questions of a ``questions.jsonl`` file. With ``object_ids``, every gold id must be
    one of them (a gold id missing from the collection is a data error, not a miss)."""
    p, lines = _read_lines(path, encoding)
    known = set(object_ids) if object_ids is not None else None
    out: list[Question] = []
    for n, obj in iter_json_objects(lines, str(p)):
        q = parse_question(obj, f"{p}:{n}")
        if known is not None:
            missing = [g for g in q.gold_ids if g not in known]
            if missing:
                raise ParseError(f"{p}:{n}: gold id(s) not in the objects file: {', '.join(map(repr, missing[:3]))}")
        out.append(q)
    if not out:
        raise ParseError(f"{p}: no questions (the file is empty)")
    return out


# --- serialisation and chunking (Appendix A) -----------------------------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def split_identifier(name: str) -> str:
    """``"singer_in_concert"`` / ``"SingerInConcert"`` → ``"singer in concert"``."""
    return " ".join(_CAMEL.sub(" ", name).replace("_", " ").replace(".", " ").split()).lower()


def _table_header(obj: DataObject) -> str:
    lines = [f"Table name: {obj.title}"]
    if obj.text.strip():
        lines.append(f"Table description: {obj.text}")
    lines.append("Columns: " + ", ".join(f"{c} ({split_identifier(c)})" if split_identifier(c) != c else c for c in obj.columns))
    return "\n".join(lines)


def serialize(obj: DataObject, rows: Iterable[tuple[str, ...]] | None = None) -> str:
    """The text of an object as Appendix A serialises it (a table with ``rows``, default all)."""
    if not obj.is_table:
        return f"Document name: {obj.title}\nDocument content: {obj.text}"
    rows = list(obj.rows if rows is None else rows)
    if not rows:
        return _table_header(obj)
    body = "\n".join(" | ".join(r) for r in rows)
    return f"{_table_header(obj)}\nTable content:\n{' | '.join(obj.columns)}\n{body}"


def chunk_object(obj: DataObject, *, rows_per_chunk: int = 20, passage_chars: int = 2000) -> list[Chunk]:
    """Chunks of one object (§3.1): tables in groups of ``rows_per_chunk`` rows, each chunk
    keeping the table name, description and header; long passages split on sentence and
    word boundaries (LangChain's recursive splitter), each chunk prefixed with the title."""
    if obj.is_table:
        if len(obj.rows) <= rows_per_chunk:
            return [Chunk(obj.id, 0, serialize(obj))]
        return [
            Chunk(obj.id, i, serialize(obj, obj.rows[s : s + rows_per_chunk]))
            for i, s in enumerate(range(0, len(obj.rows), rows_per_chunk))
        ]
    if len(obj.text) <= passage_chars:
        return [Chunk(obj.id, 0, serialize(obj))]
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=passage_chars, chunk_overlap=passage_chars // 10)
    return [
        Chunk(obj.id, i, f"Document name: {obj.title}\nDocument content: {part}")
        for i, part in enumerate(splitter.split_text(obj.text))
    ]
