"""The offline demo knowledge pack shipped inside the package (``atomgraph/demo/``).

Physicists of the early quantum era, their families, universities, cities and prizes,
written by the atomgraph authors (CC0): ``passages.jsonl`` (Wikipedia-style passages for
the vector store), ``kg.ttl`` (Wikidata-shaped Turtle for an in-process SPARQL store) and
``questions.jsonl`` (multi-hop demo questions with gold answers). See ``demo/README.md``.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

from atomgraph.errors import AtomgraphError
from atomgraph.jsonl import iter_json_objects

PASSAGES_FILE = "passages.jsonl"
QUESTIONS_FILE = "questions.jsonl"
KG_FILE = "kg.ttl"


def pack_dir() -> Path:
    """Folder holding the pack's files (inside the installed package)."""
    folder = resources.files("atomgraph").joinpath("demo")
    path = Path(str(folder))
    if not path.is_dir():
        raise AtomgraphError(
            f"the demo knowledge pack is missing ({path}); reinstall atomgraph with its package data"
        )
    return path


def _file(name: str) -> Path:
    path = pack_dir() / name
    if not path.is_file():
        raise AtomgraphError(f"the demo knowledge pack has no {name} (looked in {path.parent})")
    return path


def kg_path() -> Path:
    """Path of the pack's Wikidata-shaped Turtle file."""
    return _file(KG_FILE)


def passage_id(title: str, text: str) -> str:
    """Stable id of a passage, derived from its content (same passage, same id)."""
    digest = hashlib.sha1(f"{title}\n{text}".encode("utf-8")).hexdigest()[:16]
    return f"demo-{digest}"


def _read_jsonl(name: str, required: tuple[str, ...]) -> list[dict]:
    path = _file(name)
    rows: list[dict] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, row in iter_json_objects(fh, str(path), error=AtomgraphError):
            missing = [key for key in required if key not in row]
            if missing:
                raise AtomgraphError(f"{path}:{lineno}: missing {', '.join(missing)}")
            rows.append(row)
    return rows


def load_passages() -> list[dict]:
    """The pack's passages as ``{"title", "text", "id"}`` dicts, in file order; ``id`` is
    :func:`passage_id` of the content."""
    rows = _read_jsonl(PASSAGES_FILE, ("title", "text"))
    for row in rows:
        row.setdefault("id", passage_id(row["title"], row["text"]))
    return rows


def load_questions() -> list[dict]:
    """The demo questions: ``{"id", "question", "answers", "type", "explanation"}``."""
    return _read_jsonl(QUESTIONS_FILE, ("id", "question", "answers", "type"))
