"""Bird's dev tables and questions in the retrieval format of ``../shared/data/retrieval``.

    python -m benchmarks.bird_from_jar JAR_BIRD_DIR OUT_DIR

``JAR_BIRD_DIR`` holds the three files JAR releases for Bird (peterbaile/jar, ``data/bird/``):
``dev_tables.json`` (75 tables: database, table and column names, original and natural),
``dev.json`` (1,534 dev questions with their gold SQL) and ``decomp.json`` (one LLM
decomposition per question, ``table:column`` items, as Spider's ``keywords``). ``OUT_DIR`` gets
``objects.jsonl`` and ``questions.jsonl``, then

    atomgraph retrieve --method arm --no-llm --objects OUT_DIR/objects.jsonl \\
        --questions OUT_DIR/questions.jsonl --k 5

replays the decomposition, as the Spider set does. Bird is not in ``../shared/data``: the data
stays outside the repository; this only converts it.

- an object per table: ``id`` JAR's table key (``db#sep#table``), ``title`` ``db.table``, ``text``
  the natural table name and column names (``customers: Customer ID, client segment, …``),
  ``database``, ``columns`` (the original column names) — Spider's form;
- a question's gold: the tables its gold SQL names after ``FROM`` or ``JOIN`` (its database's
  tables only); a question whose SQL names none is left out and counted.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

_TABLE = re.compile(r"(?:FROM|JOIN)\s+[`\"]?([A-Za-z0-9_ ]+?)[`\"]?(?=\s|$|\)|,)", re.I)


def sql_tables(sql: str, names: dict[str, str]) -> list[str]:
    """The table keys of ``names`` (lower-cased original name → key) that ``sql`` reads from."""
    return sorted({names[t.strip().lower()] for t in _TABLE.findall(sql) if t.strip().lower() in names})


def convert(src: Path, out: Path) -> dict[str, int]:
    tables = json.loads((src / "dev_tables.json").read_text(encoding="utf-8"))
    dev = json.loads((src / "dev.json").read_text(encoding="utf-8"))
    decomp = json.loads((src / "decomp.json").read_text(encoding="utf-8"))
    if len(dev) != len(decomp):
        raise SystemExit(f"dev.json has {len(dev)} questions but decomp.json {len(decomp)} decompositions")
    objects, by_db = [], {}
    for key, t in tables.items():
        objects.append({"id": key, "kind": "table", "title": f"{t['db_id']}.{t['table_name_original']}",
                        "text": f"{t['table_name']}: " + ", ".join(t["column_names"]), "database": t["db_id"],
                        "columns": t["column_names_original"]})
        by_db.setdefault(t["db_id"], {})[t["table_name_original"].lower()] = key
    questions, no_gold = [], 0
    for q, keywords in zip(dev, decomp):
        gold = sql_tables(q["sql"], by_db.get(q["db_id"], {}))
        if not gold:
            no_gold += 1
            continue
        questions.append({"id": f"{q['db_id']}-{q['question_id']}", "question": q["question"], "gold_ids": gold,
                          "keywords": keywords})
    out.mkdir(parents=True, exist_ok=True)
    (out / "objects.jsonl").write_text("".join(json.dumps(o) + "\n" for o in objects), encoding="utf-8")
    (out / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    return {"tables": len(objects), "questions": len(questions), "without_gold": no_gold}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jar_bird_dir", type=Path)
    ap.add_argument("out_dir", type=Path)
    args = ap.parse_args(argv)
    print(json.dumps(convert(args.jar_bird_dir, args.out_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
