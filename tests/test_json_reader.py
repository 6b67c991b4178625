"""The one reader of JSON in model replies (atomgraph/text.py), and the stages that use it:
no textual rewriting of words, no citation marker taken for the list."""

from __future__ import annotations

import time

import pytest

from atomgraph.text import loads, read_json, read_object


@pytest.mark.parametrize("text,value", [
    ('{"answer": "Paris"}', {"answer": "Paris"}),
    ('Sure, here it is:\n```json\n{"answer": "Paris",}\n```\nHope it helps.', {"answer": "Paris"}),
    ("{'answer': 'Paris', 'ok': True, 'n': None}", {"answer": "Paris", "ok": True, "n": None}),
    ('{"a": [1, 2,], }', {"a": [1, 2]}),
    ('Reasoning first. Then {"answer": "x", "rationale": "y"} and more prose', {"answer": "x", "rationale": "y"}),
    ('["Paris", "Lyon"]', ["Paris", "Lyon"]),
    ("[1, 3]", [1, 3]),
    ("Objects: [1, 3]", [1, 3]),
    ("no JSON here", None),
    ('{"answer": "Par', None),
    ("", None),
])
def test_reads_json_where_a_model_writes_it(text, value):
    assert read_json(text) == value


@pytest.mark.parametrize("word", ["the nullification crisis", "falsetto", "truetone", "Nonesuch", "a true story"])
def test_words_inside_strings_are_never_rewritten(word):
    """KAR³'s old reader replaced null/true/false in the whole text before ast.literal_eval."""
    assert read_object("{'answer': '%s', 'rationale': null}" % word) == {"answer": word, "rationale": None}
    assert read_object('{"answer": "%s", "rationale": true,}' % word) == {"answer": word, "rationale": True}
    assert loads("['%s', false]" % word) == [word, False]


def test_a_citation_marker_is_not_the_list():
    """ARM's old reader took the first bracket."""
    assert read_json('Sure! [1] is the first. Then: ["a", "b"]') == ["a", "b"]
    assert read_json("See [12] and [13] for ['Ulm', 'Munich'].") == ["Ulm", "Munich"]
    assert read_json("Passage [2] says so.") == [2]  # nothing else: the marker is all there is


def test_want_and_accept_pick_the_value():
    text = '["x"] then {"objects": ["a"]}'
    assert read_json(text, want=dict) == {"objects": ["a"]}
    assert read_json(text, accept=lambda v: isinstance(v, dict)) == {"objects": ["a"]}


def test_python_that_is_not_a_literal_is_not_run():
    assert read_json("[__import__('os').system('true')]") is None
    with pytest.raises(ValueError):
        loads("{**x}")


@pytest.mark.parametrize("text", ["[" * 50_000, '{"a":' * 30_000, "it's [" * 10_000])
def test_hostile_text_is_read_in_bounded_time(text):
    t0 = time.monotonic()
    assert read_json(text) is None
    assert time.monotonic() - t0 < 20  # about 1 s on a shared CPU


def test_every_stage_reads_through_it():
    from atomgraph.prompts.arm import parse_keywords, parse_selection
    from atomgraph.prompts.atomr.kg_program import read_program
    from atomgraph.prompts.compare.decomposed_rag import read_sub_questions
    from atomgraph.prompts.kar3.stages import read_answer
    from atomgraph.text import read_object

    assert read_object("{'answer': 'the nullification crisis', 'rationale': null}")["answer"] == "the nullification crisis"
    assert read_answer('{"answer": "Falsetto singing", "rationale": "false"}') == "Falsetto singing"
    assert parse_keywords('Sure! [1] is the first. Then: ["a", "b"]') == ["a", "b"]
    assert parse_selection('Draft [1] is good. {"objects": ["o1", "o2"], "reasoning": "both"}')["objects"] == ["o1", "o2"]
    subs = read_sub_questions('Here [1] is the plan: ["Who advised Heisenberg?", "Where did he die?"]')
    assert subs == ["Who advised Heisenberg?", "Where did he die?"]
    prog = read_program("Program: {'entity': 'Werner Heisenberg', 'relation': 'doctoral advisor',}")
    assert prog is not None
