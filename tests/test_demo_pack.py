"""The demo knowledge pack: files well formed, KG Wikidata-shaped, and every demo question's
chain of facts really present (SPARQL over a pyoxigraph store, lookups in the passages)."""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from pyoxigraph import RdfFormat, Store

from atomgraph import demo_pack

WD = "http://www.wikidata.org/entity/"
PREFIXES = """PREFIX wd: <http://www.wikidata.org/entity/>
PREFIX wdt: <http://www.wikidata.org/prop/direct/>
PREFIX p: <http://www.wikidata.org/prop/>
PREFIX ps: <http://www.wikidata.org/prop/statement/>
PREFIX psv: <http://www.wikidata.org/prop/statement/value/>
PREFIX wikibase: <http://wikiba.se/ontology#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX skos: <http://www.w3.org/2004/02/skos/core#>
PREFIX schema: <http://schema.org/>
"""


@pytest.fixture(scope="module")
def kg() -> Store:
    store = Store()
    store.load(path=str(demo_pack.kg_path()), format=RdfFormat.TURTLE)
    return store


@pytest.fixture(scope="module")
def passages() -> list[dict]:
    return demo_pack.load_passages()


@pytest.fixture(scope="module")
def questions() -> dict[str, dict]:
    return {q["id"]: q for q in demo_pack.load_questions()}


def select(store: Store, query: str) -> list[dict[str, str]]:
    return [
        {v.value: (s[v].value if s[v] is not None else None) for v in sol.variables}
        for sol in [store.query(PREFIXES + query)]
        for s in sol
    ]


def values(store: Store, query: str, var: str) -> set[str]:
    return {row[var] for row in select(store, query)}


def qid(store: Store, label: str, hint: str = "") -> str:
    """The one item labelled ``label`` (optionally whose description contains ``hint``)."""
    rows = select(store, f"""SELECT ?e ?d WHERE {{ ?e rdfs:label "{label}"@en ;
        schema:description ?d }}""")
    rows = [r for r in rows if hint in r["d"]]
    assert len(rows) == 1, f"{label!r} ({hint!r}) names {len(rows)} items"
    return "wd:" + rows[0]["e"].removeprefix(WD)


def label_of(store: Store, iri: str) -> str:
    (lab,) = values(store, f"SELECT ?l WHERE {{ <{iri}> rdfs:label ?l }}", "l")
    return lab


def passages_about(passages: list[dict], title: str) -> str:
    texts = [p["text"] for p in passages if p["title"] == title]
    assert texts, f"no passage titled {title!r}"
    return " ".join(texts)


# --- files ---------------------------------------------------------------------------------
def test_pack_files_are_package_data():
    folder = demo_pack.pack_dir()
    for name in ("passages.jsonl", "kg.ttl", "questions.jsonl", "README.md"):
        assert (folder / name).is_file(), name
    assert demo_pack.kg_path() == folder / "kg.ttl"


def test_passages_are_short_nonempty_and_unique(passages):
    assert 60 <= len(passages) <= 120
    for p in passages:
        assert set(p) == {"title", "text", "id"}
        assert p["title"].strip() and p["text"].strip()
        words = len(p["text"].split())
        assert 5 <= words <= 120, (p["title"], words)
        sentences = len(re.findall(r"[.!?](?:\s|$)", p["text"]))
        assert 1 <= sentences <= 4, (p["title"], p["text"])
    ids = [p["id"] for p in passages]
    assert len(set(ids)) == len(ids)
    assert len({p["text"] for p in passages}) == len(passages)
    assert demo_pack.passage_id("A", "b") == demo_pack.passage_id("A", "b") != demo_pack.passage_id("A", "c")


def test_passages_have_same_name_distractors(passages):
    titles = {p["title"] for p in passages}
    assert {"Ulm", "Ulm, Montana", "Max Planck", "Max Planck Society", "Niels Bohr", "Harald Bohr",
            "Aage Bohr", "Curie (unit)", "Ève Curie"} <= titles


def test_questions_are_well_formed(questions):
    assert 5 <= len(questions) <= 8
    kinds = {q["type"] for q in questions.values()}
    assert kinds <= {"bridge", "comparison", "filter", "kg-text"}
    assert {"comparison", "filter", "kg-text", "bridge"} <= kinds
    for q in questions.values():
        assert q["question"].endswith("?") and q["explanation"]
        assert q["answers"] and all(isinstance(a, str) and a for a in q["answers"])
    # one verification per question, below
    assert set(questions) == set(CHECKS)


def test_gold_answers_appear_in_the_pack(kg, passages, questions):
    text = " ".join(p["text"] for p in passages)
    kg_strings = values(kg, "SELECT ?s WHERE { ?x ?p ?s . FILTER(isLiteral(?s)) }", "s")
    for q in questions.values():
        gold = q["answers"][0]
        assert gold in text or gold in kg_strings, (q["id"], gold)


def test_loader_reports_a_broken_file(tmp_path, monkeypatch):
    (tmp_path / "passages.jsonl").write_text('{"title": "A", "text": "ok."}\nnot json\n', encoding="utf-8")
    (tmp_path / "questions.jsonl").write_text('{"id": "x"}\n', encoding="utf-8")
    monkeypatch.setattr(demo_pack, "pack_dir", lambda: tmp_path)
    with pytest.raises(demo_pack.AtomgraphError, match=r"passages.jsonl:2: not valid JSON"):
        demo_pack.load_passages()
    with pytest.raises(demo_pack.AtomgraphError, match=r"questions.jsonl:1: missing question, answers, type"):
        demo_pack.load_questions()
    with pytest.raises(demo_pack.AtomgraphError, match="no kg.ttl"):
        demo_pack.kg_path()


# --- KG shape ------------------------------------------------------------------------------
def test_every_entity_has_english_label_and_description(kg):
    items = values(kg, f"""SELECT DISTINCT ?e WHERE {{
        {{ ?e ?p ?o }} UNION {{ ?s ?p ?e }} FILTER(isIRI(?e) && STRSTARTS(STR(?e), "{WD}Q")) }}""", "e")
    assert len(items) >= 60
    for e in items:
        labels = values(kg, f'SELECT ?l WHERE {{ <{e}> rdfs:label ?l FILTER(LANG(?l) = "en") }}', "l")
        descs = values(kg, f'SELECT ?d WHERE {{ <{e}> schema:description ?d FILTER(LANG(?d) = "en") }}', "d")
        assert len(labels) == 1 and len(descs) == 1, e


def test_every_property_used_is_declared(kg):
    used = values(kg, """SELECT DISTINCT ?wdt WHERE { ?s ?wdt ?o
        FILTER(STRSTARTS(STR(?wdt), "http://www.wikidata.org/prop/direct/")) }""", "wdt")
    assert len(used) >= 25
    for wdt in used:
        pid = wdt.rsplit("/", 1)[1]
        rows = select(kg, f"""SELECT ?l ?alias WHERE {{ wd:{pid} a wikibase:Property ;
            rdfs:label ?l ; skos:altLabel ?alias ; wikibase:directClaim wdt:{pid} }}""")
        assert rows, f"{pid} is used but not declared with a label and aliases"
    aliases = values(kg, 'SELECT ?a WHERE { wd:P19 skos:altLabel ?a }', "a")
    assert {"birthplace", "born in"} <= aliases


def test_quantities_carry_units(kg):
    rows = select(kg, """SELECT ?e ?amount ?unitLabel WHERE {
        ?e p:P2046 ?st . ?st psv:P2046 ?v .
        ?v wikibase:quantityAmount ?amount ; wikibase:quantityUnit ?unit .
        ?unit rdfs:label ?unitLabel }""")
    assert {(label_of(kg, r["e"]), r["amount"], r["unitLabel"]) for r in rows} == {
        ("Paris", "105.4", "square kilometre"), ("Berlin", "891.8", "square kilometre")}
    (height,) = select(kg, """SELECT ?a WHERE { ?e rdfs:label "Ulm Minster"@en ;
        p:P2048/psv:P2048 [ wikibase:quantityAmount ?a ; wikibase:quantityUnit wd:Q11573 ] }""")
    assert height["a"] == "161.53"


def test_founding_years_carry_year_precision(kg):
    rows = select(kg, """SELECT ?e ?t ?prec WHERE { ?e wdt:P571 ?t ;
        p:P571/psv:P571 [ wikibase:timeValue ?t ; wikibase:timePrecision ?prec ] }""")
    truthy = values(kg, "SELECT ?e WHERE { ?e wdt:P571 ?t }", "e")
    assert {r["e"] for r in rows} == truthy
    precision = {label_of(kg, r["e"]): r["prec"] for r in rows}
    assert precision["University of Copenhagen"] == "9" and precision["Max Planck Society"] == "11"


def test_some_well_known_facts(kg):
    einstein = "wd:Q937"
    born = values(kg, f"SELECT ?d WHERE {{ {einstein} wdt:P569 ?d }}", "d")
    assert born == {"1879-03-14T00:00:00Z"}
    assert label_of(kg, WD + "Q183") == "Germany"
    assert values(kg, "SELECT ?c WHERE { wd:Q183 wdt:P36 ?c }", "c") == {WD + "Q64"}
    pops = values(kg, "SELECT ?n WHERE { wd:Q64 wdt:P1082 ?n }", "n")
    assert len(pops) == 1 and 3_000_000 < float(pops.pop()) < 4_500_000
    # capital and capital-of agree both ways
    rows = select(kg, "SELECT ?c ?k WHERE { ?c wdt:P36 ?k }")
    for r in rows:
        assert kg.query(PREFIXES + f"ASK {{ <{r['k']}> wdt:P1376 <{r['c']}> }}")


# --- each demo question's chain ------------------------------------------------------------
def _year(dt: str) -> int:
    return datetime.fromisoformat(dt.replace("Z", "+00:00")).year


def check_demo_1(kg, passages, q):
    ulm = values(kg, "SELECT ?c WHERE { wd:Q937 wdt:P19 ?c }", "c")
    assert {label_of(kg, c) for c in ulm} == {"Ulm"}
    church = values(kg, f"SELECT ?l WHERE {{ ?x wdt:P131 <{ulm.pop()}> ; wdt:P31 wd:Q16970 ; rdfs:label ?l }}", "l")
    assert church == {q["answers"][0]}
    text = passages_about(passages, "Ulm Minster")
    assert "tallest church in the world" in text and "Ulm" in text
    assert "Ulm" in passages_about(passages, "Albert Einstein")


def check_demo_2(kg, passages, q):
    advisor = values(kg, "SELECT ?a WHERE { wd:Q40904 wdt:P184 ?a }", "a")
    assert {label_of(kg, a) for a in advisor} == {"Arnold Sommerfeld"}
    place = values(kg, f"SELECT ?l WHERE {{ <{advisor.pop()}> wdt:P20/rdfs:label ?l }}", "l")
    assert place == {q["answers"][0]}
    assert "under Arnold Sommerfeld" in passages_about(passages, "Werner Heisenberg")
    assert "died in Munich" in passages_about(passages, "Arnold Sommerfeld")


def check_demo_3(kg, passages, q):
    assert "teaching diploma" in passages_about(passages, "Albert Einstein")
    assert re.search(r"ETH Zurich, and received his teaching diploma", passages_about(passages, "Albert Einstein"))
    assert "doctorate there in 1911" in passages_about(passages, "Niels Bohr")
    eth, ucph = qid(kg, "ETH Zurich"), qid(kg, "University of Copenhagen")
    assert kg.query(PREFIXES + f"ASK {{ wd:Q937 wdt:P69 {eth} . wd:Q7085 wdt:P69 {ucph} }}")
    founded = {
        label_of(kg, r["u"]): _year(r["d"])
        for r in select(kg, f"SELECT ?u ?d WHERE {{ VALUES ?u {{ {eth} {ucph} }} ?u wdt:P571 ?d }}")
    }
    assert founded == {"ETH Zurich": 1855, "University of Copenhagen": 1479}
    assert min(founded, key=founded.get) == q["answers"][0]


def check_demo_4(kg, passages, q):
    assert "formulated by Werner Heisenberg" in passages_about(passages, "Uncertainty principle")
    assert "wave equation of quantum mechanics" in passages_about(passages, "Schrödinger equation")
    rows = select(kg, """SELECT ?name ?born WHERE {
        VALUES ?law { "uncertainty principle"@en "Schrödinger equation"@en }
        ?w rdfs:label ?law ; wdt:P61 ?who . ?who rdfs:label ?name ; wdt:P569 ?born }""")
    births = {r["name"]: r["born"] for r in rows}
    assert set(births) == {"Werner Heisenberg", "Erwin Schrödinger"}
    assert min(births, key=births.get) == q["answers"][0]


def check_demo_5(kg, passages, q):
    rows = select(kg, """SELECT ?name ?cityLabel ?country WHERE {
        VALUES ?name { "Albert Einstein"@en "Max Planck"@en "Niels Bohr"@en }
        ?who rdfs:label ?name ; wdt:P19 ?city . ?city rdfs:label ?cityLabel .
        OPTIONAL { ?country wdt:P36 ?city } }""")
    assert {r["name"]: r["cityLabel"] for r in rows} == {
        "Albert Einstein": "Ulm", "Max Planck": "Kiel", "Niels Bohr": "Copenhagen"}
    assert [r["name"] for r in rows if r["country"]] == q["answers"]
    assert "capital and most populous city of Denmark" in passages_about(passages, "Copenhagen")


def check_demo_6(kg, passages, q):
    text = passages_about(passages, "Max Planck")
    assert "doctorate at the University of Munich in 1879" in text
    lmu = qid(kg, "Ludwig Maximilian University of Munich")
    assert "University of Munich" in values(kg, f"SELECT ?a WHERE {{ {lmu} skos:altLabel ?a }}", "a")
    assert kg.query(PREFIXES + f"ASK {{ wd:Q9021 wdt:P69 {lmu} }}")
    (founded,) = values(kg, f"SELECT ?d WHERE {{ {lmu} wdt:P571 ?d }}", "d")
    assert str(_year(founded)) == q["answers"][0]


def check_demo_7(kg, passages, q):
    (husband,) = values(kg, "SELECT ?h WHERE { wd:Q7186 wdt:P26 ?h }", "h")
    assert label_of(kg, husband) == "Pierre Curie"
    (city,) = values(kg, f"SELECT ?c WHERE {{ <{husband}> wdt:P19 ?c ; wdt:P20 ?c }}", "c")
    assert label_of(kg, city) == "Paris"
    assert "street accident" in passages_about(passages, "Pierre Curie")
    (row,) = select(kg, f"""SELECT ?a ?u WHERE {{ <{city}> p:P2046/psv:P2046 ?v .
        ?v wikibase:quantityAmount ?a ; wikibase:quantityUnit/rdfs:label ?u }}""")
    assert (row["a"], row["u"]) == (q["answers"][0], "square kilometre")


def check_demo_8(kg, passages, q):
    rows = select(kg, """SELECT ?name ?born WHERE { wd:Q7186 wdt:P40 ?c .
        ?c rdfs:label ?name ; wdt:P569 ?born } ORDER BY ?born""")
    assert [r["name"] for r in rows] == ["Irène Joliot-Curie", "Ève Curie"]
    elder = rows[0]["name"]
    assert kg.query(PREFIXES + f'ASK {{ ?c rdfs:label "{elder}"@en ; wdt:P166 wd:Q44585 }}')
    text = passages_about(passages, elder)
    assert re.search(r"Nobel Prize in Chemistry in " + q["answers"][0], text)
    assert "never received a Nobel Prize" in passages_about(passages, "Ève Curie")


CHECKS = {f"demo-{i}": globals()[f"check_demo_{i}"] for i in range(1, 9)}


@pytest.mark.parametrize("qid_", sorted(CHECKS))
def test_demo_question_chain_is_in_the_pack(kg, passages, questions, qid_):
    CHECKS[qid_](kg, passages, questions[qid_])
