"""Small real objects for the ARM tests: passages with title links, and two databases of tables."""

from __future__ import annotations

import json
from pathlib import Path

PASSAGES = [
    {"id": "p-nolan", "kind": "passage", "title": "Christopher Nolan",
     "text": "Christopher Nolan is a British-American film director. He directed Inception and Oppenheimer."},
    {"id": "p-inception", "kind": "passage", "title": "Inception",
     "text": "Inception is a 2010 science fiction film written and directed by Christopher Nolan, scored by Hans Zimmer."},
    {"id": "p-zimmer", "kind": "passage", "title": "Hans Zimmer",
     "text": "Hans Zimmer is a German film score composer born in Frankfurt."},
    {"id": "p-frankfurt", "kind": "passage", "title": "Frankfurt",
     "text": "Frankfurt is a city on the Main river in Hesse, Germany, known for its stock exchange."},
    {"id": "p-psy", "kind": "passage", "title": "Journal of Psychotherapy Integration",
     "text": "The Journal of Psychotherapy Integration is a quarterly journal published by the American Psychological Association."},
    {"id": "p-apa", "kind": "passage", "title": "American Psychological Association",
     "text": "The American Psychological Association is a professional organization; its first president was G. Stanley Hall."},
    {"id": "p-hell", "kind": "passage", "title": "Hell",
     "text": "Hell is an afterlife location in religion and folklore."},
    {"id": "p-dice", "kind": "passage", "title": "Demon Dice",
     "text": "Demon Dice is a collectible dice game; go to hell, said no one. \"Quoted\" text and a back\\slash."},
]

TABLES = [
    {"id": "concert_singer#sep#singer", "kind": "table", "title": "concert_singer.singer", "text": "singer: singer id, name, country, age",
     "database": "concert_singer", "columns": ["Singer_ID", "Name", "Country", "Age"],
     "rows": [["1", "Joe Sharp", "Netherlands", "52"], ["2", "Timbaland", "United States", "32"]]},
    {"id": "concert_singer#sep#concert", "kind": "table", "title": "concert_singer.concert", "text": "concert: concert id, concert name, theme, year",
     "database": "concert_singer", "columns": ["concert_ID", "concert_Name", "Theme", "Year"]},
    {"id": "concert_singer#sep#singer_in_concert", "kind": "table", "title": "concert_singer.singer_in_concert",
     "text": "singer in concert: concert id, singer id", "database": "concert_singer", "columns": ["concert_ID", "Singer_ID"],
     "rows": [["1", "2"], ["2", "1"]]},
    {"id": "pets_1#sep#Pets", "kind": "table", "title": "pets_1.Pets", "text": "pets: pet id, pet type, pet age, weight",
     "database": "pets_1", "columns": ["PetID", "PetType", "pet_age", "weight"]},
    {"id": "pets_1#sep#Has_Pet", "kind": "table", "title": "pets_1.Has_Pet", "text": "has pet: student id, pet id",
     "database": "pets_1", "columns": ["StuID", "PetID"]},
]

OBJECTS = PASSAGES + TABLES

QUESTIONS = [
    {"id": "q1", "question": "Where was the composer of the film Inception born?", "gold_ids": ["p-inception", "p-zimmer"]},
    {"id": "q2", "question": "Who was the first president of the association which published Journal of Psychotherapy Integration?",
     "gold_ids": ["p-psy", "p-apa"], "answers": ["G. Stanley Hall"]},
    {"id": "q3", "question": "Show the names of singers and the concerts they performed in.",
     "gold_ids": ["concert_singer#sep#singer", "concert_singer#sep#concert", "concert_singer#sep#singer_in_concert"],
     "keywords": ["singers:name", "concerts:concert name"]},
    {"id": "q4", "question": "How many pets are older than 3?", "gold_ids": ["pets_1#sep#Pets"], "keywords": ["pets:pet age"]},
]


def write_jsonl(path: Path, items) -> Path:
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in items), encoding="utf-8")
    return path
