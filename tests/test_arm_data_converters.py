"""The converter that brings Bird (JAR's release) into ARM's retrieval format."""

from __future__ import annotations

import json

from benchmarks.bird_from_jar import convert, sql_tables


def test_sql_tables_reads_from_and_join_of_the_questions_database_only():
    names = {"frpm": "db#sep#frpm", "schools": "db#sep#schools", "satscores": "db#sep#satscores"}
    sql = ("SELECT T2.Phone FROM frpm AS T1 INNER JOIN `schools` AS T2 ON T1.CDSCode = T2.CDSCode "
           "WHERE T1.x IN (SELECT y FROM other)")
    assert sql_tables(sql, names) == ["db#sep#frpm", "db#sep#schools"]
    assert sql_tables("SELECT 1", names) == []


def test_bird_conversion_writes_spiders_form_and_counts_questions_without_gold(tmp_path):
    src = tmp_path / "jar"
    src.mkdir()
    (src / "dev_tables.json").write_text(json.dumps({
        "db#sep#customers": {"db_id": "db", "table_name_original": "customers", "table_name": "customers",
                             "column_names_original": ["CustomerID", "Segment"],
                             "column_names": ["Customer ID", "client segment"], "column_types": ["text", "text"]}}))
    (src / "dev.json").write_text(json.dumps([
        {"question_id": 0, "db_id": "db", "question": "How many customers?", "sql": "SELECT COUNT(*) FROM customers"},
        {"question_id": 1, "db_id": "db", "question": "Anything?", "sql": "SELECT 1"}]))
    (src / "decomp.json").write_text(json.dumps([["customers"], ["anything"]]))
    assert convert(src, tmp_path / "out") == {"tables": 1, "questions": 1, "without_gold": 1}
    obj = json.loads((tmp_path / "out" / "objects.jsonl").read_text())
    assert obj == {"id": "db#sep#customers", "kind": "table", "title": "db.customers",
                   "text": "customers: Customer ID, client segment", "database": "db",
                   "columns": ["CustomerID", "Segment"]}
    q = json.loads((tmp_path / "out" / "questions.jsonl").read_text())
    assert q == {"id": "db-0", "question": "How many customers?", "gold_ids": ["db#sep#customers"],
                 "keywords": ["customers"]}

