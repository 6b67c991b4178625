"""parse_tree on hand-written quirky planner outputs and on all released ATOMR trees."""

from __future__ import annotations

import json
import statistics

import pytest

from atomgraph.prompts.atomr import TreeParseError, parse_tree

Q = "What is the nationality of the director of Jaws?"
CLEAN = {
    Q: ["1. Who directed Jaws?", "2. What is the nationality of [1]?"],
    "1. Who directed Jaws?": ["3. What is Jaws?", "4. Who directed [3]?"],
    "3. What is Jaws?": 'Search("Jaws", "1975 film")',
    "4. Who directed [3]?": 'Relate([3], "director")',
    "2. What is the nationality of [1]?": 'Relate([1], "nationality")',
}


def test_clean_tree_structure():
    t = parse_tree(CLEAN, Q)
    assert t.question == Q and t.repairs == []
    assert t[0].children == [1, 2] and t[0].kind == "parent" and t[0].depth == 1
    assert t[1].children == [3, 4] and t[1].parent == 0 and t[1].depth == 2
    assert t[3].kind == "operator" and t[3].operator.name == "Search"
    assert t[3].operator.args == ["Jaws", "1975 film"] and t[3].depth == 3
    assert t[4].operator.args == ["[3]", "director"] and t[4].refs == [3]
    assert t[2].refs == [1] and t.depth == 3
    assert t.topological_order().index(1) < t.topological_order().index(2)


def test_text_with_fence_and_prose():
    raw = "Here is the tree you asked for:\n```json\n" + json.dumps(CLEAN, indent=2) + "\n```\nHope it helps!"
    t = parse_tree(raw)
    assert len(t) == 5 and t.question == Q
    assert any("code fence" in r for r in t.repairs)


def test_prose_around_bare_json_trailing_commas_and_python_literal():
    body = json.dumps(CLEAN).replace('"]', '",]')
    t = parse_tree("Sure. " + body + " Done.")
    assert len(t) == 5
    assert any("trailing commas" in r for r in t.repairs) and any("before" in r for r in t.repairs)
    t2 = parse_tree(repr({"Who wrote Dune?": ["1. Who is the author of Dune?"], "1. Who is the author of Dune?": "Relate('Dune', 'author')"}))
    assert t2[1].operator.args == ["Dune", "author"]
    assert any("Python literal" in r for r in t2.repairs)


def test_end_dr_and_prose_leaves():
    raw = {
        "Who is older, A or B?": ["1. When was A born?", "2. When was B born?", "3. Who is older?", "4. Is [3] alive?"],
        "1. When was A born?": 'Relate("A", "date of birth")',
        "2. When was B born?": 'Relate("B", "date of birth")',
        "3. Who is older?": "Given answers of [1] and [2], which is earlier? [END]",
        "4. Is [3] alive?": "Look it up somewhere.",
    }
    t = parse_tree(raw)
    assert t[3].kind == "direct" and t[3].refs == [1, 2] and "which is earlier" in t[3].note
    assert t[4].kind == "open" and t[4].refs == [3] and t[4].note == "Look it up somewhere."
    assert parse_tree({"Q?": ["1. a?", "2. b [1]?"], "1. a?": "[END]", "2. b [1]?": "[DR]"})[1].kind == "direct"


def test_root_leaf_is_an_operator_node_of_depth_one():
    t = parse_tree({"Who is Murray Head?": 'Search("Murray Head")'})
    assert len(t) == 1 and t[0].kind == "operator" and t.depth == 1 and t[0].operator.args == ["Murray Head"]


def test_numbering_slips_duplicate_and_hierarchical_numbers():
    raw = {
        "Q?": ["1. A?", "2. B?", "3. Given [1] and [2], which?"],
        "1. A?": ["3. What is X?", "4. Who made [3]?"],
        "3. What is X?": 'Search("X")',
        "4. Who made [3]?": 'Relate([3], "maker")',
        "2. B?": ["2.1 What is Y?", "2.2 Who wrote [2.1]?"],
        "2.1 What is Y?": 'Search("Y")',
        "2.2 Who wrote [2.1]?": 'Relate([2.1], "author")',
        "3. Given [1] and [2], which?": "[END]",
    }
    t = parse_tree(raw)
    assert t[3].question.startswith("Given") and t[3].refs == [1, 2]
    x = next(n for n in t.nodes.values() if n.question == "What is X?")
    maker = t[4]
    assert x.id not in (1, 2, 3, 4) and maker.refs == [x.id] and maker.operator.args == [f"[{x.id}]", "maker"]
    assert maker.question == f"Who made [{x.id}]?"
    wrote = next(n for n in t.nodes.values() if n.question.startswith("Who wrote"))
    y = next(n for n in t.nodes.values() if n.question == "What is Y?")
    assert wrote.refs == [y.id] and y.parent == 2 and wrote.parent == 2
    assert t.depth == 3 and len(t) == 8 and len(t.repairs) >= 4


def test_child_text_differs_from_key_matched_by_number():
    raw = {
        "Q?": ["1. What is V?", "2. Is Lake among the actors in [1]?"],
        "1. What is V?": 'Search("V")',
        "2. Is Lake among the actors in [9]?": 'Filter([1], "Lake")',
    }
    with pytest.raises(TreeParseError, match=r"\[9\]"):
        parse_tree(raw)
    raw["2. Was Lake among the actors of [1]?"] = raw.pop("2. Is Lake among the actors in [9]?")
    t = parse_tree(raw)
    assert t[2].operator.name == "Filter" and t[2].question == "Was Lake among the actors of [1]?"
    assert any("by its number" in r for r in t.repairs)
    # a listed child whose number slipped is found by its text
    t = parse_tree({"Q?": ["3. What is V?"], "1. What is V?": 'Search("V")'})
    assert t[0].children == [1] and any("ignoring its number" in r for r in t.repairs)


def test_duplicates_unwrapped_lists_and_missing_entries():
    raw = {"Q?": ["1. A?", "1. A?", "2. B?"], "1. A?": ['Search("A")']}
    t = parse_tree(raw)
    assert t[0].children == [1, 2] and t[1].kind == "operator"
    assert t[2].kind == "open"  # listed but never given a value
    assert any("twice" in r for r in t.repairs) and any("inside a list" in r for r in t.repairs)
    shared = parse_tree({"Q?": ["1. A?", "2. B?"], "1. A?": ["3. C?"], "2. B?": ["3. C?"], "3. C?": 'Search("C")'})
    assert shared[3].parent == 1 and shared[2].refs == [3]


def test_hostile_operator_strings():
    raw = {
        "Q?": ["1. a?", "2. b?", "3. c?", "4. d?", "5. e?", "6. f?"],
        "1. a?": 'Search("Hamilton Evans "Tony" James")',
        "2. b?": "search(Murray Head, singer)",
        "3. c?": 'Relate("India", "capital in " + [1])',
        "4. d?": 'Filter([1, 2], "was a president")',
        "5. e?": 'Filter(Search("actors"), "born in 1946")]',
        "6. f?": "Relate([3], 'said \\'hi\\' to')",
    }
    t = parse_tree(raw)
    assert t[1].operator.args == ['Hamilton Evans "Tony" James']
    assert t[2].operator.name == "Search" and t[2].operator.args == ["Murray Head", "singer"]
    assert t[3].operator.args == ["India", "capital in [1]"] and t[3].refs == [1]
    assert t[4].operator.args == ["[1], [2]", "was a president"] and t[4].refs == [1, 2]
    assert t[5].operator.args == ['Search("actors")', "born in 1946"]
    assert t[6].operator.args == ["[3]", "said 'hi' to"]
    assert len(t.repairs) >= 5
    with pytest.raises(TreeParseError, match="more than one operator"):
        parse_tree({"Q?": 'Search("a") then Relate([1], "b")'})


@pytest.mark.parametrize(
    "raw, pattern",
    [
        ({}, "empty tree"),
        ("", "empty planner output"),
        ("TREE_PARSING_ERROR", "TREE_PARSING_ERROR"),
        ('"TREE_PARSING_ERROR"', "TREE_PARSING_ERROR"),
        ("I cannot help with that.", "no JSON object"),
        ('{"Q?": ["1. a?"], "1. a?": "Search(', "truncated"),
        ('{"Q?": [1. a?]}', "not valid JSON"),
        (["1. a?"], "must be a JSON object"),
        ({"Q?": ["1. a?"], "1. a?": 'Relate([7], "x")'}, r"refers to \[7\]"),
        ({"Q?": ["1. a?"], "1. a?": 'Relate([1], "x")'}, "cycle"),
        ({"Q?": ["1. a [2]?", "2. b [1]?"], "1. a [2]?": "[END]", "2. b [1]?": "[END]"}, "cycle"),
        ({"Q?": ["1. a?"], "1. a?": ["2. b?"], "2. b?": ["1. a?"]}, "cycle"),
        ({"Q?": ["1. a?"], "1. a?": 5}, "must be a list"),
        ({"1. a?": 'Search("a")', "2. b?": 'Search("b")'}, "no root question"),
        ({"Q?": ["1. a?"], "R?": ["2. b?"], "1. a?": "[END]", "2. b?": "[END]"}, "ambiguous root"),
    ],
)
def test_unrepairable_outputs_raise(raw, pattern):
    with pytest.raises(TreeParseError, match=pattern):
        parse_tree(raw)


# --- repairs for slips seen in GPT-4o planner output beyond HotpotQA and 2Wiki --------------
def test_numbered_sub_question_no_parent_lists_is_attached_by_its_number():
    q = "Which university did the author of the novel that inspired Blade Runner attend?"
    raw = {
        q: ["1. Who is the author of the novel that inspired Blade Runner?"],
        "1. Who is the author of the novel that inspired Blade Runner?": ["1.1 Which novel was Blade Runner based on?"],
        "1.1 Which novel was Blade Runner based on?": 'Search("Blade Runner", "based on the novel")',
        "1.2 Who wrote [1.1]?": 'Relate([1.1], "author")',
        "2. Which university did [1] attend?": 'Relate([1], "educated at")',
    }
    t = parse_tree(raw, q)
    novel = next(n for n in t.nodes.values() if n.question.startswith("Which novel"))
    wrote = next(n for n in t.nodes.values() if n.question.startswith("Who wrote"))
    assert wrote.parent == 1 and t[1].children == [novel.id, wrote.id]  # 1.2 under 1
    assert wrote.refs == [novel.id] and wrote.operator.args == [f"[{novel.id}]", "author"]
    assert t[2].parent == 0 and t[0].children == [1, 2] and t[2].refs == [1]  # 2 under the root
    assert any("'1.2 Who wrote [1.1]?' was listed nowhere; attached it under '1. Who is the author" in r for r in t.repairs)
    assert any("'2. Which university did [1] attend?' was listed nowhere; attached it under the root" in r for r in t.repairs)
    assert t.topological_order().index(1) < t.topological_order().index(2)


def test_orphans_listing_their_own_children_keep_their_subtrees():
    # "2." is listed by nobody but lists "2.1"; "2.1" comes first in the output
    raw = {
        "Are the directors of Jaws and Alien of the same nationality?": ["1. What is the nationality of the director of Jaws?"],
        "1. What is the nationality of the director of Jaws?": 'Relate("Jaws", "director\'s nationality")',
        "2.1 Who directed Alien?": 'Relate("Alien", "director")',
        "2. What is the nationality of the director of Alien?": ["2.1 Who directed Alien?", "2.2 What is the nationality of [2.1]?"],
        "2.2 What is the nationality of [2.1]?": 'Relate([2.1], "country of citizenship")',
        "3. Are [1] and [2] the same?": "[END]",
    }
    t = parse_tree(raw)
    assert t[0].children == [1, 2, 3] and len(t[2].children) == 2 and t[3].refs == [1, 2]
    assert all(t[c].parent == 2 for c in t[2].children)
    assert sum("listed nowhere" in r for r in t.repairs) == 2  # "2." and "3.", not "2.1"


def test_unnumbered_question_no_parent_lists_cannot_be_placed():
    raw = {"Q?": ["1. a?"], "1. a?": "[END]", "lost?": 'Search("x")'}
    with pytest.raises(TreeParseError, match="not a sub-question"):
        parse_tree(raw, "Q?")


def test_root_with_one_sub_question_as_a_string():
    q = "Where was the director of Jaws born?"
    raw = {
        q: "1. Where was the director of Jaws born?",
        "1. Where was the director of Jaws born?": ["2. Who directed Jaws?", "3. Where was [2] born?"],
        "2. Who directed Jaws?": 'Relate("Jaws", "director")',
        "3. Where was [2] born?": 'Relate([2], "place of birth")',
    }
    t = parse_tree(raw, q)
    assert t[0].children == [1] and t[1].children == [2, 3] and t.depth == 3 and t[3].refs == [2]
    assert any("as a string, not a list" in r for r in t.repairs)
    # an unnumbered sub-question that has an entry of its own
    t = parse_tree({"Who directed Jaws?": "Who is the director of Jaws?",
                    "Who is the director of Jaws?": 'Relate("Jaws", "director")'})
    assert t[0].children == [1] and t[1].operator.name == "Relate"
    # a numbered sub-question without an entry: an open sub-question
    t = parse_tree({"Who directed Jaws?": "1. Who is the director of Jaws?"})
    assert t[0].children == [1] and t[1].kind == "open"


@pytest.mark.parametrize("value, kind", [
    ('Search("Murray Head")', "operator"),
    ("[END]", "open"),  # a lone root cannot reason from siblings
    ("[DR]", "open"),
    ("Relate(\"Jaws\", \"director\")", "operator"),
    ("Look it up in an encyclopedia.", "open"),
])
def test_root_leaf_strings_stay_leaves(value, kind):
    t = parse_tree({"Who is it?": value})
    assert len(t) == 1 and t[0].kind == kind
    assert not any("not a list" in r for r in t.repairs)


def test_question_referring_to_its_own_number_keeps_it_as_text():
    q = "What nationality is the director of Jaws?"
    raw = {
        q: ["1. Who directed Jaws?", "2. What is the nationality of [2]?"],
        "1. Who directed Jaws?": 'Relate("Jaws", "director")',
        "2. What is the nationality of [2]?": 'Relate([1], "country of citizenship")',
    }
    t = parse_tree(raw, q)
    assert t[2].question == "What is the nationality of [2]?" and t[2].refs == [1]
    assert t.topological_order() == [1, 2, 0]
    assert any("node 2: its text refers to its own number [2]" in r for r in t.repairs)
    # on a [DR] node, with its real references beside it
    raw = {
        "Who is older, A or B?": ["1. When was A born?", "2. When was B born?", "3. Is [1] earlier than [2] ([3])?"],
        "1. When was A born?": 'Relate("A", "date of birth")',
        "2. When was B born?": 'Relate("B", "date of birth")',
        "3. Is [1] earlier than [2] ([3])?": "[END]",
    }
    t = parse_tree(raw)
    assert t[3].kind == "direct" and t[3].refs == [1, 2]
    # the planner JSON round trip keeps it parseable
    assert parse_tree(t.to_planner_json())[3].refs == [1, 2]
    # an operator call on its own answer is still a cycle
    with pytest.raises(TreeParseError, match="its own answer"):
        parse_tree({"Q?": ["1. a [1]?"], "1. a [1]?": 'Relate([1], "x")'})


def test_given_question_helps_root_and_missing_root():
    t = parse_tree({"1. a?": 'Search("a")', "2. b [1]?": "[END]"}, question="Original?")
    assert t[0].question == "Original?" and t[0].children == [1, 2] and t.repairs
    assert parse_tree(json.dumps(CLEAN), "  what is the nationality of the director of jaws  ").root == 0


def _released(shared_data, name):
    path = shared_data / "atomr" / "released" / f"{name}_test_500_trees.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize(
    "name, mean, median, lo, hi",
    [("hotpotqa", 2.65, 3, 2, 5), ("2Wiki", 2.97, 3, 2, 3)],
)
def test_released_trees_reproduce_table8(shared_data, name, mean, median, lo, hi):
    depths, failed = [], []
    for rec in _released(shared_data, name):
        try:
            tree = parse_tree(rec["reasoning_tree"], rec["question"])
        except TreeParseError:
            failed.append(rec["index"])
            assert rec["reasoning_tree"] == "TREE_PARSING_ERROR"
            continue
        depths.append(tree.depth)
        assert not any("a repeat of" in r for r in tree.repairs)  # no planner tree repeats a sibling
        tree.topological_order()  # every tree is executable
        # parsed trees survive a round trip through the planner's JSON shape
        assert parse_tree(tree.to_planner_json()).depth == tree.depth
    assert failed == [r["index"] for r in _released(shared_data, name) if r["reasoning_tree"] == "TREE_PARSING_ERROR"]
    assert (round(statistics.fmean(depths), 2), statistics.median(depths), min(depths), max(depths)) == (mean, median, lo, hi)


def test_released_text_form_parses_too(shared_data):
    """The same trees given as raw model text (fenced JSON) parse to the same depths."""
    for rec in _released(shared_data, "hotpotqa")[:60]:
        if rec["reasoning_tree"] == "TREE_PARSING_ERROR":
            continue
        text = "```json\n" + json.dumps(rec["reasoning_tree"], ensure_ascii=False, indent=1) + "\n```"
        assert parse_tree(text, rec["question"]).depth == parse_tree(rec["reasoning_tree"], rec["question"]).depth


# --- replies that hold several plans (split_plans) -------------------------------------------
OTHER_Q = "Who wrote Dune?"
OTHER = {OTHER_Q: ["1. Which novel is Dune?", "2. Who wrote [1]?"],
         "1. Which novel is Dune?": 'Search("Dune", "novel")', "2. Who wrote [1]?": 'Relate([1], "author")'}


def test_split_plans_one_plan_per_root_question():
    from atomgraph.prompts.atomr.tree_parser import split_plans

    # a reply with one plan comes back as it is (parse_tree reads it as before)
    text = "Sure: " + json.dumps(CLEAN)
    assert split_plans(text) == [text] and split_plans(CLEAN) == [CLEAN]
    # one object, two roots: each root with the entries it lists, in the reply's order
    for merged in ({**OTHER, **CLEAN}, {**CLEAN, **OTHER}):
        parts = split_plans(json.dumps(merged))
        trees = [parse_tree(p) for p in parts]
        assert sorted(t[0].question for t in trees) == sorted([Q, OTHER_Q])
        mine = next(t for t in trees if t[0].question == Q)
        assert len(mine) == len(CLEAN) and not mine.repairs
    # two objects one after the other; an unreadable third is left out
    parts = split_plans(json.dumps(OTHER) + "\n\nAnd now:\n" + json.dumps(CLEAN) + '\n{"broken": ')
    assert [parse_tree(p)[0].question for p in parts] == [OTHER_Q, Q]
    # a numbered entry no root lists goes with the root before it
    stray = {**OTHER, Q: ["1. Who directed Jaws?"], "1. Who directed Jaws?": 'Relate("Jaws", "director")',
             "2. What is the nationality of [1]?": 'Relate([1], "nationality")'}
    mine = parse_tree(split_plans(stray)[1])
    assert mine[0].question == Q and len(mine) == 3


def test_a_sibling_repeating_another_under_a_new_number_is_dropped_and_its_number_aliased():
    """A small model's list runs on (a planner's tree never asks one question twice): the repeat is
    dropped, a reference to its number reads the question it repeats, and both are recorded."""
    q = "Which church in Einstein's birthplace has the tallest steeple?"
    tree = parse_tree({
        q: ["1. Where was Albert Einstein born?", "2. Which steeple is the tallest?", "3. Which church in [1] has [2]?",
            "4. Which church is in [5]?", "5. Which steeple is the tallest?"],
        "1. Where was Albert Einstein born?": 'Search("Albert Einstein", "birthplace")',
        "2. Which steeple is the tallest?": 'Search("tallest steeple")',
        "3. Which church in [1] has [2]?": 'Relate([1], "church")',
        "4. Which church is in [5]?": 'Filter([5], "church")',
        "5. Which steeple is the tallest?": 'Search("tallest steeple")',
    })
    assert tree.nodes[0].children == [1, 2, 3, 4] and 5 not in tree.nodes
    assert tree.nodes[4].question == "Which church is in [2]?" and tree.nodes[4].operator.args[0] == "[2]"
    assert any("a repeat of" in r and "[5] reads [2]" in r for r in tree.repairs)
    # the same question with another value is not a repeat: both stay
    other = parse_tree({q: ["1. Who built it?", "2. Who built it?"], "1. Who built it?": 'Search("church", "builder")',
                        "2. Who built it?": 'Search("steeple", "builder")'})
    assert other.nodes[0].children == [1, 2]


def test_a_repeat_listed_twice_is_dropped_once():
    """A small model's list that runs on and names the same questions again (items matched to the
    entries they repeat): each repeat is dropped once, the tree stands."""
    q = "The runner-up in the 1999 World Drivers' Championship drives in a video game made by which company?"
    tree = parse_tree({
        q: ["1. Who is the runner-up in the 1999 championship?", "2. In what year was [1] the runner-up?",
            "3. Given [1] and [2], who is the runner-up?", "4. What is the year of the 1999 championship?",
            "5. What is the year of the 1999 championship?", "6. Given [1] and [2], who is the runner-up?"],
        "1. Who is the runner-up in the 1999 championship?": 'Search("1999 championship", "runner-up")',
        "2. In what year was [1] the runner-up?": 'Search("1999 championship", "year")',
        "3. Given [1] and [2], who is the runner-up?": 'Search("1999 championship", "runner-up")',
        "4. What is the year of the 1999 championship?": 'Search("1999 championship", "year")',
    })
    assert tree.nodes[0].children == [1, 2]
    assert sum("a repeat of" in r for r in tree.repairs) == 2, tree.repairs


def test_a_sibling_repeating_another_call_under_a_new_question_is_the_same_operation():
    """An atomic operator is its call: a sibling making the same call as an earlier one (the
    second question asking for more than that call retrieves) is dropped and its number aliased."""
    q = "What is the name of the church in Albert Einstein's birthplace whose steeple is the tallest?"
    tree = parse_tree({
        q: ["1. What is Albert Einstein's birthplace?", "2. What is the tallest steeple?",
            "3. Given [1] and [2], which church is it?", "4. What is the church in Albert Einstein's birthplace?"],
        "1. What is Albert Einstein's birthplace?": 'Search("Albert Einstein", "birthplace")',
        "2. What is the tallest steeple?": 'Search("tallest steeple", "world")',
        "3. Given [1] and [2], which church is it?": 'Relate([1], "church with the tallest steeple")',
        "4. What is the church in Albert Einstein's birthplace?": 'Search("albert einstein",  "Birthplace")',
    })
    assert tree.nodes[0].children == [1, 2, 3] and 4 not in tree.nodes
    assert any("a repeat of" in r and "[4] reads [1]" in r for r in tree.repairs)
    # the same function over other arguments is another operation
    other = parse_tree({q: ["1. Who built it?", "2. Who designed it?"], "1. Who built it?": 'Relate("Ulm Minster", "builder")',
                        "2. Who designed it?": 'Relate("Ulm Minster", "architect")'})
    assert other.nodes[0].children == [1, 2]
