"""ARM objects and questions: loaders with FILE:LINE errors, chunking (Appendix A)."""

from __future__ import annotations

import json

import pytest

from atomgraph.errors import AtomgraphError, ParseError
from atomgraph.tools.objects import chunk_object, load_objects, load_questions, parse_object, split_identifier
from tests.arm_fixtures import OBJECTS, QUESTIONS, write_jsonl


def test_loads_passages_and_tables(tmp_path):
    objs = load_objects(write_jsonl(tmp_path / "o.jsonl", OBJECTS))
    assert [o.id for o in objs] == [o["id"] for o in OBJECTS]
    singer = objs[[o.id for o in objs].index("concert_singer#sep#singer")]
    assert singer.is_table and singer.columns[0] == "Singer_ID" and singer.rows[1] == ("2", "Timbaland", "United States", "32")
    assert singer.database == "concert_singer"
    qs = load_questions(write_jsonl(tmp_path / "q.jsonl", QUESTIONS), object_ids=[o.id for o in objs])
    assert qs[2].keywords == ("singers:name", "concerts:concert name") and qs[0].keywords is None
    assert qs[1].answers == ("G. Stanley Hall",)


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({"kind": "passage", "title": "t", "text": "x"}), "missing field 'id'"),
        (json.dumps({"id": "a", "kind": "image", "title": "t", "text": "x"}), "'passage' or 'table'"),
        (json.dumps({"id": "a", "kind": "passage", "title": 3, "text": "x"}), "'title' must be a string"),
        (json.dumps({"id": "a", "kind": "table", "title": "t", "text": ""}), "missing field 'columns'"),
        (json.dumps({"id": "a", "kind": "table", "title": "t", "text": "", "columns": []}), "has no columns"),
        (json.dumps({"id": "a", "kind": "table", "title": "t", "text": "", "columns": ["x", "y"], "rows": [["1"]]}),
         "must be a list of 2 cells"),
        (json.dumps({"id": "p-nolan", "kind": "passage", "title": "dup", "text": "x"}), "duplicate object id 'p-nolan'"),
    ],
)
def test_bad_object_lines_name_file_and_line(tmp_path, line, message):
    path = tmp_path / "o.jsonl"
    path.write_text(json.dumps(OBJECTS[0]) + "\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ParseError) as exc:
        load_objects(path)
    assert str(exc.value).startswith(f"{path}:3:") and message in str(exc.value)


@pytest.mark.parametrize(
    "obj, message",
    [
        ({"id": "q", "question": "?"}, "missing field 'gold_ids'"),
        ({"id": "q", "question": "?", "gold_ids": "p-nolan"}, "'gold_ids' must be a list of strings"),
        ({"id": "", "question": "?", "gold_ids": []}, "'id' must be a non-empty string"),
        ({"id": "q", "question": "", "gold_ids": []}, "'question' is empty"),
        ({"id": "q", "question": "?", "gold_ids": ["nope"]}, "not in the objects file: 'nope'"),
        ({"id": "q", "question": "?", "gold_ids": [], "keywords": [1]}, "'keywords' must be a list of strings"),
    ],
)
def test_bad_question_lines(tmp_path, obj, message):
    path = write_jsonl(tmp_path / "q.jsonl", [QUESTIONS[0], obj])
    with pytest.raises(ParseError) as exc:
        load_questions(path, object_ids=[o["id"] for o in OBJECTS])
    assert str(exc.value).startswith(f"{path}:2:") and message in str(exc.value)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(AtomgraphError, match="no such file"):
        load_objects(tmp_path / "absent.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ParseError, match="no objects"):
        load_objects(tmp_path / "empty.jsonl")


def test_rows_as_objects_and_table_chunks_keep_the_header():
    obj = parse_object({"id": "t", "kind": "table", "title": "db.T", "text": "a table", "columns": ["team_id", "TeamName"],
                        "rows": [{"team_id": i, "TeamName": f"team {i}"} for i in range(45)]}, "x:1")
    assert obj.rows[3] == ("3", "team 3")
    chunks = chunk_object(obj, rows_per_chunk=20)
    assert [c.index for c in chunks] == [0, 1, 2]
    for c in chunks:
        assert c.text.startswith("Table name: db.T\nTable description: a table\nColumns: team_id (team id), TeamName (team name)")
        assert "team_id | TeamName" in c.text
    assert "44 | team 44" in chunks[2].text and "44 | team 44" not in chunks[0].text


def test_long_passages_split_with_title_in_each_chunk():
    obj = parse_object({"id": "p", "kind": "passage", "title": "Long", "text": "word " * 1000}, "x:1")
    chunks = chunk_object(obj, passage_chars=500)
    assert len(chunks) > 5 and all(c.text.startswith("Document name: Long\nDocument content: ") for c in chunks)


def test_split_identifier():
    assert split_identifier("singer_in_concert") == "singer in concert"
    assert split_identifier("SingerInConcert") == "singer in concert"
    assert split_identifier("PetID") == "pet id"
    assert split_identifier("dog_kennels.Treatment_Types") == "dog kennels treatment types"
