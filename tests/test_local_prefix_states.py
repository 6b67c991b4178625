"""Saved prompt-prefix states of the local engine (``LocalEngine.remember`` / ``_reuse``), with the
real bundled Gemma-3-270M: a prompt that shares a long prefix with an earlier (not the last)
prompt restores that prompt's KV state instead of evaluating the prefix again — and every reply,
free, grammar-constrained or trie-beam decoded, is token for token what an engine that saves no
states gives."""

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
