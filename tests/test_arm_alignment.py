"""ARM information alignment (§3.2.1): the invariant — an aligned keyword is always a corpus
n-gram — on every path (constrained outputs, snapping, LLM-free), with hostile strings."""

from __future__ import annotations

import json
import random

import pytest

from atomgraph.nodes.arm.alignment import (
    MODES,
    align_keyword,
    build_alignment_request,
    extract_keywords,
    fit_enum,
    gbnf_grammar,
    gbnf_literal,
    keyword_parts,
    openai_json_schema_body,
    parse_alignment,
    shortlist,
    snap,
    vllm_choice_body,
)
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


@pytest.mark.parametrize("mode", MODES)
def test_invariant_on_every_decoding_path(index, mode):
    keywords = ["Inception composer", "singers:name", "", "zzzz qqqq", "film", *HOSTILE[:12]]
    for kw in keywords:
        req = build_alignment_request(kw, index, mode, shortlist_size=30)
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
    req = build_alignment_request("", index, "vllm_choice")
    assert req.mode == "free" and req.allowed == ()
    assert parse_alignment("", req, index) is None


def test_snap_finds_near_corpus_ngrams(index):
    assert snap("  HANS   zimmer ", index)[0].ngram == "hans zimmer"
    assert snap("christopher nolen", index)[0].ngram.startswith("christopher nolan")
    assert snap("hans_zimmer", index)[0].ngram == "hans zimmer"


def test_shortlist_uses_fuzzy_variants_and_prefixes(index):
    got = [s.ngram for s in shortlist("singers", index, limit=50)]
    assert "singer" in got and any(g.startswith("singer ") for g in got)
    assert shortlist("Journal of Psychotherapy Integration", index)[0].ngram in {"journal of psychotherapy", "psychotherapy integration"}


def test_vllm_body_uses_structured_outputs_choice():
    body = vllm_choice_body(["a b", "c"])
    assert body == {"structured_outputs": {"choice": ["a b", "c"]}}
    assert not any(k.startswith("guided_") for k in json.dumps(body).split('"'))


def test_gbnf_escaping():
    assert gbnf_literal('say "hi"') == '"say \\"hi\\""'
    assert gbnf_literal("back\\slash") == '"back\\\\slash"'
    assert gbnf_literal("a\nb\x01") == '"a\\nb\\x01"'
    assert gbnf_literal("日本") == '"日本"'
    g = gbnf_grammar(["hans zimmer", 'x"y'])
    assert g == 'root ::= "hans zimmer" | "x\\"y"\n'
    with pytest.raises(ValueError):
        gbnf_grammar([])


def test_llamacpp_request_carries_the_grammar(index):
    req = build_alignment_request("Hans Zimmer", index, "llamacpp_grammar")
    assert req.body["grammar"].startswith('root ::= "hans zimmer"')
    assert parse_alignment("hans zimmer", req, index).ngram == "hans zimmer"


def test_openai_enum_is_capped(index):
    body = openai_json_schema_body([f"ngram {i:04d}" for i in range(2000)])
    schema = body["response_format"]["json_schema"]
    enum = schema["schema"]["properties"]["ngram"]["enum"]
    assert schema["strict"] is True and schema["schema"]["required"] == ["ngram"]
    assert 250 < len(enum) <= 1000 and enum[0] == "ngram 0000" and sum(map(len, enum)) <= 15000
    assert len(fit_enum([str(i) for i in range(2000)], max_values=1000)) == 1000
    # the request keeps the best-scoring n-grams when the shortlist is longer than the cap
    full = build_alignment_request("singers", index, "openai_json_schema", shortlist_size=50)
    capped = build_alignment_request("singers", index, "openai_json_schema", shortlist_size=50, max_enum=3)
    assert len(full.allowed) > 3 and list(capped.allowed) == list(full.allowed[:3])
    assert capped.body["response_format"]["json_schema"]["schema"]["properties"]["ngram"]["enum"] == list(capped.allowed)
    out = parse_alignment(json.dumps({"ngram": capped.allowed[1]}), capped, index)
    assert out.ngram == capped.allowed[1] and out.path == "constrained"
    off = parse_alignment(json.dumps({"ngram": full.allowed[-1]}), capped, index)  # outside the enum: snapped
    assert off is not None and index.has_ngram(off.ngram)


def test_decoding_mode_follows_the_requested_server_kind():
    from atomgraph.nodes.arm.decoding import decoding_mode  # the one decoding_mode

    assert decoding_mode(None, "vllm")[0] == "vllm_choice"
    assert decoding_mode(None, "grammar")[0] == "llamacpp_grammar"
    assert decoding_mode(None, "llama.cpp")[0] == "llamacpp_grammar"
    assert decoding_mode(None, "openai")[0] == "openai_json_schema"
    assert decoding_mode(None, "free")[0] == "free" and decoding_mode(None)[0] == "free"


def test_keyword_parts_and_extraction(index):
    assert keyword_parts("singers:name") == ["singers", "name"]
    assert keyword_parts(" : ") == [] and keyword_parts("film") == ["film"]
    kws = extract_keywords("Who was the first president of the association which published Journal of Psychotherapy Integration?", index)
    assert "journal of psychotherapy" in kws and "first president" in kws
    assert all(k.split()[0] not in {"the", "of", "which"} for k in kws)
    aligned = align_keyword("singers:name", index)
    assert {"singer", "name"} <= {a.ngram for a in aligned}
    assert normalize_ngram("Singer_ID") == "singer id"
