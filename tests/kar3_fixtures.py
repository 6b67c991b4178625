"""Shared by the KAR³ tests: the demo pack atomized into a real Chroma atom index by the
scripted atomizer (each sentence of a chunk becomes an atomic question)."""

from __future__ import annotations

from pathlib import Path

from atomgraph.demo_pack import pack_dir
from atomgraph.graphs.kar3_index import build_kar3_index_graph
from atomgraph.settings import Settings
from atomgraph.testing import kar3_scripted_model
from atomgraph.tools.atom_source import AtomSource

PASSAGES = pack_dir() / "passages.jsonl"
QUESTION = "In which city did Werner Heisenberg's doctoral advisor die?"
PLAN = {QUESTION: [["Who was the doctoral advisor of Werner Heisenberg?"], ["In which city did Arnold Sommerfeld die?"]]}
COLLECTION = "demo"


def settings_at(folder: Path, **kw) -> Settings:
    return Settings(cache=False, chroma_path=str(folder), **kw)


def build_demo_index(folder: Path, collection: str = COLLECTION, limit: int | None = None, model=None) -> dict:
    """Atomize the demo pack into ``folder`` (``model``: default the sentence atomizer);
    returns the indexing graph's output."""
    settings = settings_at(folder)
    graph = build_kar3_index_graph(model=model or kar3_scripted_model(), settings=settings)
    context = {"limit": limit} if limit is not None else {}
    # The scripted atomizer writes each sentence as a line and a question; these fixtures index the questions
    # only (the `atom_question_filter` switch), as the loop tests were written for. The authors' keep-every-line
    # default is tested on its own (tests/test_kar3_index.py).
    context["atom_question_filter"] = True
    return graph.invoke({"inputs": [str(PASSAGES)], "collection": collection}, context=context)


def demo_source(folder: Path, collection: str = COLLECTION) -> AtomSource:
    return AtomSource(collection, settings=settings_at(folder))
