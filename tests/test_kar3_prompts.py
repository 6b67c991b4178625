"""KAR³'s stage parsers: tolerant of real replies, ParseError on unreadable ones."""

from __future__ import annotations

import pytest

from atomgraph.errors import ParseError
from atomgraph.prompts.kar3.stages import STAGES, read_answer, read_atomic_questions, read_proposal, read_selection


def test_stages_and_roles():
    assert {n: s.role for n, s in STAGES.items()} == {"atomize": "atomizer", "propose": "proposer",
                                                       "select": "selector", "answer": "answerer"}
    assert all(s.schema is not None for s in STAGES.values())


def test_atomizer_replies():
    assert read_atomic_questions("Questions:\n1. Who founded Acme?\n- When was Acme founded?\n") == [
        "Who founded Acme?", "When was Acme founded?"]
    assert read_atomic_questions('{"questions": ["Who founded Acme?"]}') == ["Who founded Acme?"]
    for bad in ("", "   ", "Questions:", "ok"):
        with pytest.raises(ParseError):
            read_atomic_questions(bad)


def test_proposer_replies():
    fenced = '```json\n{"thinking": "need X", "sub_questions": ["Who is X?", "Where is Y?",]}\n```'
    assert read_proposal(fenced).questions == ["Who is X?", "Where is Y?"]
    assert read_proposal('{"thinking": "known", "sub_questions": []}').enough
    assert read_proposal("The context is enough to answer.").enough
    assert read_proposal("Sub-questions:\n1. Who is X?\n2. Where is Y?").questions == ["Who is X?", "Where is Y?"]
    for bad in ("", "lorem ipsum", "{}"):
        with pytest.raises(ParseError):
            read_proposal(bad)


def test_selector_replies():
    assert read_selection('{"thinking": "t", "question_idx": 3}').index == 3
    assert read_selection("{'thinking': 't', 'question_idx': '2'}").index == 2
    assert read_selection('{"question_idx": 0}').index is None
    assert read_selection('{"question_idx": null}').index is None
    assert read_selection("question_idx: 4").index == 4 and read_selection("2").index == 2
    assert read_selection("None of them helps.").index is None
    for bad in ("", "I would pick the one about Munich"):
        with pytest.raises(ParseError):
            read_selection(bad)


def test_answer_replies():
    assert read_answer('{"rationale": "r", "answer": "Munich"}') == "Munich"
    assert read_answer('Reasoning...\n```json\n{"answer": ["A", "B"], "rationale": ""}\n```') == "A, B"
    assert read_answer("So the answer is: Munich.") == "Munich"
    for bad in ("", '{"answer": ""}'):
        with pytest.raises(ParseError):
            read_answer(bad)
