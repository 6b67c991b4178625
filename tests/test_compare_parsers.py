"""The comparison methods' tolerant parsers: what they read, and what they refuse."""

from __future__ import annotations

import pytest

from atomgraph.errors import ParseError
from atomgraph.prompts.compare import decomposed_rag, ircot, iter_retgen, react, self_ask


@pytest.mark.parametrize("text,expected", [
    ("Follow up: Who was Heisenberg's advisor?", {"kind": "follow_up", "text": "Who was Heisenberg's advisor?"}),
    ("**Follow-up question:** Where did Sommerfeld die?", {"kind": "follow_up", "text": "Where did Sommerfeld die?"}),
    # the model ran on and wrote its own intermediate answer: only the first directive counts
    ("Follow up: Where was X born?\nIntermediate answer: Ulm\nSo the final answer is: Ulm",
     {"kind": "follow_up", "text": "Where was X born?"}),
    ("So the final answer is: Munich.", {"kind": "final", "text": "Munich"}),
    ("Final answer: Munich", {"kind": "final", "text": "Munich"}),
    ("Are follow up questions needed here: No.\nMunich", {"kind": "final", "text": "Munich"}),
])
def test_self_ask_step(text, expected):
    assert self_ask.read_step(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "I am not sure what to do.", "Follow up:   "])
def test_self_ask_step_refuses(text):
    with pytest.raises(ParseError):
        self_ask.read_step(text)


def test_self_ask_scratchpad():
    pad = self_ask.scratchpad([{"follow_up": "A?", "answer": "a"}, {"follow_up": "B?", "answer": "b"}])
    assert pad == "Follow up: A?\nIntermediate answer: a\nFollow up: B?\nIntermediate answer: b\n"


@pytest.mark.parametrize("text,sentence,answer", [
    ("Heisenberg's advisor was Arnold Sommerfeld. He taught in Munich.", "Heisenberg's advisor was Arnold Sommerfeld.", None),
    ("Next sentence: Sommerfeld died in Munich.", "Sommerfeld died in Munich.", None),
    ("1. Sommerfeld died in Munich.", "Sommerfeld died in Munich.", None),
    ("Sommerfeld died in Munich. So the answer is: Munich", "Sommerfeld died in Munich. So the answer is: Munich", "Munich"),
    ("So the answer is: **Munich**", "So the answer is: Munich", "Munich"),
])
def test_ircot_step(text, sentence, answer):
    assert ircot.read_step(text) == {"sentence": sentence, "answer": answer}


@pytest.mark.parametrize("text", ["", "```\n```", "So the answer is:"])
def test_ircot_step_refuses(text):
    with pytest.raises(ParseError):
        ircot.read_step(text)


def test_iter_retgen_generation_keeps_the_text_as_next_query():
    out = iter_retgen.read_generation("Einstein was born in Ulm.\nSo the answer is: Ulm")
    assert out == {"text": "Einstein was born in Ulm.\nSo the answer is: Ulm", "answer": "Ulm"}
    with pytest.raises(ParseError):
        iter_retgen.read_generation(" ")


@pytest.mark.parametrize("text,expected", [
    ("1. Who was A?\n2. Where did [that person] die?", ["Who was A?", "Where did [that person] die?"]),
    ('["Who was A?", "Where did A die?"]', ["Who was A?", "Where did A die?"]),
    ('Here they are:\n- Who was A?\n- Who was A?\n* Where did A die?', ["Who was A?", "Where did A die?"]),
    ("Sub-question 1: Who was A?\nSub-question 2: When?", ["Who was A?", "When?"]),
    ("Who was A? is the first step.\nWho was A?", ["Who was A?"]),
])
def test_decomposed_rag_sub_questions(text, expected):
    assert decomposed_rag.read_sub_questions(text) == expected


@pytest.mark.parametrize("text", ["", "I cannot break this question up", "[]"])
def test_decomposed_rag_sub_questions_refuses(text):
    with pytest.raises(ParseError):
        decomposed_rag.read_sub_questions(text)


def test_react_final_message():
    assert react.read_final("Einstein was born in Ulm.\nSo the answer is: Ulm.") == "Ulm"
    with pytest.raises(ParseError):
        react.read_final("")


def test_stages_are_uniquely_named_and_capped():
    from atomgraph.prompts.stage import Stage

    stages = [v for mod in (self_ask, ircot, iter_retgen, react, decomposed_rag) for v in vars(mod).values()
              if isinstance(v, Stage)]
    names = [s.name for s in stages]
    assert len(names) == len(set(names)) == 9
    assert all(s.max_tokens and s.role in {"planner", "executor", "answerer"} for s in stages)


@pytest.mark.parametrize("text", ["Question: What is the first president of X?\nSub-questions: staanmodel",
                                  "Sub-questions:\n1. staanmodel"])
def test_decomposed_rag_refuses_echoes_and_fragments(text):
    """A small model's echo of the question with a one-word 'sub-question' is no decomposition."""
    with pytest.raises(ParseError):
        decomposed_rag.read_sub_questions(text)
