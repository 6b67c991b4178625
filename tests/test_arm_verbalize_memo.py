"""Drafts in words (``nodes/arm/self_verification.py``, Appendix C): each object's rows/sentences are encoded once per
index, not once per draft and question — and the verbalized drafts are what fresh encoding gives."""

from __future__ import annotations

from atomgraph.nodes.arm import self_verification
from atomgraph.nodes.arm.self_verification import verbalize_draft
from atomgraph.tools.arm_index import ArmIndex
from atomgraph.tools.objects import parse_object
from tests.arm_fixtures import OBJECTS

LONG = {"id": "p-long", "kind": "passage", "title": "Long page",
        "text": " ".join(f"Sentence number {i} mentions Hans Zimmer and film score {i}." for i in range(12))}


def test_unit_vectors_are_encoded_once_per_object(tmp_path, monkeypatch):
    index = ArmIndex.build([parse_object(o, "fixture") for o in [*OBJECTS, LONG]], cache_dir=tmp_path)
    ids = ["p-long", "p-zimmer", "concert_singer#sep#singer"]
    calls = []
    real = self_verification._encode
    monkeypatch.setattr(self_verification, "_encode", lambda idx, texts: calls.append(len(texts)) or real(idx, texts))
    first = verbalize_draft(index, ids, [], "Who composed the score?", 2)
    n_first = len(calls)
    assert n_first >= 1  # the long passage's sentences (more than n = 2) were encoded
    again = verbalize_draft(index, ids, [], "Who composed the score?", 2)
    other = verbalize_draft(index, ids[:1], [], "Where was the composer born?", 2)
    assert len(calls) == n_first  # nothing encoded again, for the same or another question
    assert again == first
    index.__dict__.pop("_verbalize_units")  # fresh encoding gives the same text
    assert verbalize_draft(index, ids[:1], [], "Where was the composer born?", 2) == other
    assert verbalize_draft(index, ids, [], "Who composed the score?", 2) == first
