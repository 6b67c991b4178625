"""ATOMR's plan grammar (``prompts.atomr.plan.plan_grammar``), checked with a real grammar engine
at token level (llguidance, vLLM's ``guidance`` backend, over the bundled Gemma tokenizer), with
xgrammar's parser (vLLM's default backend) and with llama.cpp's: every planner demonstration of
every pack written within the grammar's characters is a sentence of it, and a question that
references its own number or a later one is not (rules 3 and 4 of the planner's instructions)."""

from __future__ import annotations

import json
import re

import pytest

from atomgraph.prompts.atomr.packs import PACKS
from atomgraph.prompts.atomr.plan import PLAN_MAX_LABEL, plan_grammar
from tests.grammar_engine import BundledTokenizer, accepts as grammar_accepts

llguidance = pytest.importorskip("llguidance")


@pytest.fixture(scope="module")
def tokenizer():
    engine = BundledTokenizer()
    yield engine.tok


def accepts(tokenizer, question: str, plan: str) -> bool:
    return grammar_accepts(tokenizer, plan_grammar(question), plan)


def outside_the_alphabet(tree: dict) -> bool:
    """A question with a double quote, or a quoted name with parentheses: the grammar's
    characters leave both out (a question's quote would end its JSON string early for a small
    model; a parenthesis in a name would close the call)."""
    names = [n for v in tree.values() if isinstance(v, str) for n in re.findall(r'"([^"]*)"', v)]
    return any('"' in k for k in tree) or any(c in n for n in names for c in "()")


def test_every_demonstration_in_the_alphabet_is_a_sentence_of_the_grammar(tokenizer):
    read = 0
    for pack in PACKS.values():
        for question, tree in pack.plan_examples:
            ok = accepts(tokenizer, question, json.dumps(tree, ensure_ascii=False))
            assert ok is not outside_the_alphabet(tree), (pack.name, question)
            read += ok
    assert read >= 20


Q = "What body of water is near the location where the Siege of Cassel took place?"


def plan(call2: str, text3: str, call3: str) -> str:
    return json.dumps({Q: ["1. Where was the Siege of Cassel?", "2. Which city is [1] in?", f"3. {text3}"],
                       "1. Where was the Siege of Cassel?": 'Search("Siege of Cassel")',
                       "2. Which city is [1] in?": call2, f"3. {text3}": call3}, ensure_ascii=False)


@pytest.mark.parametrize("call2, text3, call3, ok", [
    ('Relate([1], "located in")', "Which body of water is near [2]?", 'Relate([2], "body of water")', True),
    ('Relate("Siege of Cassel", "location")', "Which body of water is near [1]?", 'Filter([2], "water")', True),
    ('Relate([2], "located in")', "Which body of water is near [2]?", 'Relate([2], "body of water")', False),  # own answer
    ('Relate([3], "located in")', "Which body of water is near [2]?", 'Relate([2], "body of water")', False),  # a later one
    ('Relate([1], "located in")', "Which body of water is near [3]?", 'Relate([1], "body of water")', False),  # own, in text
    ('Relate([1], "located in")', "Which body of water is near [2]?", 'Filter([3], "water")', False),  # own, in Filter
])
def test_a_question_references_only_earlier_numbers(tokenizer, call2, text3, call3, ok):
    assert accepts(tokenizer, Q, plan(call2, text3, call3)) is ok


def test_question_one_has_no_reference_and_labels_stop_at_the_limit(tokenizer):
    q = "Who directed Heat?"
    assert accepts(tokenizer, q, json.dumps({q: ["1. What is Heat?", "2. Who directed [1]?"],
                                             "1. What is Heat?": 'Search("Heat", "film")',
                                             "2. Who directed [1]?": 'Relate([1], "director")'}))
    assert not accepts(tokenizer, q, json.dumps({q: ["1. What is [1]?", "2. Who directed [1]?"],
                                                 "1. What is [1]?": 'Search("Heat")',
                                                 "2. Who directed [1]?": 'Relate([1], "director")'}))
    top, over = PLAN_MAX_LABEL, PLAN_MAX_LABEL + 1
    for label, ok in ((top, True), (over, False)):
        reply = json.dumps({q: ["1. What is Heat?", f"{label}. Who directed [1]?"],
                            "1. What is Heat?": 'Search("Heat")', f"{label}. Who directed [1]?": 'Relate([1], "director")'})
        assert accepts(tokenizer, q, reply) is ok, label


def test_llama_cpp_parses_it():
    import llama_cpp

    assert llama_cpp.LlamaGrammar.from_string(plan_grammar('Who wrote "Dune" [1] {x}?'), verbose=False)


def test_xgrammar_parses_it():
    xgr = pytest.importorskip("xgrammar")
    assert "root ::=" in str(xgr.Grammar.from_ebnf(plan_grammar('Who wrote "Dune" [1] {x}?')))


# --- the recorded plans against today's grammar (benchmarks/bench_plan_grammar.py) ------------

def test_recorded_plans_are_sorted_into_accepted_forbidden_and_unchecked(tokenizer, tmp_path):
    from benchmarks.bench_plan_grammar import answered_again, check_cell, forbidden_references, supersede

    good = json.loads(plan('Relate([1], "located in")', "Which body of water is near [2]?", 'Relate([2], "water")'))
    own = plan('Relate([2], "located in")', "Which body of water is near [2]?", 'Relate([2], "water")')
    assert forbidden_references(own) == ["2 → [2]"]

    def record(i, trace, f1=0.0):
        return {"id": i, "question": Q, "trace": trace, "metrics": {"f1": f1}}

    cell = tmp_path / "atomr"
    cell.mkdir()
    records = [record("a", {"plan": good, "repairs": []}, 1.0),
               record("b", {"plan": None, "raw_plan": own, "plan_fallback": "dependency cycle"}),
               record("c", {"plan": good, "repairs": ["node 3: ..."]}, 0.5)]
    (cell / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    checked = check_cell(cell, lambda q, text: accepts(tokenizer, q, text))
    assert [(r["id"], r["verdict"]) for r in checked["rows"]] == [("a", "accepted"), ("b", "forbidden"), ("c", "not checked")]
    assert checked["rows"][1]["why"] == "references 2 → [2]"

    assert supersede(cell, {"b", "c"}) == 2
    assert [json.loads(x)["id"] for x in (cell / "predictions.jsonl").read_text().splitlines()] == ["a"]
    with (cell / "predictions.jsonl").open("a") as f:  # the comparison answers b again
        f.write(json.dumps(record("b", {"plan": good, "repairs": []}, 1.0)) + "\n")
    assert answered_again(cell) == {"superseded": 2, "answered_again": 1, "plans_read_before": 0, "plans_read_now": 1,
                                    "f1_sum_before": 0.0, "f1_sum_now": 100.0}


def test_released_trees_refused_for_their_references_alone_are_told_apart(tokenizer, tmp_path):
    from benchmarks.bench_plan_grammar import check_released, earlier_only

    own = json.loads(plan('Relate([2], "located in")', "Which body of water is near [3]?", 'Relate([2], "water")'))
    fixed = earlier_only(own)
    assert fixed["2. Which city is [1] in?"] == 'Relate([1], "located in")'
    assert fixed[Q][2] == "3. Which body of water is near [1]?" and "3. Which body of water is near [1]?" in fixed
    quoted = dict(own, **{"1. Where was the Siege of Cassel?": 'Search("Cassel (town)")'})  # a parenthesis in a name
    rows = [{"index": i, "reasoning_tree": t} for i, t in enumerate([json.loads(plan(
        'Relate([1], "in")', "Near [2]?", 'Relate([2], "water")')), own, quoted, "TREE_PARSING_ERROR"])]
    (tmp_path / "x_trees.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = check_released(tmp_path, lambda q, text: accepts(tokenizer, q, text))
    assert (out["trees"], out["accepted"], out["other"]) == (3, 1, 0)
    assert [(r["index"], r["alone"]) for r in out["references"]] == [(1, True), (2, False)]
