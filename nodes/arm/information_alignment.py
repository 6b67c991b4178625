"""§3.2.1 information alignment: the ``decompose``, ``align`` and ``retrieve`` nodes.

decompose — the question's keywords: replayed from the input (no model), else the decoder's
decomposition, else (unreadable reply) the question's corpus n-grams.

align — each keyword rephrased as corpus n-grams, by the path the model allows:

| model | path | trace ``decoding.mode`` |
|---|---|---|
| in-process (``ATOMGRAPH_MODEL=local``) | a list ``(a, b, …)`` by beam search over a token trie of every corpus n-gram (the paper's) | ``local_trie_beam`` |
| vLLM / llama.cpp server, ``served_alignment="grammar"`` (the paper's, default) | a list ``(a, b, …)`` under a prefix-factored grammar of every corpus n-gram (``decoding.grammar.form`` ``corpus``) | ``ngram_grammar`` |
| the same, the corpus grammar over ``grammar_max_ngrams`` or :data:`GRAMMAR_MAX_BYTES`, or ``served_alignment="candidates"`` (switch) | a list ``(a, b, …)`` under a grammar of the keyword's ≤ ``shortlist_size`` lexical candidates (``candidates``) | ``ngram_grammar`` |
| OpenAI, or ``served_alignment="shortlist"`` (switch) | one n-gram of a ≤ ``shortlist_size`` lexical shortlist (``Choice``) | ``vllm_choice``, ``llamacpp_grammar``, ``openai_json_schema`` |
| anything else | free text, snapped to the nearest corpus n-gram | ``free`` |

retrieve — "each list of N-grams decoded is used as a query to search for chunks, considering
both the exact match and semantic similarity": the base set of search objects
(:func:`base_pool` over the question's :class:`Scores`, computed once per question and
shared with §3.2.2). No model call.

Corpus n-gram matching without a model (shortlists, snapping, the question's own n-grams)
is the section of that name below.

INVARIANT: every ``aligned[*]["ngram"]`` is a corpus n-gram of the index, on every path
(constrained, snapped, LLM-free), whatever the model returned.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
from rapidfuzz import fuzz, process

from langchain_core.runnables import RunnableConfig

from atomgraph.errors import AtomgraphError
from atomgraph.prompts.arm import (
    ALIGN, ALIGN_LIST, DECOMPOSE, DECOMPOSE_LIST, LIST_CLOSE, LIST_SEP, LOCAL_LIST_OPEN, ngram_list_grammar, shortlist_choice,
)
from atomgraph.prompts.constraints import Constraint, Grammar, TokenTrie, fit_enum, unwrap
from atomgraph.state.arm import ArmContext
from atomgraph.state.arm_graph import Aligned, ArmState, Candidate, Decoding, KeywordAlignment
from atomgraph.state.run import Evidence, RetrieverCall, check_question
from atomgraph.tools.base import retriever_run
from atomgraph.tools.arm_index import (MAX_N, ArmIndex, SparseScores, ngrams, normalize_ngram, raw_tokens, stopwords,
                                       tokens)

if TYPE_CHECKING:
    from atomgraph.nodes.arm.pipeline import ArmRuntime


def make_decompose_node(art: ArmRuntime) -> Callable:
    async def decompose(state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        out = await _decompose(state, config, ctx)
        if ctx.add_question_keywords and ctx.llm and out.get("keyword_source") not in (None, "replayed"):
            out = with_question_keywords(out, await art.aindex(ctx), ctx)
        return out

    async def _decompose(state: ArmState, config: RunnableConfig, ctx: ArmContext) -> dict[str, Any]:
        try:
            question = check_question(state.get("question"))
        except AtomgraphError as exc:
            return {"error": str(exc), "problems": [f"question: {exc}"]}
        try:
            index = await art.aopen(ctx)  # the run's one opening of the index
        except AtomgraphError as exc:  # no objects file, bad objects: data, not an exception
            return {"question": question, "error": f"ARM data collection: {exc}", "problems": [f"objects: {exc}"]}
        given = state.get("keywords")
        if isinstance(given, list) and any(isinstance(k, str) and k.strip() for k in given):
            kws = [k for k in given if isinstance(k, str) and k.strip()][: ctx.max_keywords]
            return {"question": question, "keywords": kws, "keyword_source": "replayed"}
        if not ctx.llm:  # the LLM-free pipeline: the question's own words (question_keywords)
            kws = question_keywords(question, index, ctx)
            return {"question": question, "keywords": kws, "keyword_source": "question_ngrams"}
        switch_note: list[str] = []
        if ctx.decompose_constraint == "ngrams":
            out = await _decompose_ngrams(art, ctx, index, question, config)
            if out is not None:
                return out
            switch_note = ["decompose: decompose_constraint='ngrams' needs an in-process model (trie beam); "
                           "the keywords were decomposed freely"]
        result = await art.ask(DECOMPOSE, {"question": question, "max_keywords": ctx.max_keywords}, config)
        problem = result.problem
        if result.ok:
            kept, dropped = grounded_keywords(result.value, question, index)
            notes = [f"decompose: dropped {len(dropped)} keyword(s) found in neither the question nor the collection, "
                     f"or echoing the prompt: {dropped[:5]}"] if dropped else []
            if kept:
                return {"question": question, "keywords": kept[: ctx.max_keywords], "keyword_source": "model",
                        "llm_calls": [result.call], "problems": switch_note + notes}
            problem = "no keyword of the reply is in the question or the collection (an echoed prompt?)"
        kws = extract_keywords(question, index)[: ctx.max_keywords]
        return {"question": question, "keywords": kws, "keyword_source": "question_ngrams", "llm_calls": [result.call],
                "problems": switch_note + [f"decompose: {problem}; keywords taken from the question's corpus n-grams"]}

    return decompose


async def _decompose_ngrams(art: ArmRuntime, ctx: ArmContext, index: ArmIndex, question: str,
                            config: RunnableConfig) -> dict[str, Any] | None:
    """``decompose_constraint="ngrams"`` (switch): the keywords as a list ``(a, b, …)`` decoded by
    the trie beam under the question's own 1–3-grams and the corpus n-grams, as alignment decodes
    its lists; None when the decoder is not in process (the caller decomposes freely, and says so)."""
    dec = await art.decoding_of(DECOMPOSE_LIST.role, ctx.decoding)
    if dec["backend"] != "local":
        return None
    engine = unwrap(await art.amodel(DECOMPOSE_LIST.role)).engine
    corpus = await asyncio.to_thread(ngram_token_trie, index, engine)
    asked = await asyncio.to_thread(question_token_trie, question, engine)
    from atomgraph.local.trie import TrieUnion

    constraint = TokenTrie(TrieUnion(asked, corpus), beam_width=ctx.beam_width, n_best=1, open=LOCAL_LIST_OPEN,
                           close=LIST_CLOSE, sep=LIST_SEP)
    result = await art.ask(DECOMPOSE_LIST, {"question": question}, config, constraint=constraint, backend_kind="local")
    beams = (getattr(result.message, "response_metadata", None) or {}).get("beams") or []
    strings = (beams[0].get("strings") if beams else None) or (result.value if result.ok else [])
    kws = list(dict.fromkeys(normalize_ngram(k) for k in strings if normalize_ngram(k)))
    if kws:
        return {"question": question, "keywords": kws[: ctx.max_keywords], "keyword_source": "model_ngrams",
                "llm_calls": [result.call], "problems": []}
    kws = extract_keywords(question, index)[: ctx.max_keywords]
    why = result.problem or "the decoded keyword list is empty"
    return {"question": question, "keywords": kws, "keyword_source": "question_ngrams", "llm_calls": [result.call],
            "problems": [f"decompose (n-gram list): {why}; keywords taken from the question's corpus n-grams"]}


def with_question_keywords(out: dict[str, Any], index: ArmIndex, ctx: ArmContext) -> dict[str, Any]:
    """``add_question_keywords=True`` (switch): the decomposition's keywords, then the question's own
    (:func:`question_keywords`, the LLM-free path's) that it lacks, recorded as ``added_keywords``
    so that alignment aligns them as the LLM-free path does."""
    have = {normalize_ngram(k) for k in out["keywords"]}
    added = [k for k in question_keywords(out["question"], index, ctx) if normalize_ngram(k) not in have]
    return {**out, "keywords": list(out["keywords"]) + added, "added_keywords": added}


def question_token_trie(question: str, engine: Any):
    """The token trie of the question's own 1–3-grams (ARM's normalisation), built per question."""
    from atomgraph.local.trie import TokenTrie as Trie

    return Trie.build(ngrams(tokens(question), 3), engine, use_cache=False)


def question_keywords(question: str, index: ArmIndex, ctx: ArmContext) -> list[str]:
    """The LLM-free pipeline's keywords (``question_keywords``, :func:`informative_keywords`): every
    question span that is a corpus n-gram and every name the corpus spells otherwise (``all``); the
    names and the rarer spans alone (``informative``); the corpus spans alone (``corpus``); names
    first under ``max_keywords``."""
    if ctx.question_keywords == "corpus":
        return extract_keywords(question, index)[: ctx.max_keywords]
    if ctx.question_keywords == "informative":
        return informative_keywords(question, index, most_keywords=ctx.max_keywords)
    return informative_keywords(question, index, limit=None, max_share=None, most_keywords=ctx.max_keywords)


def _instruction_words() -> frozenset[str]:
    """The words of the decomposition prompt's own instructions (what an echo repeats)."""
    text = " ".join(getattr(m, "prompt", None).template for m in DECOMPOSE.prompt.messages
                    if getattr(getattr(m, "prompt", None), "template", None))
    return frozenset(tokens(text.replace("{max_keywords}", "").replace("{question}", "")))


def grounded_keywords(keywords: Sequence[str], question: str, index: ArmIndex) -> tuple[list[str], list[str]]:
    """``(kept, dropped)``: a keyword is kept when one of its words is a word of the question or
    of the collection (a corpus unigram) and it is not made of the prompt's own instruction words
    alone (a base model echoing "names of entities, attributes, relations" is no decomposition)."""
    asked = set(tokens(question))
    instructions = _instruction_words()
    kept, dropped = [], []
    for kw in keywords:
        words = tokens(kw)
        echo = bool(words) and all(w in instructions and w not in asked for w in words)
        grounded = any(w in asked or index.has_ngram(w) for w in words)
        (kept if grounded and not echo else dropped).append(kw)
    return kept, dropped


def make_align_node(art: ArmRuntime) -> Callable:
    async def align(state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        index = await art.aindex(ctx)
        keywords = state.get("keywords") or []
        problems: list[str] = []
        # replayed keywords are the alignment's input as given; without a model (llm=False) there is no
        # other way; keywords from the question's n-grams after an unusable decomposition are still
        # aligned by the model when there is one (the paper's constrained lists, not a silent downgrade)
        if state.get("keyword_source") == "replayed" or not ctx.llm:
            entries = align_without_model(keywords, index, ctx, problems)
            why = "no model (llm=False)" if not ctx.llm else f"keywords {state.get('keyword_source')}"
            dec = Decoding(mode="none", why=f"{why}: keywords aligned without a model")
            return _aligned(index, entries, [], problems, dec)
        added = list(state.get("added_keywords") or [])
        if added:  # add_question_keywords (switch): the question's own keywords, aligned as the LLM-free path does
            out = await _align_model(ctx, index, {**state, "keywords": [k for k in keywords if k not in added]}, config)
            entries = align_without_model(added, index, ctx, problems)
            kept = out["aligned"] + [e for e in entries if index.has_ngram(e["ngram"])]
            out.update(aligned=kept, alignment=group_alignment(kept), problems=out["problems"] + problems)
            out["decoding"] = {**out["decoding"], "why": f"{out['decoding'].get('why', '')}; add_question_keywords: "
                               f"{len(added)} keyword(s) of the question aligned without the model"}
            return out
        return await _align_model(ctx, index, state, config)

    async def _align_model(ctx: ArmContext, index: ArmIndex, state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        dec = await art.decoding_of(ALIGN.role, ctx.decoding)  # decided once per model
        if dec["backend"] == "local":
            trie = await asyncio.to_thread(ngram_token_trie, index, unwrap(await art.amodel(ALIGN.role)).engine)
            dec["why"] = (f"in-process model: beam search (width {ctx.beam_width}) over a token trie of "
                          f"{len(index.trie)} corpus n-grams")
            constraint = TokenTrie(trie, beam_width=ctx.beam_width, n_best=1, open=LOCAL_LIST_OPEN, close=LIST_CLOSE, sep=LIST_SEP)
            return await _align_lists(art, ctx, index, state, config, constraint, dec, "beam")
        if ctx.served_alignment in ("grammar", "candidates"):
            if ctx.served_alignment == "grammar":
                grammar, note = await asyncio.to_thread(served_grammar, index, dec["backend"], ctx.grammar_max_ngrams)
                if grammar is not None:
                    dec = Decoding(mode="ngram_grammar", backend=dec["backend"], why=f"{dec['why']}; {note}",
                                   grammar=grammar_size("corpus", grammar, len(index.trie)))
                    return await _align_lists(art, ctx, index, state, config, grammar, dec, "grammar")
            else:
                note = "served_alignment=candidates"
            if dec["backend"] in GRAMMAR_BACKENDS:  # a grammar the request can carry: each keyword's own candidates
                return await _align_candidate_lists(art, ctx, index, state, config, dec, note)
            note = note if ctx.served_alignment == "grammar" else f"the {dec['backend']} backend takes no grammar"
            dec["why"] = f"{dec['why']}; served_alignment={ctx.served_alignment}: {note}: shortlist instead"
            out = await _align_shortlists(art, ctx, index, state, config, dec)
            out["problems"] = [f"align: {note}; one n-gram of a shortlist per keyword instead of the paper's list"] + \
                out["problems"]
            return out
        return await _align_shortlists(art, ctx, index, state, config, dec)

    return align


async def _align_shortlists(art: ArmRuntime, ctx: ArmContext, index: ArmIndex, state: ArmState,
                            config: RunnableConfig, dec: Decoding) -> dict[str, Any]:
    """Each keyword part as one n-gram of its lexical shortlist, under the backend's ``Choice``
    (OpenAI: the enum's longest accepted prefix); a reply off the list is snapped."""
    limit = ctx.enum_max_values if dec["backend"] == "openai" else None
    parts = [(kw, part) for kw in state.get("keywords") or [] for part in keyword_parts(kw)]
    requests = [alignment_request(part, index, shortlist_size=ctx.shortlist_size, max_values=limit) for _, part in parts]

    async def one(req):
        return await art.ask(ALIGN, {"question": state["question"], "keyword": req.keyword, "options": req.allowed},
                                config, constraint=shortlist_choice(req.allowed), backend_kind=dec["backend"])

    results = await asyncio.gather(*(one(req) for req in requests))
    entries: list[Aligned] = []
    problems: list[str] = []
    for (kw, _), req, result in zip(parts, requests, results):
        mode = dec["mode"] if req.allowed else "free"  # no shortlist: nothing to constrain to
        got = parse_alignment(result.value, req, index) if result.ok else None
        if got is not None:
            entries.append(Aligned(keyword=kw, ngram=got.ngram, score=round(got.score, 4), path=got.path, mode=mode))
            continue
        fallback = align_keyword(req.keyword, index, per_keyword=1, min_score=0.0)
        reason = result.problem if not result.ok else "the reply matches no corpus n-gram"
        problems.append(f"align {req.keyword!r}: {reason}; " +
                        (f"aligned without the model to {fallback[0].ngram!r}" if fallback else "keyword dropped"))
        entries += [Aligned(keyword=kw, ngram=a.ngram, score=round(a.score, 4), path="fallback", mode=mode)
                    for a in fallback]
    return _aligned(index, entries, [r.call for r in results], problems, dec)


async def _align_candidate_lists(art: ArmRuntime, ctx: ArmContext, index: ArmIndex, state: ArmState,
                                 config: RunnableConfig, dec: Decoding, note: str) -> dict[str, Any]:
    """Each keyword's list ``(a, b, …)`` under a grammar of that keyword's own lexical candidates
    (:func:`candidate_grammar`): where the corpus grammar is too big to send with every request, or
    ``served_alignment="candidates"``. The trace's ``decoding.grammar`` holds each keyword's grammar size."""
    keywords = state.get("keywords") or []
    found = await asyncio.to_thread(lambda: {kw: candidate_grammar(kw, index, ctx.shortlist_size) for kw in keywords})
    grammars = {kw: g for kw, (g, _) in found.items()}
    sizes = {kw: grammar_size("candidates", g, n) if g else {"form": "candidates", "ngrams": 0}
             for kw, (g, n) in found.items()}
    dec = Decoding(mode="ngram_grammar", backend=dec["backend"],
                   why=f"{dec['why']}; {note}: each keyword's list under a grammar of its ≤ {ctx.shortlist_size} "
                       "lexical candidates",
                   grammar={"form": "candidates", "keywords": sizes,
                            "bytes_max": max((z.get("bytes", 0) for z in sizes.values()), default=0)})
    out = await _align_lists(art, ctx, index, state, config, grammars.get, dec, "grammar")
    if ctx.served_alignment == "grammar":
        out["problems"] = [f"align: {note}; each keyword's list under a grammar of its own candidates instead of "
                           "every corpus n-gram"] + out["problems"]
    return out


async def _align_lists(art: ArmRuntime, ctx: ArmContext, index: ArmIndex, state: ArmState, config: RunnableConfig,
                       constraint: Constraint | Callable[[str], Constraint | None], dec: Decoding,
                       path: str) -> dict[str, Any]:
    """§3.2.1 as the paper decodes it: each keyword rephrased as a list ``(a, b, …)`` of corpus
    n-grams under ``constraint`` (a token trie in process: beam search, score = mean logit per
    n-gram; a grammar on a server; or a keyword's own constraint, ``constraint(keyword)``: a
    keyword with none is aligned without the model). One in-process engine decodes one keyword at a time."""

    async def one(kw: str):
        own = constraint(kw) if callable(constraint) else constraint
        if own is None:
            return None
        return await art.ask(ALIGN_LIST, {"question": state["question"], "keyword": kw}, config,
                                constraint=own, backend_kind=dec["backend"])

    keywords = state.get("keywords") or []
    if dec["backend"] == "local":
        results = [await one(kw) for kw in keywords]
    else:
        results = await asyncio.gather(*(one(kw) for kw in keywords))
    entries: list[Aligned] = []
    problems: list[str] = []
    for kw, result in zip(keywords, results):
        if result is None:
            fallback = align_keyword(kw, index, per_keyword=ctx.ngrams_per_keyword, min_score=0.0)
            problems.append(f"align {kw!r}: no corpus n-gram is a candidate for it; "
                            + (f"aligned without the model to {[a.ngram for a in fallback]}" if fallback else "keyword dropped"))
            entries += [Aligned(keyword=kw, ngram=a.ngram, score=round(a.score, 4), path="fallback", mode=dec["mode"])
                        for a in fallback]
            continue
        beams = (getattr(result.message, "response_metadata", None) or {}).get("beams") or []
        best = beams[0] if beams else {}
        strings = best.get("strings") or (result.value if result.ok else [])
        scores = best.get("string_scores") or [None] * len(strings)
        got = [(normalize_ngram(g), sc) for g, sc in zip(strings, scores) if index.has_ngram(normalize_ngram(g))]
        if got:
            entries += [Aligned(keyword=kw, ngram=g, score=None if sc is None else round(float(sc), 4), path=path,
                                mode=dec["mode"]) for g, sc in got]
            continue
        fallback = align_keyword(kw, index, per_keyword=ctx.ngrams_per_keyword, min_score=0.0)
        problems.append(f"align {kw!r}: {_no_list_cause(result, best, index)}; "
                        + (f"aligned without the model to {[a.ngram for a in fallback]}" if fallback else "keyword dropped"))
        entries += [Aligned(keyword=kw, ngram=a.ngram, score=round(a.score, 4), path="fallback", mode=dec["mode"])
                    for a in fallback]
    return _aligned(index, entries, [r.call for r in results if r is not None], problems, dec)


def align_without_model(keywords: Sequence[str], index: ArmIndex, ctx: ArmContext, problems: list[str]) -> list[Aligned]:
    """Keywords aligned as the LLM-free path aligns them (:func:`align_keyword`); a keyword that
    matches no corpus n-gram is left out, with a ``problems`` line."""
    entries: list[Aligned] = []
    for kw in keywords:
        got = align_keyword(kw, index, per_keyword=ctx.ngrams_per_keyword, min_score=ctx.min_alignment_score)
        if not got:
            problems.append(f"align {kw!r}: no corpus n-gram matches it (score >= min_alignment_score "
                            f"{ctx.min_alignment_score}); the keyword is left out")
        entries += [Aligned(keyword=a.keyword, ngram=a.ngram, score=round(a.score, 4), path=a.path, mode="none")
                    for a in got]
    return entries


def _no_list_cause(result: Any, best: dict, index: ArmIndex) -> str:
    """Why a keyword got no corpus n-gram list: an empty collection, an empty list ``()``,
    a beam search that found no way on, or the call's own problem."""
    if not len(index.trie):
        return "the collection has no n-grams to decode"
    meta = getattr(result.message, "response_metadata", None) or {}
    if best and not best.get("strings"):
        return "the decoded list is empty ('()')"
    if meta.get("beam_stop_reason") and not meta.get("beams"):
        return f"the beam search ended without a closed list ({meta['beam_stop_reason']})"
    return result.problem or "no n-gram list decoded"


def _aligned(index: ArmIndex, entries: list[Aligned], calls: list, problems: list[str], dec: Decoding) -> dict[str, Any]:
    """The node's update; the invariant enforced last: only corpus n-grams pass."""
    kept = []
    for e in entries:
        if isinstance(e.get("ngram"), str) and index.has_ngram(e["ngram"]):
            kept.append(e)
        else:  # never expected: every path above already yields corpus n-grams
            problems.append(f"align: dropped {e.get('ngram')!r}, not a corpus n-gram")
    out: dict[str, Any] = {"aligned": kept, "alignment": group_alignment(kept), "problems": problems, "decoding": dec}
    if calls:
        out["llm_calls"] = calls
    return out


def group_alignment(entries: list[Aligned]) -> list[KeywordAlignment]:
    """Per keyword, its list of corpus n-grams (the record every run keeps; each n-gram occurs
    contiguously in some object)."""
    out: dict[str, KeywordAlignment] = {}
    for e in entries:
        rec = out.setdefault(e["keyword"], KeywordAlignment(keyword=e["keyword"], ngrams=[], scores=[],
                                                            mode=e.get("mode", "none")))
        if e["ngram"] not in rec["ngrams"]:
            rec["ngrams"].append(e["ngram"])
            rec["scores"].append(e.get("score"))
    return list(out.values())


def ngram_token_trie(index: ArmIndex, engine: Any):
    """The token trie over *every* corpus n-gram for ``engine``'s tokenizer (built once per
    index, persisted next to the index cache when it has one)."""
    trie = index.__dict__.get("_token_trie")
    if trie is None:
        from atomgraph.local.trie import TokenTrie as Trie

        where = getattr(index, "cache_path", None)
        trie = Trie.build(index.trie.iterkeys(), engine, cache_dir=(where / "token-trie") if where is not None else None)
        index.__dict__["_token_trie"] = trie
    return trie


GRAMMAR_BACKENDS = ("vllm", "llamacpp")  # the servers that take a GBNF grammar with a request


GRAMMAR_MAX_BYTES = 4_000_000  # a corpus grammar over this many bytes is not sent (a request body limit)


def served_grammar(index: ArmIndex, backend: str, max_ngrams: int,
                   max_bytes: int | None = None) -> tuple[Grammar | None, str]:
    """``served_alignment="grammar"``: the grammar of every corpus n-gram for a server that takes
    one (built once per index), and what it is — or None and why not (no grammar on this backend,
    more n-grams than ``max_ngrams``, more bytes than ``max_bytes``)."""
    if backend not in GRAMMAR_BACKENDS:
        return None, f"the {backend} backend takes no grammar"
    n = len(index.trie)
    if n > max_ngrams:
        return None, f"the collection's {n:,} n-grams exceed grammar_max_ngrams ({max_ngrams:,})"
    grammar = index.__dict__.get("_ngram_grammar")
    if grammar is None:
        grammar = index.__dict__["_ngram_grammar"] = ngram_list_grammar(index.trie.iterkeys())
    size = len(grammar.gbnf.encode())
    max_bytes = GRAMMAR_MAX_BYTES if max_bytes is None else max_bytes
    if size > max_bytes:
        return None, f"the corpus grammar's {size:,} bytes exceed the request limit ({max_bytes:,})"
    return grammar, (f"the list (a, b, …) under a prefix-factored grammar of {n:,} corpus n-grams "
                     f"({grammar.gbnf.count('::=') - 1:,} rules, {size / 1e6:.2f} MB)")


def candidate_grammar(keyword: str, index: ArmIndex, size: int) -> tuple[Grammar | None, int]:
    """The list grammar ``(a, b, …)`` over ``keyword``'s lexical candidates (:func:`shortlist` of each
    of its parts, ``size`` each), the grammar a request carries where the corpus grammar is too big,
    and how many candidates it holds; None when the keyword has no candidate."""
    found = {s.ngram for part in keyword_parts(keyword) for s in shortlist(part, index, limit=size)}
    return (ngram_list_grammar(found) if found else None), len(found)


def grammar_size(form: str, grammar: Grammar, ngrams: int) -> dict[str, Any]:
    """What the trace records of a grammar sent: its form, n-grams, rules and bytes."""
    return {"form": form, "ngrams": ngrams, "rules": grammar.gbnf.count("::=") - 1, "bytes": len(grammar.gbnf.encode())}


# --- corpus n-gram matching without a model: shortlists, snapping, the question's own n-grams ---
#
# Where the model cannot decode under every n-gram (closed APIs, and served models by default), each
# keyword gets a *shortlist* of corpus n-grams (:func:`shortlist`, :func:`alignment_request`) that the
# server constrains the reply to (a ``Choice``, in the backend's own request form); a model that offers
# no constraint writes freely, and :func:`snap` finds the nearest corpus n-grams. Without a model,
# :func:`informative_keywords` takes the question's keywords: its maximal spans that are corpus n-grams
# and its names the corpus spells otherwise (``question_keywords="all"``, the default), or the names
# and rarer spans alone (``"informative"``); :func:`extract_keywords` is the corpus spans alone
# (``"corpus"``). :func:`align_keyword` keeps the best shortlisted n-grams. Whatever the path, an
# aligned n-gram returned here (:func:`parse_alignment`, :func:`snap`, :func:`align_keyword`) is a corpus
# n-gram of the index (``index.has_ngram``) — or nothing at all.

@dataclass(frozen=True)
class ScoredNgram:
    """A corpus n-gram with its match score in [0, 1] and how it was found."""

    ngram: str
    score: float
    how: str = "lexical"


# --- shortlists ----------------------------------------------------------------------------------

def _match_score(query: str, ngram: str) -> float:
    if query == ngram:
        return 1.0
    return 0.5 * fuzz.ratio(query, ngram) / 100 + 0.5 * fuzz.token_set_ratio(query, ngram) / 100


def _variants(token: str, index: ArmIndex, limit: int, cutoff: float) -> list[str]:
    """Corpus words close to ``token`` (itself first when it is one): fuzzy over the vocabulary."""
    out = [token] if index.has_ngram(token) else []
    if len(token) >= 3:
        for word, _, _ in process.extract(token, index.unigrams, scorer=fuzz.ratio, limit=limit, score_cutoff=cutoff):
            if word not in out:
                out.append(word)
    return out


def shortlist(keyword: str, index: ArmIndex, *, limit: int = 50, fuzzy_cutoff: float = 80.0,
              prefix_limit: int = 40) -> list[ScoredNgram]:
    """Corpus n-grams for one keyword, best first (§3.2.1's candidate space, made finite).

    Candidates are the keyword itself when it is a corpus n-gram, its sub-spans, spans built
    from fuzzy variants of its words (rapidfuzz over the corpus vocabulary: "singers" →
    "singer"), and trie prefix extensions of those ("singer" → "singer id"). Each is scored
    against the keyword (edit ratio and token-set ratio). Every entry is a corpus n-gram.
    """
    kt = tokens(keyword) if isinstance(keyword, str) else []
    if not kt:
        return []
    query = " ".join(kt)
    stop = stopwords()
    found: dict[str, str] = {}
    variants = [_variants(t, index, 4, fuzzy_cutoff) if t not in stop else ([t] if index.has_ngram(t) else []) for t in kt]
    for n in range(1, min(MAX_N, len(kt)) + 1):
        for i in range(len(kt) - n + 1):
            span = kt[i : i + n]
            if n < len(kt) and (span[0] in stop or span[-1] in stop):
                continue  # a sub-span starting or ending with a stopword is never the better rephrasing
            exact = " ".join(span)
            if index.has_ngram(exact):
                found.setdefault(exact, "exact" if exact == query else "lexical")
            combos = [[]]
            for vs in variants[i : i + n]:
                combos = [c + [v] for c in combos for v in vs[:3]][:27]
            for c in combos:
                g = " ".join(c)
                if index.has_ngram(g):
                    found.setdefault(g, "fuzzy")
    seeds = [t for t, vs in zip(kt, variants) if t not in stop for t in vs[:2]]
    for seed in dict.fromkeys(seeds):
        for g in index.with_prefix(seed + " ", prefix_limit):
            found.setdefault(g, "prefix")
    scored = [ScoredNgram(g, round(_match_score(query, g), 6), how) for g, how in found.items() if index.has_ngram(g)]
    scored.sort(key=lambda s: (-s.score, len(s.ngram), s.ngram))
    return scored[: max(0, limit)]


def snap(text: Any, index: ArmIndex, *, limit: int = 1, candidates: Sequence[str] | None = None) -> list[ScoredNgram]:
    """The corpus n-grams nearest to free text (the "any other model" path of §3.2.1).

    ``text`` may be anything a model returns: empty, hostile, very long, not a string. With
    ``candidates`` (a shortlist), those are preferred when one matches well (≥ 0.6). The
    result holds only corpus n-grams; it is empty when the text has no word at all.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    text = text[:2000]
    norm = normalize_ngram(text)
    if not norm:
        return []
    if index.has_ngram(norm):
        return [ScoredNgram(norm, 1.0, "exact")]
    if candidates:
        ranked = sorted(
            (ScoredNgram(c, round(_match_score(norm, c), 6), "snap") for c in candidates if index.has_ngram(c)),
            key=lambda s: (-s.score, len(s.ngram)),
        )
        if ranked and ranked[0].score >= 0.6:
            return ranked[:limit]
    words = norm.split()
    if len(words) > 12:  # long generations: the first dozen words carry the rephrased keyword
        norm = " ".join(words[:12])
    out = [ScoredNgram(s.ngram, s.score, "snap") for s in shortlist(norm, index, limit=limit)]
    return [s for s in out if index.has_ngram(s.ngram)]


# --- one keyword's shortlist ----------------------------------------------------------------------

@dataclass(frozen=True)
class AlignmentRequest:
    """One keyword and the corpus n-grams its reply may choose from, best first (the
    constraint is :func:`atomgraph.prompts.arm.shortlist_choice` of ``allowed``)."""

    keyword: str
    allowed: tuple[str, ...]


def alignment_request(keyword: str, index: ArmIndex, *, shortlist_size: int = 50,
                      max_values: int | None = None) -> AlignmentRequest:
    """The shortlist for one keyword, cut to the longest prefix an OpenAI enum of at most
    ``max_values`` values accepts when ``max_values`` is given (empty: free generation, since
    no constraint can then be satisfied)."""
    allowed = [s.ngram for s in shortlist(keyword, index, limit=shortlist_size)]
    if max_values is not None:
        allowed = fit_enum(allowed, max_values=max_values)
    return AlignmentRequest(keyword, tuple(allowed))


@dataclass(frozen=True)
class AlignedNgram:
    """One aligned keyword: a corpus n-gram, the keyword it came from, and the path taken
    (``constrained``: the model's output was an allowed value; ``snapped``: it was not)."""

    keyword: str
    ngram: str
    score: float
    path: str


_QUOTES = "\"'`“”‘’«» \t\r\n"


def _output_text(output: Any) -> str:
    if isinstance(output, dict):
        value = output.get("ngram")
        return value if isinstance(value, str) else json.dumps(output, ensure_ascii=False)
    if not isinstance(output, str):
        return "" if output is None else str(output)
    if output.lstrip().startswith("{"):  # an OpenAI enum reply {"ngram": ...}
        try:
            data = json.loads(output)
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict) and isinstance(data.get("ngram"), str):
            return data["ngram"]
    return output.strip(_QUOTES)


def parse_alignment(output: Any, request: AlignmentRequest, index: ArmIndex) -> AlignedNgram | None:
    """The aligned n-gram from a model's output for ``request`` (None when nothing aligns).

    A constrained output that is an allowed corpus n-gram is kept as is; anything else (a
    server that ignored the constraint, free text, garbage) is snapped to the nearest corpus
    n-gram, preferring the shortlist. The result always satisfies ``index.has_ngram``.
    """
    text = _output_text(output)
    norm = normalize_ngram(text)
    if norm and norm in request.allowed and index.has_ngram(norm):
        return AlignedNgram(request.keyword, norm, 1.0, "constrained")
    hits = snap(text, index, limit=1, candidates=request.allowed) or snap(request.keyword, index, limit=1)
    if not hits or not index.has_ngram(hits[0].ngram):
        return None
    return AlignedNgram(request.keyword, hits[0].ngram, hits[0].score, "snapped")


# --- LLM-free keywords and alignment -------------------------------------------------------

def keyword_parts(keyword: str) -> list[str]:
    """The parts of a keyword to align: ``"singers:name"`` (Spider's table:column items) gives
    ``["singers", "name"]``; any other keyword is one part."""
    if not isinstance(keyword, str):
        return []
    if ":" in keyword:
        parts = [p.strip() for p in keyword.split(":")]
        return [p for p in parts if p]
    return [keyword.strip()] if keyword.strip() else []


def _question_spans(question: str, index: ArmIndex, *, max_n: int = MAX_N,
                     unknown_names: bool = False) -> list[tuple[str, bool]]:
    """``(keyword, is_name)`` for the question's maximal spans (≤ ``max_n`` words, greedy left to
    right) that are corpus n-grams, leading/trailing stopwords dropped, stopword-only spans
    skipped. ``is_name``: a word of the span after the question's first is capitalised or a
    number (how a name looks in a question). With ``unknown_names``, a capitalised word that
    starts no corpus n-gram ("Aschenbrodel" where the corpus writes "Aschenbrödel") starts a
    run of capitalised words kept as a name all the same, for fuzzy alignment."""
    if not isinstance(question, str):
        return []
    stop = stopwords()
    raw = raw_tokens(question)
    low = [t.casefold() for t in raw]

    def looks_named(i: int) -> bool:
        return i > 0 and low[i] not in stop and (raw[i][:1].isupper() or raw[i][:1].isdigit())

    out: dict[str, bool] = {}
    p = 0
    while p < len(low):
        if low[p] in stop:
            p += 1
            continue
        taken = 0
        for L in range(min(max_n, len(low) - p), 0, -1):
            span = low[p : p + L]
            while span and span[-1] in stop:
                span = span[:-1]
            if not span:
                continue
            g = " ".join(span)
            if index.has_ngram(g):
                out.setdefault(g, any(looks_named(p + i) for i in range(len(span))))
                taken = len(span)
                break
        if not taken and unknown_names and looks_named(p) and raw[p][:1].isupper():
            q = p
            while q < len(low) and q - p < max_n and raw[q][:1].isupper() and low[q] not in stop:
                q += 1
            out.setdefault(" ".join(low[p:q]), True)
            taken = q - p
        p += max(taken, 1)
    return list(out.items())


def extract_keywords(question: str, index: ArmIndex, *, max_n: int = MAX_N) -> list[str]:
    """Every question span that is a corpus n-gram: the maximal spans (≤ ``max_n`` words, greedy
    left to right), with leading/trailing stopwords dropped and stopword-only spans skipped
    (``question_keywords="corpus"``, and the fallback when a model's decomposition is unusable)."""
    return [g for g, _ in _question_spans(question, index, max_n=max_n)]


def informative_keywords(question: str, index: ArmIndex, *, limit: int | None = 6, max_share: float | None = 0.02,
                         max_n: int = MAX_N, most_keywords: int | None = None) -> list[str]:
    """LLM-free keywords by what they tell apart (ours: the paper's keywords come from a model).
    Of the question's spans (:func:`_question_spans`, capitalised words unknown to the corpus
    included as names, for fuzzy alignment):

    - every *name* (a span with a capitalised word after the first, or a number: "Bubye River",
      "Akinoshu Kenji", "1986") is kept;
    - the other spans are kept when at most ``max_share`` of the objects (or one object)
      contain them (corpus document frequency: "snowfall" yes, "country", "located" no), rarest
      first, longer first on ties, until ``limit`` keywords in all (``None``: no such filter or
      cap: every span, ``question_keywords="all"``);
    - in the question's order. A question whose spans are all common keeps its ``limit``
      rarest spans (never nothing when :func:`extract_keywords` finds something).

    ``most_keywords`` (``max_keywords``) is a hard cap taken in that priority: names first.
    """
    spans = _question_spans(question, index, max_n=max_n, unknown_names=True)
    if not spans:
        return []
    n_objects = max(1, len(index))
    names = [g for g, named in spans if named]
    others = [g for g, named in spans if not named]
    if max_share is None:
        rare = others
    else:
        most = max(1.0, max_share * n_objects)  # a word of one object is rare in any collection
        rare = [g for g in others if index.document_frequency(g) <= most]
    pool = rare if (names or rare) else others
    ranked = sorted(pool, key=lambda g: (index.document_frequency(g), -len(g.split()), others.index(g)))
    chosen = names + (ranked if limit is None else ranked[: max(0, limit - len(names))])
    keep = set(chosen if most_keywords is None else chosen[: max(0, most_keywords)])
    return [g for g, _ in spans if g in keep]


def align_keyword(keyword: str, index: ArmIndex, *, per_keyword: int = 3, min_score: float = 0.5) -> list[AlignedNgram]:
    """LLM-free alignment of one keyword (each ``table:column`` part separately): the best
    ``per_keyword`` shortlisted corpus n-grams scoring at least ``min_score``."""
    out: list[AlignedNgram] = []
    for part in keyword_parts(keyword):
        for s in shortlist(part, index, limit=per_keyword):
            if s.score >= min_score and index.has_ngram(s.ngram):
                out.append(AlignedNgram(keyword, s.ngram, s.score, s.how))
    return out


# --- the base set of search objects (§3.2.1, last paragraph) ----------------------------------------

def _top(scores: "np.ndarray | SparseScores", k: int) -> list[int]:
    if k <= 0 or len(scores) == 0:
        return []
    if isinstance(scores, SparseScores):
        return scores.top(k)
    if len(scores) > 4 * k:  # the k-th best first: a stable sort of those above it, then its ties by position
        # (selected from the front: numpy's selection near an array's end slows down 20x on a large tie, e.g.
        # every object a keyword's query did not reach; the tie is never sorted: the order of a stable sort)
        kth = -np.partition(-scores, k - 1)[k - 1]
        above = np.flatnonzero(scores > kth)
        order = np.concatenate([above[np.argsort(-scores[above], kind="stable")],
                                np.flatnonzero(scores == kth)[: k - len(above)]])
    else:
        order = np.argsort(-scores, kind="stable")[:k]
    return [int(i) for i in order]


def _minmax(x: "np.ndarray | SparseScores") -> "np.ndarray | SparseScores":
    if isinstance(x, SparseScores):
        return x.minmax()
    if len(x) == 0:
        return x
    lo, hi = float(np.min(x)), float(np.max(x))
    return np.zeros_like(x) if hi - lo < 1e-12 else (x - lo) / (hi - lo)


def _mix(bm25: "np.ndarray | SparseScores", dense: "np.ndarray | SparseScores",
         bm25_weight: float) -> "np.ndarray | SparseScores":
    """``bm25_weight`` × min-max normalised BM25 + the rest × min-max normalised dense scores (a
    :class:`SparseScores` adds its candidates only: every other object's normalised score is 0).
    Both sparse (ANN search): sparse, over the objects either holds, with the values the full
    arrays give."""
    b, d = _minmax(bm25), _minmax(dense)
    if isinstance(b, SparseScores) and isinstance(d, SparseScores):
        return _mix_sparse(b, d, bm25_weight)
    out = bm25_weight * (b.toarray() if isinstance(b, SparseScores) else b)
    if isinstance(d, SparseScores):  # d.floor is 0 unless every object is a candidate
        out = out + np.float32((1 - bm25_weight) * d.floor)
        out[d.positions] += (1 - bm25_weight) * (d.values - np.float32(d.floor))
        return out
    return out + (1 - bm25_weight) * d


def _mix_sparse(b: SparseScores, d: SparseScores, bm25_weight: float) -> SparseScores:
    """:func:`_mix` of two normalised sparse scores, computed as the full arrays are (the same
    float32 steps; the floor, an object in neither, is the last element of the same steps)."""
    at = np.union1d(b.positions, d.positions)
    out = bm25_weight * np.append(b[at], np.float32(b.floor))
    out = out + np.float32((1 - bm25_weight) * d.floor)
    out[np.searchsorted(at, d.positions)] += (1 - bm25_weight) * (d.values - np.float32(d.floor))
    return SparseScores(at.astype(np.int64), out[:-1], float(out[-1]), b.n)


@dataclass
class Scores:
    """Every object's scores for one question.

    ``bm25``: BM25 over the bag of all aligned n-grams; ``dense``: cosine similarity to the
    question; ``keyword``: per keyword, its n-gram list as one query (§3.2.1: "each list of
    N-grams decoded is used as a query … exact match and semantic similarity"): min-max
    normalised BM25 over the list's n-grams mixed with the list's embedding similarity.
    """

    bm25: "np.ndarray | SparseScores"  # SparseScores with an ANN index
    dense: "np.ndarray | SparseScores"  # SparseScores from an ANN index
    keyword: "list[np.ndarray | SparseScores]" = field(default_factory=list)
    question: str = ""

    @classmethod
    def of(cls, index: ArmIndex, question: str, groups: Sequence[Sequence[str]],
           bm25_weight: float = ArmContext.keyword_bm25_weight) -> "Scores":
        """``groups``: the aligned n-gram list of each keyword (a flat list of strings is one
        n-gram per keyword); ``bm25_weight``: the share of BM25 in each keyword's query
        (``keyword_bm25_weight``, its default)."""
        groups = [[g] if isinstance(g, str) else list(g) for g in groups]
        groups = [g for g in groups if g]
        query = [t for g in groups for n in g for t in tokens(n)]
        *dense, asked = index.dense_scores_many([", ".join(g) for g in groups] + [question])  # one search
        # with an ANN index, BM25 at a cost in its postings too (sparse but for common words)
        bm25 = index.bm25_sparse if index.dense_mode == "ann" else index.bm25_scores
        per_kw = [_mix(bm25([t for n in g for t in tokens(n)]), d, bm25_weight) for g, d in zip(groups, dense)]
        return cls(bm25(query), asked, per_kw, question)

    def relevance(self, positions: Sequence[int], how: str = "cosine", bm25_weight: float = 0.3) -> np.ndarray:
        """R_i over ``positions`` (§3.2.2): ``"cosine"`` (the paper's: the cosine similarity of the
        question and the object, its best chunk), or ``"mix"`` (a switch: min-max normalised BM25
        over the aligned n-grams and similarity over ``positions``, mixed by ``bm25_weight``)."""
        ps = list(positions)
        if how == "cosine":
            return np.asarray(self.dense[ps], dtype=float)
        if how != "mix":
            raise ValueError(f"unknown relevance {how!r}; expected 'cosine' or 'mix'")
        return bm25_weight * _minmax(self.bm25[ps]) + (1 - bm25_weight) * _minmax(self.dense[ps])


def base_pool(index: ArmIndex, scores: Scores, ctx: ArmContext) -> dict[int, str]:
    """The base set of search objects (§3.2.1, end), position → how it was found: each keyword's
    best ``keyword_pool`` objects by its n-gram list's combined score (``keyword i``)."""
    pool: dict[int, str] = {}
    for i, s in enumerate(scores.keyword):
        for p in _top(s, ctx.keyword_pool):
            pool.setdefault(p, f"keyword {i}")
    return pool


async def question_scores(art: ArmRuntime, ctx: ArmContext, state: ArmState) -> tuple[ArmIndex, "Scores"]:
    """Every object's scores for the question and its aligned n-gram lists, computed once per
    question and run (the ``retrieve`` and ``structure`` nodes share them: :meth:`ArmRuntime.memo`)."""
    index = await art.aindex(ctx)
    groups = tuple(tuple(a["ngrams"]) for a in state.get("alignment") or [])
    key = ("scores", id(index), state["question"], groups, ctx.keyword_bm25_weight)
    # embeds the question and each keyword's n-gram list: in a thread, off the event loop
    return index, await art.memo(key, lambda: asyncio.to_thread(Scores.of, index, state["question"], groups,
                                                                ctx.keyword_bm25_weight))


def suspect_positions(index: ArmIndex) -> frozenset[int]:
    """The positions of the collection's objects that address the model (their title, text or
    column names: :mod:`atomgraph.injection`), found once per index."""
    from atomgraph.injection import is_suspect

    found = index.__dict__.get("_suspect")
    if found is None:
        found = index.__dict__["_suspect"] = frozenset(
            p for p, o in enumerate(index.objects) if is_suspect(f"{o.title} | {o.text} {' '.join(o.columns)}"))
    return found


def make_retrieve_node(art: ArmRuntime) -> Callable:
    async def retrieve(state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        index, scores = await question_scores(art, ctx, state)
        pool = base_pool(index, scores, ctx)
        suspect = suspect_positions(index) & set(pool)
        drop = art.drop_suspect()  # a suspect object leaves the pool (and every expansion: structure node)
        ps = [p for p in pool if not (drop and p in suspect)]
        rel = scores.relevance(ps, ctx.relevance, ctx.bm25_weight)
        candidates = [Candidate(id=index.objects[p].id, via=pool[p], bm25=round(float(scores.bm25[p]), 4),
                                dense=round(float(scores.dense[p]), 4), relevance=round(float(r), 4),
                                **({"suspect_instruction": True} if p in suspect else {}))
                      for p, r in zip(ps, rel)]

        found_via = {p: pool[p] for p in suspect}

        def counted(via: str) -> dict[str, int]:
            n = sum(1 for v in found_via.values() if v == via)
            return {"suspect": n, "dropped": n if drop else 0}

        pool = {p: v for p, v in pool.items() if p in ps}
        ngrams = list(dict.fromkeys(a["ngram"] for a in state.get("aligned") or []))
        async with retriever_run("arm_objects", state["question"], tags=["source:arm"],  # a trace span
                                 metadata={"ngrams": ngrams[:50]}) as span:
            span.end(Evidence(title=index.objects[p].title, text=index.objects[p].text[:300], source="arm",
                              id=index.objects[p].id, metadata={"via": pool[p]}) for p in ps)
        calls = [RetrieverCall(source="arm:keyword", query=", ".join(a["ngrams"])[:500],
                               hits=sum(1 for v in pool.values() if v == f"keyword {i}"), **counted(f"keyword {i}"))
                  for i, a in enumerate(state.get("alignment") or [])]
        out: dict[str, Any] = {"candidates": candidates, "retriever_calls": calls}
        if not state.get("alignment"):
            out["problems"] = ["retrieve: no keyword aligned to a corpus n-gram; the base search objects are the "
                               "question's nearest objects by embedding alone"]
        return out

    return retrieve
