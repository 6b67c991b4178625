"""ARM information alignment (§3.2.1): the invariant — an aligned keyword is always a corpus
n-gram — on every path (constrained outputs, snapping, LLM-free), with hostile strings."""

from __future__ import annotations

import json
import random

import pytest

from atomgraph.nodes.arm.information_alignment import (
    align_keyword,
    alignment_request,
    extract_keywords,
    keyword_parts,
    parse_alignment,
    shortlist,
    snap,
)
from atomgraph.nodes.arm.pipeline import MODES, decoding_mode
from atomgraph.prompts.arm import shortlist_choice
from atomgraph.prompts.constraints import choice_grammar, fit_enum, gbnf_literal, request_form
from atomgraph.tools.arm_index import ArmIndex, normalize_ngram
from atomgraph.tools.objects import parse_object
from tests.arm_fixtures import OBJECTS

HOSTILE = [
    "", " ", "\n\t", '"', "\\", '"; DROP TABLE singer; --', "\x00\x01\x7f", "🤖🔥", "日本語のテキスト", "Ωmega ß straße",
    "a" * 5000, "singer " * 400, "(", ")", "[]{}", "{\"ngram\": \"singer\"}", "{\"ngram\": 42}", "{\"ngram\": \"not here at all\"}",
    "```json\n{\"ngram\": \"hans zimmer\"}\n```", "null", "None", "Hans Zimmer!!!", "  HANS   zimmer ", "hans_zimmer",
    "Nolan's film", "\u200b\u200bnolan", "christopher nolen", "psychoterapy", "<script>alert(1)</script>", "' OR '1'='1",
]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    objs = [parse_object(o, f"fixture:{i}") for i, o in enumerate(OBJECTS)]
    return ArmIndex.build(objs, cache_dir=tmp_path_factory.mktemp("arm-cache"))


def _random_strings(n=60, seed=7):
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz   \"'\\:;{}()[]_-éü日🤖\n\t0123456789"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(n)]


def _outputs():
    return HOSTILE + _random_strings() + [None, 17, 3.5, {"ngram": "inception"}, {"other": 1}, ["singer"]]


@pytest.mark.parametrize("max_values", [None, 3])
def test_invariant_on_every_decoding_path(index, max_values):
    keywords = ["Inception composer", "singers:name", "", "zzzz qqqq", "film", *HOSTILE[:12]]
    for kw in keywords:
        req = alignment_request(kw, index, shortlist_size=30, max_values=max_values)
        assert all(index.has_ngram(a) for a in req.allowed)
        for out in _outputs() + list(req.allowed[:3]):
            got = parse_alignment(out, req, index)
            assert got is None or index.has_ngram(got.ngram), (kw, out, got)
        for a in req.allowed[:3]:  # an allowed output is taken as is
            assert parse_alignment(a, req, index).path == "constrained"


def test_invariant_for_snap_shortlist_and_llm_free_paths(index):
    for text in _outputs():
        for s in snap(text, index, limit=5):
            assert index.has_ngram(s.ngram)
        if isinstance(text, str):
            for s in shortlist(text, index, limit=20):
                assert index.has_ngram(s.ngram)
            for a in align_keyword(text, index, per_keyword=3, min_score=0.0):
                assert index.has_ngram(a.ngram)
            for kw in extract_keywords(text, index):
                assert index.has_ngram(kw)


def test_empty_and_wordless_text_aligns_to_nothing(index):
    for text in ["", "   ", "!!!", "\x00", None]:
        assert snap(text, index) == []
    req = alignment_request("", index)
    assert req.allowed == () and shortlist_choice(req.allowed) is None  # nothing to constrain to: free
    assert parse_alignment("", req, index) is None


def test_snap_finds_near_corpus_ngrams(index):
    assert snap("  HANS   zimmer ", index)[0].ngram == "hans zimmer"
    assert snap("christopher nolen", index)[0].ngram.startswith("christopher nolan")
    assert snap("hans_zimmer", index)[0].ngram == "hans zimmer"


def test_shortlist_uses_fuzzy_variants_and_prefixes(index):
    got = [s.ngram for s in shortlist("singers", index, limit=50)]
    assert "singer" in got and any(g.startswith("singer ") for g in got)
    assert shortlist("Journal of Psychotherapy Integration", index)[0].ngram in {"journal of psychotherapy", "psychotherapy integration"}


def test_shortlist_constraint_in_each_backends_request_form(index):
    """The shortlist reaches each server as the kit's Choice in that server's own form."""
    choice = shortlist_choice(alignment_request("Hans Zimmer", index).allowed)
    assert choice.options[0] == "hans zimmer" and all(index.has_ngram(o) for o in choice.options)
    vllm = request_form("vllm", choice)[0]["extra_body"]
    assert vllm == {"structured_outputs": {"choice": list(choice.options)}}
    assert not any(k.startswith("guided_") for k in json.dumps(vllm).split('"'))
    assert request_form("llamacpp", choice)[0]["extra_body"]["grammar"].startswith('root ::= "hans zimmer"')
    schema = request_form("openai", choice)[0]["response_format"]["json_schema"]
    assert schema["strict"] is True and schema["schema"]["required"] == ["ngram"]
    assert schema["schema"]["properties"]["ngram"]["enum"] == list(choice.options)
    assert request_form("other", choice) == ({}, None)


def test_gbnf_escaping():
    assert gbnf_literal('say "hi"') == '"say \\"hi\\""'
    assert gbnf_literal("back\\slash") == '"back\\\\slash"'
    assert gbnf_literal("a\nb\x01") == '"a\\nb\\x01"'
    assert gbnf_literal("日本") == '"日本"'
    assert choice_grammar(["hans zimmer", 'x"y']) == 'root ::= "hans zimmer" | "x\\"y"'


def test_openai_enum_is_capped(index):
    enum = fit_enum([f"ngram {i:04d}" for i in range(2000)])
    assert 250 < len(enum) <= 1000 and enum[0] == "ngram 0000" and sum(map(len, enum)) <= 15000
    assert len(fit_enum([str(i) for i in range(2000)], max_values=1000)) == 1000
    assert request_form("openai", shortlist_choice([f"ngram {i:04d}" for i in range(2000)])) == ({}, None)
    # the request keeps the best-scoring n-grams when the shortlist is longer than the cap
    full = alignment_request("singers", index, shortlist_size=50)
    capped = alignment_request("singers", index, shortlist_size=50, max_values=3)
    assert len(full.allowed) > 3 and list(capped.allowed) == list(full.allowed[:3])
    out = parse_alignment(json.dumps({"ngram": capped.allowed[1]}), capped, index)
    assert out.ngram == capped.allowed[1] and out.path == "constrained"
    off = parse_alignment(json.dumps({"ngram": full.allowed[-1]}), capped, index)  # outside the enum: snapped
    assert off is not None and index.has_ngram(off.ngram)


def test_decoding_mode_follows_the_requested_server_kind():
    assert decoding_mode(None, "vllm")["mode"] == "vllm_choice"
    assert decoding_mode(None, "grammar")["mode"] == "llamacpp_grammar"
    assert decoding_mode(None, "llama.cpp")["backend"] == "llamacpp"
    assert decoding_mode(None, "openai")["mode"] == "openai_json_schema"
    assert decoding_mode(None, "free")["mode"] == "free" and decoding_mode(None)["mode"] == "free"
    assert decoding_mode(None, "local_trie_beam")["mode"] == "free"  # not an in-process model
    assert set(MODES.values()) >= {"vllm_choice", "llamacpp_grammar", "openai_json_schema", "free", "local_trie_beam"}


def test_keyword_parts_and_extraction(index):
    assert keyword_parts("singers:name") == ["singers", "name"]
    assert keyword_parts(" : ") == [] and keyword_parts("film") == ["film"]
    kws = extract_keywords("Who was the first president of the association which published Journal of Psychotherapy Integration?", index)
    assert "journal of psychotherapy" in kws and "first president" in kws
    assert all(k.split()[0] not in {"the", "of", "which"} for k in kws)
    aligned = align_keyword("singers:name", index)
    assert {"singer", "name"} <= {a.ngram for a in aligned}
    assert normalize_ngram("Singer_ID") == "singer id"


@pytest.fixture(scope="module")
def towns_index(tmp_path_factory):
    """Sixty objects where "country", "kind" and "located" are common and a few names are not."""
    towns = [{"id": f"t{i}", "kind": "passage", "title": f"Town {i}",
              "text": f"Town {i} is a kind of small town located in a country with {i} people."} for i in range(56)]
    named = [
        {"id": "bubye", "kind": "passage", "title": "Bubye River",
         "text": "The Bubye River is a river in southern Zimbabwe."},
        {"id": "falls", "kind": "passage", "title": "Victoria Falls", "text": "Victoria Falls is a waterfall in Zimbabwe."},
        {"id": "aschen", "kind": "passage", "title": "Aschenbrödel",
         "text": "Aschenbrödel is a ballet by Johann Strauss II, a composer from Austria."},
        {"id": "strauss", "kind": "passage", "title": "Johann Strauss II", "text": "Johann Strauss II was an Austrian composer."},
    ]
    objs = [parse_object(o, f"towns:{i}") for i, o in enumerate(towns + named)]
    return ArmIndex.build(objs, cache_dir=tmp_path_factory.mktemp("arm-towns"))


def test_informative_keywords_keep_names_and_rare_words_not_generic_ones(towns_index):
    from atomgraph.nodes.arm.information_alignment import informative_keywords

    question = "What kind of waterfall is in the country where the Bubye River is located?"
    every = extract_keywords(question, towns_index)  # question_keywords="corpus": every corpus span
    assert {"kind", "country", "located", "bubye river", "waterfall"} <= set(every)
    kws = informative_keywords(question, towns_index)
    assert "bubye river" in kws and "waterfall" in kws  # a name, a word of one object
    assert not {"kind", "country", "located"} & set(kws)  # in most of the sixty objects
    assert kws == [k for k in every if k in kws]  # the question's order
    # a name the corpus spells otherwise is still a keyword, and aligns to the corpus spelling
    kws = informative_keywords("Who was in charge of the country where the composer of Aschenbrodel lived?", towns_index)
    assert "aschenbrodel" in kws and "country" not in kws
    assert "aschenbrödel" in {a.ngram for a in align_keyword("aschenbrodel", towns_index)}
    # names are all kept past the cap; other words fill it, rarest first
    assert informative_keywords("Did Johann Strauss II know of Victoria Falls?", towns_index, limit=1) == \
        ["johann strauss ii", "victoria falls"]
    # only common words: the rarest are kept rather than nothing
    assert informative_keywords("Which country is located where?", towns_index, limit=1) == ["country"]
    for text in ["", "   ", "?!", None, 42, "the of and"]:
        assert informative_keywords(text, towns_index) == []


def test_the_llm_free_node_takes_the_switch(towns_index):
    from atomgraph.nodes.arm.information_alignment import question_keywords
    from atomgraph.state.arm import ArmContext

    q = "What kind of waterfall is in the country where the composer of Aschenbrodel lived?"
    default = question_keywords(q, towns_index, ArmContext())
    assert ArmContext().question_keywords == "all"
    assert {"kind", "waterfall", "country", "composer", "aschenbrodel"} <= set(default)  # every span, the name too
    corpus = question_keywords(q, towns_index, ArmContext.validated(question_keywords="corpus"))
    assert "country" in corpus and "aschenbrodel" not in corpus and set(corpus) < set(default)
    informative = question_keywords(q, towns_index, ArmContext.validated(question_keywords="informative"))
    assert "aschenbrodel" in informative and "waterfall" in informative and "country" not in informative
    assert question_keywords(q, towns_index, ArmContext.validated(max_keywords=1)) == ["aschenbrodel"]  # names first
    with pytest.raises(Exception):
        ArmContext.validated(question_keywords="some")
