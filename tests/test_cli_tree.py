"""`atomgraph tree stats` / `atomgraph tree show` through atomgraph.cli.main."""

from __future__ import annotations

import json

import pytest

from atomgraph.cli import main

TREES = [
    {"index": 0, "question": "Who directed Jaws?", "reasoning_tree": {
        "Who directed Jaws?": ["1. What is Jaws?", "2. Who directed [1]?"],
        "1. What is Jaws?": 'Search("Jaws", "film")',
        "2. Who directed [1]?": 'Relate([1], "director")'}},
    {"index": 5, "question": "Who is Murray Head?", "reasoning_tree": {"Who is Murray Head?": 'Search("Murray Head")'}},
    {"index": 9, "question": "broken", "reasoning_tree": "TREE_PARSING_ERROR"},
    {"index": 11, "question": "Older, A or B?", "reasoning_tree": {
        "Older, A or B?": ["1. A born?", "2. B born?", "3. Which is older?"],
        "1. A born?": ["4. Who is A?", "5. When was [4] born?"],
        "4. Who is A?": 'Search("A")',
        "5. When was [4] born?": 'Relate([4], "birth date")',
        "2. B born?": 'Relate("B", "birth date")',
        "3. Which is older?": "Given answers of [1] and [2], compare."}},
]


@pytest.fixture
def trees_file(tmp_path):
    path = tmp_path / "trees.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in TREES) + "\n", encoding="utf-8")
    return path


def test_stats_table(trees_file, capsys):
    assert main(["tree", "stats", str(trees_file)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(str(trees_file)))
    # trees parsed failed repaired mean median min max Search Relate Filter direct open
    assert row.split()[1:] == ["4", "3", "1", "1", "2.00", "2", "1", "3", "3", "3", "0", "0", "1"]
    assert "index 9" in out and "TREE_PARSING_ERROR" in out


def test_stats_json_and_plain_json_list(trees_file, tmp_path, capsys):
    listed = tmp_path / "trees.json"
    listed.write_text(json.dumps(TREES), encoding="utf-8")
    assert main(["tree", "stats", str(trees_file), str(listed), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [f["file"] for f in data["files"]] == [str(trees_file), str(listed)]
    for f in data["files"]:
        assert (f["trees"], f["parsed"]) == (4, 3)
        assert [x["index"] for x in f["failed"]] == [9] and "TREE_PARSING_ERROR" in f["failed"][0]["reason"]
        assert f["depth"] == {"mean": 2.0, "median": 2, "min": 1, "max": 3, "histogram": {"1": 1, "2": 1, "3": 1}}
        assert f["operators"] == {"Search": 3, "Relate": 3, "Filter": 0}
        assert f["nodes"]["open"] == 1 and f["nodes"]["parent"] == 3


def test_show_prints_indented_tree(trees_file, capsys):
    assert main(["tree", "show", str(trees_file), "--index", "11"]) == 0
    out = capsys.readouterr().out
    assert "├─ 1. A born?" in out and "│  ├─ 4. Who is A?  → Search(\"A\")" in out
    assert '5. When was [4] born?  → Relate([4], "birth date")  refs [4]' in out
    assert "refs [1], [2]" in out and "repairs:" in out
    assert main(["tree", "show", str(trees_file), "--index", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nodes"]["2"]["refs"] == [1]


def test_bad_inputs_name_the_problem(trees_file, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(TREES[0]) + "\n{not json\n", encoding="utf-8")
    assert main(["tree", "stats", str(bad)]) == 2
    assert f"{bad}:2: not valid JSON" in capsys.readouterr().err
    nofield = tmp_path / "nofield.jsonl"
    nofield.write_text('{"index": 1, "question": "q"}\n', encoding="utf-8")
    assert main(["tree", "stats", str(nofield)]) == 2
    assert f"{nofield}:1: expected a JSON object with a 'reasoning_tree' field" in capsys.readouterr().err
    assert main(["tree", "stats", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["tree", "show", str(trees_file), "--index", "9"]) == 2
    assert "TREE_PARSING_ERROR" in capsys.readouterr().err
    assert main(["tree", "show", str(trees_file), "--index", "404"]) == 2
    assert "no record with index 404" in capsys.readouterr().err


def test_released_files_reproduce_table8(shared_data, capsys):
    d = shared_data / "atomr" / "released"
    files = [d / "hotpotqa_test_500_trees.jsonl", d / "2Wiki_test_500_trees.jsonl"]
    if not all(f.exists() for f in files):
        pytest.skip("released ATOMR trees are absent")
    assert main(["tree", "stats", *map(str, files), "--json"]) == 0
    hp, wiki = json.loads(capsys.readouterr().out)["files"]
    assert (hp["trees"], hp["parsed"], [f["index"] for f in hp["failed"]]) == (500, 499, [7])
    assert (round(hp["depth"]["mean"], 2), hp["depth"]["median"], hp["depth"]["min"], hp["depth"]["max"]) == (2.65, 3, 2, 5)
    assert (wiki["trees"], wiki["parsed"], wiki["failed"]) == (500, 500, [])
    assert (round(wiki["depth"]["mean"], 2), wiki["depth"]["median"], wiki["depth"]["min"], wiki["depth"]["max"]) == (2.97, 3, 2, 3)
    assert main(["tree", "stats", *map(str, files)]) == 0
    out = capsys.readouterr().out
    assert "2.65" in out and "2.97" in out
