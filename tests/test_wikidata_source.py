"""WikidataSource against a real Oxigraph SPARQL server over loopback and against the
in-process pyoxigraph store, both loaded with tests/fixtures/wikidata_test.ttl."""

from __future__ import annotations

import re
import socket
import time

import pytest
from oxigraph_server import TEST_KG, oxigraph_endpoint, oxigraph_server  # noqa: F401 - fixtures

from atomgraph.errors import ConfigError, SourceError, SourceUnavailable
from atomgraph.settings import Settings
from atomgraph.text import split_entities
from atomgraph.tools import build_sources
from atomgraph.tools import sparql_queries as q
from atomgraph.tools.sparql_backends import OxigraphFileStore, SparqlEndpoint
from atomgraph.tools.wikidata_source import WikidataSource, wikidata_from_settings

HOSTILE = [
    'Sandbox "} ; DELETE WHERE { ?s ?p ?o } #',
    'x" } UNION { ?s ?p ?o } #',
    "Robert'); DROP TABLE Students;--",
    'line one\nline "two" {braces} \\ back\\slash \\u0022',
]
HOSTILE_IDS = ["Q4115189", "Q4115189", "Q13406268", "Q15397819"]


@pytest.fixture(scope="module")
def file_source():
    return WikidataSource(OxigraphFileStore(TEST_KG))


@pytest.fixture(scope="module")
def endpoint_source(oxigraph_endpoint):
    backend = SparqlEndpoint(oxigraph_endpoint, user_agent="atomgraph-tests/0.1 (test suite)", timeout=10, retries=2)
    return WikidataSource(backend)


@pytest.fixture(params=["endpoint", "file"])
def source(request):
    return request.getfixturevalue(f"{request.param}_source")


def texts(evidence):
    return [e.text for e in evidence]


# --- operations --------------------------------------------------------------------------
def test_find_entities_exact_alias_then_prefix_with_descriptions(source):
    ev = source.find_entities("paris", limit=5)
    assert [e.id for e in ev] == ["Q90", "Q830149", "Q47899"]  # exact (most linked first), then prefix
    assert ev[0].metadata["match"] == "exact" and ev[2].metadata["match"] == "prefix"
    assert "capital and largest city of France" in ev[0].text
    assert ev[0].url == "https://www.wikidata.org/wiki/Q90" and ev[0].source == "wikidata"
    alias = source.find_entities("William Henry Gates III")
    assert alias[0].id == "Q5284" and alias[0].metadata["match"] == "alias"
    assert source.find_entities("Q76")[0].title == "Barack Obama"
    assert source.find_entities("no such thing at all") == []


def test_relate_forward_and_reverse(source):
    children = source.relate("Barack Obama", "children")
    assert sorted(texts(children)) == ["(Barack Obama, child, Malia Obama)", "(Barack Obama, child, Sasha Obama)"]
    meta = children[0].metadata
    assert meta["head_id"] == "Q76" and meta["relation_id"] == "P40" and meta["datatype"] == "item"
    assert meta["tail_id"] in {"Q15070044", "Q15070048"} and meta["direction"] == "forward"
    # reverse: who has Manuel Valls as author -> the book
    books = source.relate("Manuel Valls", "author")
    assert "(L'exigence, author, Manuel Valls)" in texts(books)
    assert books[0].metadata["direction"] == "reverse"
    assert "(The Rachel Maddow Show, presenter, Rachel Maddow)" in texts(source.relate("Q555", "host"))


def test_attribute_dates_and_quantities(source):
    assert texts(source.attribute("Barack Obama", "date of birth")) == ["(Barack Obama, date of birth, 4 August 1961)"]
    assert texts(source.attribute("Xavier Valls", "born on")) == ["(Xavier Valls, date of birth, 1923)"]  # year precision
    height = source.attribute("Barack Obama", "height")
    assert texts(height) == ["(Barack Obama, height, 1.87 metre)"]  # deprecated 1.85 left out
    assert height[0].metadata["unit_id"] == "Q11573" and height[0].metadata["value"] == "1.87"
    assert texts(source.attribute("Paris", "population")) == ["(Paris, population, 2145906)"]  # unit "1"
    assert texts(source.attribute("Microsoft", "inception")) == ["(Microsoft, inception, 4 April 1975)"]


def test_relations_between(source):
    ev = source.relations_between("Malia Obama", "Barack Obama")
    assert set(texts(ev)) == {"(Malia Obama, father, Barack Obama)", "(Barack Obama, child, Malia Obama)"}
    assert {e.metadata["relation_id"] for e in ev} == {"P22", "P40"}


def test_filter_entities(source):
    people = ["Lionel Messi", "Steven Jobs", "Bill Gates"]
    born_1955 = source.filter_entities(people, "date of birth", "=", "1955")
    assert sorted(e.metadata["head_label"] for e in born_1955) == ["Bill Gates", "Steve Jobs"]
    before = source.filter_entities(people, "date of birth", "<", "1955-06-01")
    assert [e.metadata["head_label"] for e in before] == ["Steve Jobs"]
    tall = source.filter_entities(["Barack Obama"], "height", ">=", "1.8")
    assert texts(tall) == ["(Barack Obama, height, 1.87 metre)"]
    citizens = source.filter_entities(["Manuel Valls", "Bill Gates"], "citizenship", "=", "Spain")
    assert texts(citizens) == ["(Manuel Valls, country of citizenship, Spain)"]
    assert source.filter_entities(people, "citizenship", "contains", "argent")[0].metadata["head_id"] == "Q615"
    with pytest.raises(ValueError, match="unknown filter operator"):
        source.filter_entities(people, "date of birth", "~", "1955")


def test_search_returns_entity_and_its_facts_not_cut_to_k(source):
    ev = source.search("When was Barack Obama born?", k=3)
    assert ev[0].id == "Q76" and ev[0].metadata["kind"] == "entity"
    assert ev[1].text == "(Barack Obama, date of birth, 4 August 1961)"  # most relevant fact first
    assert len(ev) > 3
    assert not any("VIAF" in e.text for e in ev)  # external identifiers left out
    praia = source.search("the sovereign state where Praia is located")
    assert "(Praia, country, Cape Verde)" in texts(praia)
    assert source.search("zzzz qqqq") == []


def test_operate_maps_the_three_operators(source):
    found = source.operate("Search", ["Paris", "American media personality"], "Which Paris?")
    assert found[0].id == "Q47899"
    rel = source.operate("Relate", ["Barack Obama", "child"], "Who are Obama's children?")
    assert len(rel) == 2 and all(e.metadata["relation_id"] == "P40" for e in rel)
    # x is an entity: the relation between the two
    between = source.operate("Relate", ["Malia Obama", "Barack Obama"], "How is Malia related to Barack?")
    assert "(Malia Obama, father, Barack Obama)" in texts(between)
    # a list of heads, as a substituted answer
    fathers = source.operate("Relate", ["['Malia Obama', 'Sasha Obama']", "father"], "q")
    assert sorted(e.metadata["head_label"] for e in fathers) == ["Malia Obama", "Sasha Obama"]
    filt = source.operate("Filter", ["['Lionel Messi', 'Steven Jobs', 'Bill Gates']", "born in 1955"], "q")
    assert {e.metadata["entity"] for e in filt} == {"Lionel Messi", "Steven Jobs", "Bill Gates"}
    assert all(e.metadata["relation_label"] in {"date of birth", "place of birth"} for e in filt)
    assert {e.metadata["head_label"]: e.metadata["satisfies"] for e in filt} == {
        "Lionel Messi": False, "Steve Jobs": True, "Bill Gates": True}
    # nothing structured: an empty answer list (ATOMR's operator failure), no dump of Praia's facts
    assert source.operate("Relate", ["Praia", "zzz unknown relation"], "q") == []
    # fact_dump=True (a switch, off): the entity and its facts instead
    dumping = WikidataSource(source.backend, fact_dump=True)
    fallback = dumping.operate("Relate", ["Praia", "zzz unknown relation"], "q")
    assert fallback and fallback[0].id == "Q3751"


def test_operate_answers_a_short_list_from_a_typed_program(source):
    from atomgraph.tools.wikidata_source import MAX_ANSWERS, QueryProgram

    kids = source.run_program(QueryProgram(entity="Barack Obama", relations=["child"]))
    assert sorted(f.tail_label for f in kids) == ["Malia Obama", "Sasha Obama"]
    # a two-hop path: the father of Obama's children
    fathers = source.run_program(QueryProgram(entity="Barack Obama", relations=["child", "father"]))
    assert {f.tail_label for f in fathers} == {"Barack Obama"}
    # a constraint on the values
    born = source.run_program(QueryProgram(entity="Steve Jobs", relations=["date of birth"], constraint="before 1960"))
    assert [f.tail_label for f in born] == ["24 February 1955"]
    assert source.run_program(QueryProgram(entity="Steve Jobs", relations=["date of birth"], constraint="after 1960")) == []
    # at most 10 answers, however many facts match
    capped = WikidataSource(source.backend, max_answers=1)
    assert len(capped.operate("Relate", ["Barack Obama", "child"], "q")) == 1 and MAX_ANSWERS == 10
    with pytest.raises(ValueError):
        QueryProgram(entity="x", relations=["a", "b", "c", "d"])


def test_a_model_written_program_compiles_or_says_why_not(source):
    """answer_program: the answers of a program that compiles (empty when the graph holds
    none: no fact dump); ProgramError naming what the graph lacks otherwise. The rule-built
    path (run_program, operate) answers nothing for the same programs."""
    from atomgraph.tools.wikidata_source import ProgramError, QueryProgram

    kids = source.answer_program(QueryProgram(entity="Barack Obama", relations=["children"]))
    assert sorted(e.metadata["tail_label"] for e in kids) == ["Malia Obama", "Sasha Obama"]
    assert all(e.text.startswith("(Barack Obama, child, ") for e in kids)
    # compiles, finds nothing: empty, not an error
    assert source.answer_program(QueryProgram(entity="Steve Jobs", relations=["date of birth"],
                                              constraint="after 1960")) == []
    for program, why in [
        (QueryProgram(entity="Nobody Atall Person", relations=["child"]), "no item of the graph is named"),
        (QueryProgram(entity="Barack Obama", relations=["zzz qqq"]), "no property of the graph is named 'zzz qqq'"),
        (QueryProgram(entity="Barack Obama", relations=[]), "follows no relation"),
    ]:
        with pytest.raises(ProgramError, match=why):
            source.answer_program(program)
        assert source.run_program(program) == []
    # what a model writes for "no constraint", and blank relations, are read as such
    p = QueryProgram.model_validate({"entity": "  Barack  Obama ", "relations": ["child", " "], "constraint": "null"})
    assert (p.entity, p.relations, p.constraint) == ("Barack Obama", ["child"], None)
    with pytest.raises(ValueError):
        QueryProgram(entity="   ", relations=["child"])


@pytest.mark.parametrize(
    "entity, condition, facts",
    [
        # one candidate at a time, as ATOMR's Filter asks: the attribute the condition names,
        # each value marked with whether it meets the condition
        ("Steve Jobs", "born before June 1955", {"(Steve Jobs, date of birth, 24 February 1955)": True}),
        ("Bill Gates", "was born before June 1955", {"(Bill Gates, date of birth, 28 October 1955)": False}),
        ("Lionel Messi", "not born in 1955", {"(Lionel Messi, date of birth, 24 June 1987)": True}),
        ("Barack Obama", "height over 1.8 metres", {"(Barack Obama, height, 1.87 metre)": True}),
        ("Paris", "has a population of more than 2 million", {"(Paris, population, 2145906)": True}),
        ("Manuel Valls", "whose nationality is Spain", {"(Manuel Valls, country of citizenship, Spain)": True,
                                                         "(Manuel Valls, country of citizenship, France)": False}),
        ("Bill Gates", "is a citizen of Spain", {"(Bill Gates, country of citizenship, United States)": False}),
        ("Microsoft", "founded before 1980", {"(Microsoft, inception, 4 April 1975)": True,
                                               "(Microsoft, founded by, Bill Gates)": None}),
        ("Q5284", "born in Seattle", {"(Bill Gates, date of birth, 28 October 1955)": None}),  # a date is no city
    ],
)
def test_operate_filter_states_the_conditions_attribute_per_entity(file_source, entity, condition, facts):
    ev = file_source.operate("Filter", [entity, condition], f"Which of them is {condition}?")
    assert {e.text: e.metadata["satisfies"] for e in ev} == facts
    assert all(e.metadata["entity"] == entity and e.metadata["filter"] == condition for e in ev)
    assert [e.metadata["satisfies"] for e in ev] == sorted((e.metadata["satisfies"] for e in ev),
                                                            key=lambda m: {True: 0, None: 1, False: 2}[m])


def test_operate_filter_on_the_real_endpoint_matches_the_file_store(endpoint_source, file_source):
    args = ["['Lionel Messi', 'Steve Jobs', 'Bill Gates']", "born after 1950"]
    over_http = endpoint_source.operate("Filter", args, "q")
    assert [(e.text, e.metadata["satisfies"]) for e in over_http] == [
        (e.text, e.metadata["satisfies"]) for e in file_source.operate("Filter", args, "q")]
    assert sorted(e.metadata["entity"] for e in over_http if e.metadata["satisfies"]) == [
        "Bill Gates", "Lionel Messi", "Steve Jobs"]


WHOLE = '["Paris, Texas", "Paris, France", "Pride and Prejudice"]'


def test_operate_filter_takes_each_candidate_whole(source):
    """Filter's candidates are whole answers, never split again on "," or
    " and " ("Paris, Texas" is not "Paris" and "Texas"; "Pride and Prejudice" is one book)."""
    ev = source.operate("Filter", [WHOLE, "located in the United States"], "Which of them is in the US?")
    assert [(e.metadata["entity"], e.text, e.metadata["satisfies"]) for e in ev] == [
        ("Paris, Texas", "(Paris, country, United States)", True),
        ("Paris, France", "(Paris, country, France)", False)]  # the novel has no country: nothing
    book = source.operate("Filter", ["Pride and Prejudice", "author is Jane Austen"], "q")
    assert [(e.metadata["entity"], e.text, e.metadata["satisfies"]) for e in book] == [
        ("Pride and Prejudice", "(Pride and Prejudice, author, Jane Austen)", True)]
    # the same list through the public method, and a literal comma text is one candidate (no item
    # of the graph has that name), as the authors take a literal argument
    assert [e.text for e in source.filter_candidates(["Paris, Texas", "Paris, France", "Pride and Prejudice"],
                                                     "located in the United States")] == [e.text for e in ev]
    assert source.operate("Filter", ["Paris, Texas, Paris, France", "located in the United States"], "q") == []


def test_operate_filter_without_a_known_attribute_keeps_overlapping_facts(file_source):
    # no comparison word: the condition's words name the attribute ("married" → spouse)
    ev = file_source.operate("Filter", ["Barack Obama", "married to Michelle Obama"], "q")
    assert [e.text for e in ev] == ["(Barack Obama, spouse, Michelle Obama)"] and ev[0].metadata["satisfies"] is None
    # no property named at all: nothing (fact_dump=True: the entity's facts sharing a word with it)
    assert file_source.operate("Filter", ["Praia", "a city of Cape Verde country"], "q") == []
    ev = WikidataSource(file_source.backend, fact_dump=True).operate("Filter", ["Praia", "a city of Cape Verde country"], "q")
    assert {e.text for e in ev} == {"(Praia, country, Cape Verde)", "(Praia, instance of, city)"}
    assert sorted(file_source.condition_properties("born")) == [("P19", "place of birth"), ("P569", "date of birth")]
    assert file_source.condition_properties("zzz qqq") == []


def test_split_entities():
    assert split_entities("['Malia Obama', 'Sasha Obama']") == ["Malia Obama", "Sasha Obama"]
    assert split_entities("Messi; Jobs") == ["Messi", "Jobs"]
    assert split_entities("Bill Gates and Steve Jobs") == ["Bill Gates", "Steve Jobs"]
    assert split_entities("[unbalanced") == ["unbalanced"]


# --- injection safety --------------------------------------------------------------------
def _mask(query: str) -> str:
    return re.sub(r'"(?:[^"\\]|\\.)*"', '"…"', query)


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_keep_the_query_shape(name):
    benign = q.entities_by_exact_name(["Barack Obama"], "en", 10)
    hostile = q.entities_by_exact_name([name], "en", 10)
    assert _mask(hostile) == _mask(benign)
    assert _mask(q.entities_by_name_scan(name, "en", 5)) == _mask(q.entities_by_name_scan("obama", "en", 5))
    assert _mask(q.properties_by_exact_name([name], "en")) == _mask(q.properties_by_exact_name(["child"], "en"))
    assert "\n" not in q.literal(name)


@pytest.mark.parametrize("name,qid", list(zip(HOSTILE, HOSTILE_IDS)))
def test_hostile_names_on_the_real_endpoint_find_their_entity_and_change_nothing(
    endpoint_source, oxigraph_server, name, qid
):
    before = oxigraph_server.count_triples()
    ev = endpoint_source.find_entities(name)
    assert ev and ev[0].id == qid
    assert endpoint_source.relate(name, "country")  # its one fact
    assert all(e.metadata["head_id"] == "Q76" for e in endpoint_source.relate("Barack Obama", name))
    endpoint_source.search(name)
    endpoint_source.filter_entities([name], name, "=", name)
    endpoint_source.operate("Filter", [name, name], name)
    assert oxigraph_server.count_triples() == before


def test_hostile_relation_and_values_answer_nothing(endpoint_source):
    assert endpoint_source.relate("Barack Obama", '"} ; DROP ALL ; #') == []
    assert endpoint_source.relations_between("Barack Obama", "} UNION { ?s ?p ?o }") == []


def test_invalid_ids_and_languages_are_rejected():
    for bad in ["Q", "Q0", "Q76 }", "q76", "Q76\n", "P40", "wd:Q76"]:
        with pytest.raises(q.QueryInputError):
            q.check_qid(bad)
    for bad in ["P", "P40 .", "Q40"]:
        with pytest.raises(q.QueryInputError):
            q.check_pid(bad)
    for bad in ["", "EN", "en\"", "e", "en-", "en } ", "toolongx"]:
        with pytest.raises(q.QueryInputError):
            q.check_lang(bad)
    assert q.check_lang("pt-br") == "pt-br"
    with pytest.raises(q.QueryInputError):
        q.forward_values(["Q76 } ; DROP ALL"], ["P40"], "en", 5)
    with pytest.raises(q.QueryInputError):
        WikidataSource(OxigraphFileStore(TEST_KG), language='en"')
    with pytest.raises(ConfigError, match="wikidata_language"):
        wikidata_from_settings(Settings.load(wikidata_file=str(TEST_KG), wikidata_language="e n"))


def test_literal_escaping():
    assert q.literal('a"b\\c\nd\te\'') == '"a\\"b\\\\c\\nd\\te\\\'"'
    assert q.literal("bell\x07") == '"bell\\u0007"'


# --- failures, settings ------------------------------------------------------------------
def test_unreachable_endpoint_is_a_source_error_within_bounded_time():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    backend = SparqlEndpoint(f"http://127.0.0.1:{port}/query", user_agent="atomgraph-tests", timeout=2, retries=3,
                             base_delay=0.1)
    source = WikidataSource(backend)
    start = time.monotonic()
    with pytest.raises(SourceError, match=r"failed after 3 attempts: connection failed"):
        source.find_entities("Barack Obama")
    assert time.monotonic() - start < 20  # refused at once; 0.3 s of backoff; the bound is for a loaded machine


def test_retry_after_is_honoured_by_the_endpoint_backend(monkeypatch):
    import urllib.error
    from email.message import Message

    sleeps, calls = [], []
    backend = SparqlEndpoint("http://127.0.0.1:9/query", user_agent="t", retries=3, sleep=sleeps.append)

    def once(query):
        calls.append(query)
        if len(calls) == 1:
            headers = Message()
            headers["Retry-After"] = "4"
            raise urllib.error.HTTPError(backend.url, 429, "Too Many Requests", headers, None)
        return {"head": {"vars": []}, "results": {"bindings": []}}

    monkeypatch.setattr(backend, "_once", once)
    assert backend.select("SELECT * WHERE {}") == [] and sleeps == [4.0]


def test_from_settings_file_and_endpoint(tmp_path):
    src = wikidata_from_settings(Settings.load(wikidata_file=str(TEST_KG)))
    assert isinstance(src.backend, OxigraphFileStore) and src.fuzzy
    assert src.name == "wikidata" and src.kind == "kg" and src.description
    remote = wikidata_from_settings(Settings.load())
    assert isinstance(remote.backend, SparqlEndpoint) and not remote.fuzzy  # no label scans on the public WDQS
    assert "atomgraph" in remote.backend.user_agent
    missing = build_sources(Settings.load(wikidata_file=str(tmp_path / "nope.ttl")), ["wikidata"])
    assert "does not exist" in missing.unavailable["wikidata"]
    bad = tmp_path / "bad.ttl"
    bad.write_text("this is not turtle")
    with pytest.raises(SourceUnavailable, match="could not be loaded"):
        OxigraphFileStore(bad)
