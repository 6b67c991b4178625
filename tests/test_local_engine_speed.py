"""What makes the local engine faster without changing a reply, with the real bundled
Gemma-3-270M:

- saved prompt-prefix states (``LocalEngine.remember`` / ``_reuse``): a prompt that shares a long
  prefix with an earlier (not the last) prompt restores that prompt's KV state instead of
  evaluating the prefix again;
- greedy decoding under a grammar checks the best token first (``greedy_grammar_check``) and masks
  the whole vocabulary only when the grammar rejects it.

Every reply — free, grammar-constrained, JSON-closed near its cap, trie-beam decoded — is token
for token (and log-probability for log-probability) what an engine without them gives."""

from __future__ import annotations

import numpy as np
import pytest

from atomgraph.local.beam import beam_decode
from atomgraph.local.engine import LocalEngine, bundled_model_path
from atomgraph.local.trie import TokenTrie

SYSTEM = ("You check a draft set of documents and tables against a question. Keep the objects whose content "
          "covers some part of the question or connects objects that do; leave out the rest. Reply with a JSON "
          "object and nothing else. ") * 2
SCHEMA = {"type": "object", "properties": {"reasoning": {"type": "string"},
                                           "objects": {"type": "array", "items": {"type": "string", "enum": ["a1", "b2"]}}},
          "required": ["reasoning", "objects"], "additionalProperties": False}


@pytest.fixture(scope="module")
def engines():
    path = bundled_model_path()
    saving, plain = LocalEngine(path), LocalEngine(path)
    plain.prefix_states = 0
    plain.greedy_grammar_check = False
    yield saving, plain
    saving.close()
    plain.close()


def _prompts(engine):
    return [engine.chat_prompt([("system", SYSTEM), ("user", f"Question: {q}\n\nDraft:\n{d * 6}\n\nSelection:")])
            for q, d in [("Who directed Inception?", "a1: Inception, a 2010 film by Christopher Nolan."),
                         ("Where was Hans Zimmer born?", "b2: Hans Zimmer, born in Frankfurt."),
                         ("Who directed Inception?", "a1: Inception, a 2010 film by Christopher Nolan."),
                         ("Who directed Inception?", "a1: Inception, a 2010 film.\nb2: Hans Zimmer.")]]


def test_generation_is_unchanged_and_prefixes_are_restored(engines):
    saving, plain = engines
    for engine in (saving, plain):
        grammar = engine.json_schema_grammar(SCHEMA)
        engine.outs = [engine.generate(p, max_tokens=12, grammar=grammar if i % 2 else None, logprobs=True)
                       for i, p in enumerate(_prompts(engine))]
    for a, b in zip(saving.outs, plain.outs):
        assert a.tokens == b.tokens and a.text == b.text
        assert [x["logprob"] for x in a.logprobs] == [x["logprob"] for x in b.logprobs]
    assert plain.reused_tokens == 0 and not plain._states
    # prompt 3 repeats prompt 1 after prompt 2 came between: restored from prompt 1's state
    first, second = _prompts(saving)[:2]
    shared = next(i for i, (a, b) in enumerate(zip(first, second)) if a != b)
    assert saving.reused_tokens >= len(first) - 1 - shared
    assert 0 < len(saving._states) <= saving.prefix_states


def test_trie_beam_decoding_is_unchanged(engines):
    saving, plain = engines
    results = []
    for engine in (saving, plain):
        trie = TokenTrie.from_strings(["christopher nolan", "hans zimmer", "frankfurt", "inception", "film"], engine)
        results.append([beam_decode(engine, engine.chat_prompt([("system", SYSTEM), ("user", f"Keyword: {kw}")]),
                                    trie, beam_width=3, max_items=2, max_tokens=10)
                        for kw in ("director", "composer", "director")])
    for a, b in zip(*results):
        assert [(x.strings, x.string_scores, x.score) for x in a.beams] == \
               [(x.strings, x.string_scores, x.score) for x in b.beams]
    assert saving.reused_tokens > 0


def test_state_cache_is_bounded_and_short_prompts_are_not_saved(engines):
    saving, _ = engines
    saving.prefix_states = 2
    try:
        for i in range(4):
            saving.generate(saving.chat_prompt([("system", SYSTEM), ("user", f"Item {i}?")]), max_tokens=2)
        assert len(saving._states) == 2
        before = dict(saving._states)
        saving.generate(saving.chat_prompt([("user", "Hi")]), max_tokens=2)  # shorter than MIN_REUSE
        assert saving._states.keys() == before.keys()
        logits = saving.evaluate(saving.chat_prompt([("system", SYSTEM), ("user", "Item 0?")]))
        assert np.isfinite(logits).all()
    finally:
        saving.prefix_states = 8


DECOMPOSE = {"type": "object", "properties": {"keywords": {"type": "array", "items": {"type": "string"}, "maxItems": 6}},
             "required": ["keywords"], "additionalProperties": False}


@pytest.mark.parametrize("cap", [8, 60])
def test_greedy_under_grammar_gives_the_same_tokens(engines, cap):
    saving, plain = engines
    asks = [("Split into search keywords: Who directed the film scored by Hans Zimmer?", DECOMPOSE),
            ("Which objects answer: who directed Inception? a1 is Inception, b2 is Frankfurt.", SCHEMA)]
    for engine in (saving, plain):
        engine.outs = []
        for text, schema in asks:
            prompt = engine.chat_prompt([("user", text)])
            engine.outs.append(engine.generate(prompt, max_tokens=cap, grammar=engine.json_schema_grammar(schema),
                                               close_json=schema, logprobs=True))
        prompt = engine.chat_prompt([("user", "Is Frankfurt in Germany? Answer yes or no.")])
        engine.outs.append(engine.generate(prompt, max_tokens=4, grammar=engine.grammar('root ::= "yes" | "no" | "maybe"')))
    for a, b in zip(saving.outs, plain.outs):
        assert (a.tokens, a.text, a.finish_reason) == (b.tokens, b.text, b.finish_reason)
        if a.logprobs is not None:
            assert [x["logprob"] for x in a.logprobs] == [x["logprob"] for x in b.logprobs]
    assert saving.outs[2].text in ("yes", "no", "maybe")
    steps, masked = saving.grammar_steps
    assert 0 < masked < steps and plain.grammar_steps == [0, 0]  # both paths ran; the slow one only on rejections
