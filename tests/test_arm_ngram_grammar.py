"""``served_alignment="grammar"``: a served model decodes each keyword as a list of
*corpus* n-grams at token level, under a prefix-factored GBNF grammar of the collection's
n-gram set. The grammar is checked with real grammar engines — llguidance (vLLM's ``guidance``
structured-outputs backend) over the bundled Gemma tokenizer, and llama.cpp's own grammar
sampler through the bundled in-process model — and its trip through the graph with an
OpenAI-compatible server on 127.0.0.1 that says it is vLLM or llama.cpp."""

from __future__ import annotations

import random
import re

import pytest

from atomgraph.graphs.arm import build_arm_graph
from atomgraph.prompts.arm import ALIGN_LIST, ngram_list_grammar, parse_ngram_list
from atomgraph.backends import probe_server
from atomgraph.prompts.constraints import list_grammar
from atomgraph.tools.arm_index import ArmIndex
from tests.arm_graph_fixtures import OBJECTS, QUESTION, LoopbackServer
from tests.grammar_engine import BundledTokenizer, accepts, matcher

llguidance = pytest.importorskip("llguidance")


@pytest.fixture(scope="module")
def index() -> ArmIndex:
    return ArmIndex.build(OBJECTS, use_cache=False)


@pytest.fixture(scope="module")
def ngrams(index) -> list[str]:
    return sorted(index.trie.iterkeys())


@pytest.fixture(scope="module")
def tokenizer():
    """The bundled Gemma-3 tokenizer as llguidance sees it."""
    engine = BundledTokenizer()
    yield engine.tok  # it tokenizes through engine's vocabulary-only model: kept alive until the module's tests end


# --- the grammar -------------------------------------------------------------------------------

def test_grammar_is_prefix_factored():
    strings = ["doctoral", "doctoral advisor", "doctoral advisors", "doctor", "munich", "music"]
    gbnf = list_grammar(strings).gbnf
    rules = dict(line.split(" ::= ", 1) for line in gbnf.strip().splitlines())
    assert rules["root"] == '"(" t0 (", " t0)* ")"'
    # each shared prefix is written once: "doctor", "al", " advisor", "mu" ...
    assert gbnf.count('"doctor"') == 1 and gbnf.count("advisor") == 1 and gbnf.count('"mu"') == 1
    # one rule per branching node of the character trie, none wider than the alphabet
    assert len(rules) - 1 == 5  # root's items; doctor…; doctoral…; doctoral advisor…; mu…
    assert max(len(r.split(" | ")) for r in rules.values()) <= 2
    assert all(re.fullmatch(r"root|t\d+", name) for name in rules)  # never an engine's keyword ("true")
    with pytest.raises(ValueError):
        list_grammar(["", None])


def test_grammar_grows_with_the_trie_not_with_a_flat_list():
    rng = random.Random(3)
    words = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(3, 8))) for _ in range(300)]
    strings = sorted({" ".join(rng.sample(words, rng.randint(1, 3))) for _ in range(5000)})
    lines = list_grammar(strings).gbnf.splitlines()[1:]
    # every character of the literals is one node of the strings' character trie, spelled once
    spelled = sum(len(lit) for line in lines for lit in re.findall(r'"([^"]*)"', line))
    trie_nodes = len({s[:i] for s in strings for i in range(1, len(s) + 1)})
    assert spelled == trie_nodes < sum(map(len, strings))
    assert len(lines) <= trie_nodes - len(strings) + 1  # a rule per branching node at most
    widest = max(len(line.split(" | ")) for line in lines)
    assert widest <= len(set("".join(strings)))  # never a 5,000-way alternation


def test_xgrammar_parses_the_grammar(ngrams):
    """vLLM's default backend reads the same GBNF (rule names are never its keywords, e.g. "true")."""
    xgr = pytest.importorskip("xgrammar")
    rng = random.Random(5)
    strings = sorted({"".join(rng.choice("truefalsn ") for _ in range(rng.randint(1, 9))).strip() for _ in range(3000)} - {""})
    for gbnf in (ngram_list_grammar(ngrams).gbnf, list_grammar(strings).gbnf):
        assert "root ::=" in str(xgr.Grammar.from_ebnf(gbnf))


# --- a real grammar engine, token level ------------------------------------------------------

def test_llguidance_accepts_lists_of_corpus_ngrams_only(tokenizer, ngrams):
    gbnf = ngram_list_grammar(ngrams).gbnf
    assert accepts(tokenizer, gbnf, "(sommerfeld, doctoral advisor)")
    assert accepts(tokenizer, gbnf, "(munich)")
    assert accepts(tokenizer, gbnf, "(werner heisenberg, arnold sommerfeld, 1932)")
    for bad in ["(sommerfeld, zzqx)", "(doctoral sommerfeld)", "(Munich)", "(munich", "munich", "()",
                "(munich,munich)", "(nobel prize in physics)", "(munic)"]:  # the last: 4 words; a prefix
        assert not accepts(tokenizer, gbnf, bad), bad
    rng = random.Random(11)
    for _ in range(40):  # random lists of corpus n-grams are sentences; one foreign word is not
        items = rng.sample(ngrams, rng.randint(1, 4))
        assert accepts(tokenizer, gbnf, "(" + ", ".join(items) + ")"), items
        foreign = rng.choice(items) + " " + rng.choice(["qqq", "zebra", "paris"])
        assert not accepts(tokenizer, gbnf, "(" + ", ".join(items[:-1] + [foreign]) + ")") or foreign in ngrams


def test_llguidance_token_mask_allows_only_corpus_prefixes(tokenizer, ngrams):
    """What the server's sampler may pick after "(doct": only tokens that keep the text a prefix
    of some corpus n-gram, a separator or the closing parenthesis."""
    m = matcher(tokenizer, ngram_list_grammar(ngrams).gbnf)
    assert m.consume_tokens(tokenizer.tokenize_str("(doct"))
    mask = m.compute_bitmask()
    allowed = [t for t in range(tokenizer.vocab_size) if mask[t // 8] >> (t % 8) & 1]
    assert allowed
    for t in allowed:
        piece = tokenizer.decode_bytes([t]).decode("utf-8", "replace")
        text = "doct" + piece
        item = re.split(r"[,)]", text)[0]
        assert any(g.startswith(item) for g in ngrams), (t, piece)


def test_llama_cpp_grammar_sampler_decodes_corpus_lists(index, ngrams):
    """llama.cpp's grammar engine (the llama.cpp server's) with a real model: the bundled
    Gemma-3-270M in process decodes the align_list prompt under the grammar."""
    from atomgraph.local.chat import ChatLocalLlama

    gbnf = ngram_list_grammar(ngrams).gbnf
    msgs = ALIGN_LIST.messages({"question": QUESTION, "keyword": "Heisenberg's advisor"})
    reply = ChatLocalLlama().invoke(msgs, grammar=gbnf, max_tokens=24).content
    items = parse_ngram_list(reply + ("" if reply.endswith(")") else ")"))
    assert reply.startswith("(") and items and all(index.has_ngram(g) for g in items), reply


# --- through the graph --------------------------------------------------------------------------

def _reply(stage, body):
    return {"arm_decompose": '["Heisenberg doctoral advisor", "died"]',
            "arm_align_list": "(doctoral advisor, sommerfeld)",
            "arm_verify": '{"reasoning": "r", "objects": ["p1", "p2"]}'}.get(stage, "So the answer is: Munich")


def served_run(index, owned_by: str, reply, **context):
    """One ARM run (``served_alignment="grammar"``, k = 2) against a loopback server owned by ``owned_by``."""
    server = LoopbackServer(owned_by, reply)
    try:
        probe_server.cache_clear()
        out = build_arm_graph(model=server.model(), objects=index).invoke(
            {"question": QUESTION}, context={"served_alignment": "grammar", "k": 2, **context})
    finally:
        server.close()
    return server, out


@pytest.mark.parametrize("owned_by,field", [("vllm", "structured_outputs"), ("llamacpp", "grammar")])
def test_served_model_gets_the_corpus_grammar(index, ngrams, owned_by, field):
    server, out = served_run(index, owned_by, _reply)
    trace = out["trace"]
    assert trace["decoding"]["mode"] == "ngram_grammar" and trace["decoding"]["backend"] == owned_by
    assert f"{len(ngrams):,} corpus n-grams" in trace["decoding"]["why"]
    align = [b for b in server.requests if "N-grams:" in b["messages"][-1]["content"]]
    assert len(align) == 2  # one list per keyword, no shortlist
    gbnf = align[0]["structured_outputs"]["grammar"] if field == "structured_outputs" else align[0]["grammar"]
    assert gbnf == ngram_list_grammar(ngrams).gbnf
    assert {(a["ngram"], a["path"]) for a in trace["aligned"]} >= {("doctoral advisor", "grammar"), ("sommerfeld", "grammar")}
    assert all(index.has_ngram(a["ngram"]) for a in trace["aligned"])
    assert out["retrieved_ids"] == ["p1", "p2"] and out["answer"] == "Munich"
    calls = [c for c in out["llm_calls"] if c["stage"] == "arm_align_list"]
    assert len(calls) == 2 and all(c["constraint"].endswith("grammar") for c in calls)


def test_no_grammar_keeps_the_shortlist(index):
    def reply(stage, body):
        return "sommerfeld" if stage == "arm_align" else _reply(stage, body)

    server, out = served_run(index, "someone", reply)
    dec = out["trace"]["decoding"]
    assert dec["mode"] == "free" and "the other backend takes no grammar" in dec["why"] and "shortlist instead" in dec["why"]
    assert any("Options:" in b["messages"][-1]["content"] for b in server.requests)
    assert not any("N-grams:" in b["messages"][-1]["content"] for b in server.requests)


@pytest.mark.parametrize("context,why", [({"grammar_max_ngrams": 10}, "exceed grammar_max_ngrams (10)"),
                                         ({"GRAMMAR_MAX_BYTES": 100}, "exceed the request limit (100)"),
                                         ({"served_alignment": "candidates"}, "served_alignment=candidates")])
def test_too_big_a_grammar_sends_each_keywords_candidates(index, context, why, monkeypatch):
    """The corpus grammar over a limit (or the switch): each keyword's list under a grammar of its own
    lexical candidates, each request's grammar and its size in the trace."""
    if "GRAMMAR_MAX_BYTES" in context:  # the request limit is a module constant, not a run setting
        monkeypatch.setattr("atomgraph.nodes.arm.information_alignment.GRAMMAR_MAX_BYTES", context.pop("GRAMMAR_MAX_BYTES"))
    server, out = served_run(index, "vllm", _reply, **context)
    dec = out["trace"]["decoding"]
    assert dec["mode"] == "ngram_grammar" and why in dec["why"] and dec["grammar"]["form"] == "candidates"
    align = [b for b in server.requests if "N-grams:" in b["messages"][-1]["content"]]
    assert len(align) == 2 and not any("Options:" in b["messages"][-1]["content"] for b in server.requests)
    sent = {b["messages"][-1]["content"].rsplit("Keyword:", 1)[1].split("\n")[0].strip():
            b["structured_outputs"]["grammar"] for b in align}
    for kw, size in dec["grammar"]["keywords"].items():
        assert size["bytes"] == len(sent[kw].encode()) < len(ngram_list_grammar(index.trie.iterkeys()).gbnf.encode())
        assert 0 < size["ngrams"] <= 50
    assert all(index.has_ngram(a["ngram"]) for a in out["trace"]["aligned"])
    assert any("instead of every corpus n-gram" in p for p in out["trace"]["problems"]) == ("served_alignment" not in context)
