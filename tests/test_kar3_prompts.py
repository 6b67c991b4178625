"""KAR³'s stages: the authors' asks and field order, the readers (a pick only from its
field, a stop only on an empty list), the renderers, and the atom filter."""

from __future__ import annotations

import pytest

from atomgraph.errors import ParseError
from atomgraph.prompts.kar3.atomize import ATOMIZE_STAGE, filter_atoms, read_atomic_questions, render_atomize
from atomgraph.prompts.kar3.stages import (
    ANSWER_STAGE, PROPOSE_STAGE, SELECT_PARAGRAPH_STAGE, SELECT_STAGE, STAGES,
    read_answer, read_paragraph_selection, read_proposal, read_selection, render_answer, render_select,
    render_select_paragraph,
)
from atomgraph.state.kar3 import AtomHit


def hit(i: int, title: str = "", atom: str = "") -> AtomHit:
    return AtomHit(query="q", atom=atom or f"Atom {i}?", chunk_id=f"c{i}", title=title or f"T{i}", text=f"Text {i}.",
                   score=0.9)


def human(stage, variables) -> str:
    return stage.prompt.format_messages(**variables)[-1].content


def test_stages_and_roles():
    every = {"atomize": ATOMIZE_STAGE, **STAGES}  # the indexing graph's stage and the question path's
    assert {n: s.role for n, s in every.items()} == {"atomize": "atomizer", "propose": "proposer", "select": "selector",
                                                      "select_paragraph": "selector", "answer": "answerer"}
    assert all(s.schema is not None for s in every.values())
    # caps high enough for GPT-4-class replies, still bounded
    for s in every.values():
        assert 1024 <= s.max_tokens <= 4096


def test_prompts_ask_what_the_authors_ask():
    p = human(PROPOSE_STAGE, {"question": "Q?", "context": "(none yet)"})
    assert "as many different sub-questions as you can" in p
    assert "empty list" not in p and "already say" not in p
    assert p.index('"thinking"') < p.index('"sub_questions"')
    s = human(SELECT_STAGE, render_select({"question": "Q?", "chosen": [], "candidates": [hit(1), hit(2)]}))
    assert "from 1 to 2" in s and "0" not in s.split("## Knowledge")[0]
    assert "Question 1: Atom 1?\nQuestion 2: Atom 2?" in s and "T1" not in s  # no titles on the atom path
    assert s.index('"thinking"') < s.index('"question_idx"')
    pp = human(SELECT_PARAGRAPH_STAGE, render_select_paragraph({"question": "Q?", "chosen": [hit(9)],
                                                                "candidates": [hit(1), hit(2)]}))
    assert "Paragraph 1: Title: T1. Content: Text 1.\nParagraph 2: Title: T2. Content: Text 2." in pp
    assert "Title: T9. Content: Text 9." in pp.split("## Paragraphs")[0] and '"paragraph_idx"' in pp
    a = human(ANSWER_STAGE, render_answer({"question": "Q?", "chosen": [hit(1), hit(1)]}))
    assert a.index('"answer"') < a.index('"rationale"') and "step by step" in a and "short" not in a
    assert a.count("Title: T1.") == 1  # each chunk once
    at = human(ATOMIZE_STAGE, render_atomize({"title": "Acme", "text": "Acme was founded in 1900."}))
    assert "as many questions as you can" in at and "Title: Acme. Content: Acme was founded in 1900." in at
    assert "one fact" not in at


def test_atomizer_replies_and_filter():
    assert read_atomic_questions("1. Who founded Acme?\n- When was Acme founded?\n") == [
        "Who founded Acme?", "When was Acme founded?"]
    assert read_atomic_questions('{"questions": ["Who founded Acme?"]}') == ["Who founded Acme?"]
    for bad in ("", "   "):
        with pytest.raises(ParseError):
            read_atomic_questions(bad)
    chunk = "Acme Corporation was founded in 1900 by John Smith in the city of Springfield, Illinois."
    lines = ["Who founded Acme Corporation?", "Questions:", "Acme?",
             "Acme Corporation was founded in 1900 by John Smith in the city of Springfield, Illinois?",
             "What " + "very " * 45 + "long question?", "In which year was Acme Corporation founded?"]
    kept = filter_atoms(lines, chunk, max_words=40)
    assert kept.kept == ["Who founded Acme Corporation?", "In which year was Acme Corporation founded?"]
    assert kept.rejected == {"not_question": 1, "too_short": 1, "copy": 1, "too_long": 1}


def test_proposer_replies():
    fenced = '```json\n{"thinking": "need X", "sub_questions": ["Who is X?", "Where is Y?",]}\n```'
    assert read_proposal(fenced).questions == ["Who is X?", "Where is Y?"]
    assert read_proposal('{"thinking": "known", "sub_questions": []}').enough
    assert read_proposal("Sub-questions:\n1. Who is X?\n2. Where is Y?").questions == ["Who is X?", "Where is Y?"]
    # prose is never a stop: "not enough" (or "enough") without an empty list is unreadable
    for bad in ("", "lorem ipsum", "{}", "The passages are not enough to answer.", "That is enough."):
        with pytest.raises(ParseError):
            read_proposal(bad)


def test_selector_reads_only_its_field():
    assert read_selection('{"thinking": "t", "question_idx": 3}').index == 3
    assert read_selection("{'thinking': 't', 'question_idx': '2'}").index == 2
    assert read_selection('{"question_idx": 0}').index is None
    assert read_selection('{"question_idx": null}').index is None
    # the thinking's numbers are never the pick
    assert read_selection('{"thinking": "candidate 1 is known; candidate 4 is missing", "question_idx": 4}').index == 4
    for bad in ("", "2", "question_idx: 4", "I would pick candidate 1",
                '{"thinking": "candidate 1 looks best and then', '{"thinking": "cut', '{"question_idx": "two"}',
                '{"question_idx": true}', '{"paragraph_idx": 2}'):
        with pytest.raises(ParseError):
            read_selection(bad)
    assert read_paragraph_selection('{"thinking": "t", "paragraph_idx": 2}').index == 2
    with pytest.raises(ParseError):
        read_paragraph_selection('{"question_idx": 2}')


def test_answer_replies():
    assert read_answer('{"answer": "Munich", "rationale": "r"}') == "Munich"
    assert read_answer('Reasoning...\n```json\n{"answer": ["A", "B"], "rationale": ""}\n```') == "A, B"
    assert read_answer("So the answer is: Munich.") == "Munich"
    for bad in ("", '{"answer": ""}'):
        with pytest.raises(ParseError):
            read_answer(bad)
