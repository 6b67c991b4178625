"""The bundled local model (Gemma-3-270M, in process) through every registered method on one demo
question, at tiny output caps: no answer breaks the answer contract (prompts/stage.py).

The full check, 5 questions per method at the small caps, is ``python -m
benchmarks.check_local_contract`` (its numbers are in docs/guides/answer-contract.md); this is
its smallest size, kept under about two minutes on a CI machine.
"""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.check_local_contract import check


@pytest.mark.slow
def test_every_method_with_the_local_model_answers_within_the_contract(tmp_path):
    report = asyncio.run(check(sorted(_methods()), 1, "tiny", tmp_path))
    for method, r in report["methods"].items():
        assert r["crashed"] == 0, (method, r["per_question"])
        assert r["violations"] == 0, (method, [q["violations"] for q in r["per_question"]])
        for q in r["per_question"]:
            # every question ends answered, or with its reason recorded
            assert q["answer"] or q["error"], (method, q)


def _methods():
    """The methods atomgraph declares (``atomgraph.methods.METHODS``), not whatever other tests
    registered in this process (a deliberately exploding toy method, say)."""
    from atomgraph.methods import METHODS

    return [m.name for m in METHODS if m.kind == "qa"]
