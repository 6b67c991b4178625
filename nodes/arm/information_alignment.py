"""§3.2.1 information alignment: the ``decompose`` and ``align`` nodes.

decompose — the question's keywords: replayed from the input (no model), else the decoder's
decomposition, else (unreadable reply) the question's corpus n-grams.

align — each keyword rephrased as corpus n-grams, by the path the model allows:

| model | path | trace ``decoding.mode`` |
|---|---|---|
| in-process (``ATOMGRAPH_MODEL=local``) | a list ``(a, b, …)`` by beam search over a token trie of every corpus n-gram (the paper's) | ``local_trie_beam`` |
| vLLM / llama.cpp server, ``served_alignment="grammar"`` (switch) | a list ``(a, b, …)`` under a prefix-factored grammar of every corpus n-gram | ``ngram_grammar`` |
| vLLM / llama.cpp server / OpenAI (default) | one n-gram of a ≤ ``shortlist_size`` lexical shortlist (``Choice``) | ``vllm_choice``, ``llamacpp_grammar``, ``openai_json_schema`` |
| anything else | free text, snapped to the nearest corpus n-gram | ``free`` |

INVARIANT: every ``aligned[*]["ngram"]`` is a corpus n-gram of the index, on every path
(constrained, snapped, LLM-free), whatever the model returned.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.errors import AtomgraphError
from atomgraph.nodes.arm.alignment import align_keyword, alignment_request, extract_keywords, keyword_parts, parse_alignment
from atomgraph.nodes.arm.common import ArmRuntime, decoding_mode
from atomgraph.prompts.arm.alignment import (
    ALIGN, ALIGN_LIST, DECOMPOSE, LIST_CLOSE, LIST_OPEN, LIST_SEP, ngram_list_grammar, shortlist_choice,
)
from atomgraph.prompts.constraints import Constraint, Grammar, TokenTrie, unwrap
from atomgraph.state.arm_graph import Aligned, ArmGraphContext, ArmState, Decoding, KeywordAlignment
from atomgraph.state.output import check_question
from atomgraph.tools.arm_index import ArmIndex, normalize_ngram


def make_decompose_node(art: ArmRuntime) -> Callable:
    async def decompose(state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        try:
            question = check_question(state.get("question"))
        except AtomgraphError as exc:
            return {"error": str(exc), "problems": [f"question: {exc}"]}
        ctx = art.params(config)
        try:
            index = await art.aindex(ctx)
        except AtomgraphError as exc:  # no objects file, bad objects: data, not an exception (issue 21)
            return {"question": question, "error": f"ARM data collection: {exc}", "problems": [f"objects: {exc}"]}
        given = state.get("keywords")
        if isinstance(given, list) and any(isinstance(k, str) and k.strip() for k in given):
            kws = [k for k in given if isinstance(k, str) and k.strip()][: ctx.max_keywords]
            return {"question": question, "keywords": kws, "keyword_source": "replayed"}
        result = await art.ask(DECOMPOSE, {"question": question, "max_keywords": ctx.max_keywords}, config)
        if result.ok:
            return {"question": question, "keywords": result.value[: ctx.max_keywords], "keyword_source": "model",
                    "llm_calls": [result.call]}
        kws = extract_keywords(question, index)[: ctx.max_keywords]
        return {"question": question, "keywords": kws, "keyword_source": "question_ngrams", "llm_calls": [result.call],
                "problems": [f"decompose: {result.problem}; keywords taken from the question's corpus n-grams"]}

    return decompose


def make_align_node(art: ArmRuntime) -> Callable:
    async def align(state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        index = await art.aindex(ctx)
        keywords = state.get("keywords") or []
        problems: list[str] = []
        if state.get("keyword_source") != "model":
            entries = [Aligned(keyword=a.keyword, ngram=a.ngram, score=round(a.score, 4), path=a.path, mode="none")
                       for kw in keywords for a in align_keyword(kw, index, per_keyword=ctx.ngrams_per_keyword,
                                                                  min_score=ctx.min_alignment_score)]
            dec = Decoding(mode="none", why=f"keywords {state.get('keyword_source')}: aligned without a model")
            return _aligned(index, entries, [], problems, dec)
        model = await art.amodel(ALIGN.role)
        # may ask the server who it is (HTTP, cached per URL): in a thread, off the event loop
        dec = await asyncio.to_thread(decoding_mode, model, ctx.decoding)
        if dec["backend"] == "local":
            trie = await asyncio.to_thread(ngram_token_trie, index, unwrap(model).engine)
            dec["why"] = (f"in-process model: beam search (width {ctx.beam_width}) over a token trie of "
                          f"{len(index.trie)} corpus n-grams")
            constraint = TokenTrie(trie, beam_width=ctx.beam_width, n_best=1, open=LIST_OPEN, close=LIST_CLOSE, sep=LIST_SEP)
            return await _align_lists(art, ctx, index, state, config, constraint, dec, "beam")
        if ctx.served_alignment == "grammar":
            grammar, note = await asyncio.to_thread(served_grammar, index, dec["backend"], ctx.grammar_max_ngrams)
            if grammar is not None:
                dec = Decoding(mode="ngram_grammar", backend=dec["backend"], why=f"{dec['why']}; {note}")
                return await _align_lists(art, ctx, index, state, config, grammar, dec, "grammar")
            dec["why"] = f"{dec['why']}; served_alignment=grammar: {note}: shortlist instead"
        return await _align_shortlists(art, ctx, index, state, config, dec)

    return align


async def _align_shortlists(art: ArmRuntime, ctx: ArmGraphContext, index: ArmIndex, state: ArmState,
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


async def _align_lists(art: ArmRuntime, ctx: ArmGraphContext, index: ArmIndex, state: ArmState, config: RunnableConfig,
                       constraint: Constraint, dec: Decoding, path: str) -> dict[str, Any]:
    """§3.2.1 as the paper decodes it: each keyword rephrased as a list ``(a, b, …)`` of corpus
    n-grams under ``constraint`` (a token trie in process: beam search, score = mean logit per
    n-gram; a grammar on a server). One in-process engine decodes one keyword at a time."""

    async def one(kw: str):
        return await art.ask(ALIGN_LIST, {"question": state["question"], "keyword": kw}, config,
                                constraint=constraint, backend_kind=dec["backend"])

    keywords = state.get("keywords") or []
    if dec["backend"] == "local":
        results = [await one(kw) for kw in keywords]
    else:
        results = await asyncio.gather(*(one(kw) for kw in keywords))
    entries: list[Aligned] = []
    problems: list[str] = []
    for kw, result in zip(keywords, results):
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
        problems.append(f"align {kw!r}: {result.problem or 'no n-gram list decoded'}; "
                        + (f"aligned without the model to {[a.ngram for a in fallback]}" if fallback else "keyword dropped"))
        entries += [Aligned(keyword=kw, ngram=a.ngram, score=round(a.score, 4), path="fallback", mode=dec["mode"])
                    for a in fallback]
    return _aligned(index, entries, [r.call for r in results], problems, dec)


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


def served_grammar(index: ArmIndex, backend: str, max_ngrams: int) -> tuple[Grammar | None, str]:
    """``served_alignment="grammar"``: the grammar of every corpus n-gram for a server that takes
    one (built once per index), and what it is — or None and why not."""
    if backend not in ("vllm", "llamacpp"):
        return None, f"the {backend} backend takes no grammar"
    n = len(index.trie)
    if n > max_ngrams:
        return None, f"the collection's {n:,} n-grams exceed grammar_max_ngrams ({max_ngrams:,})"
    grammar = index.__dict__.get("_ngram_grammar")
    if grammar is None:
        grammar = index.__dict__["_ngram_grammar"] = ngram_list_grammar(index.trie.iterkeys())
    size = len(grammar.gbnf.encode())
    return grammar, (f"the list (a, b, …) under a prefix-factored grammar of {n:,} corpus n-grams "
                     f"({grammar.gbnf.count('::=') - 1:,} rules, {size / 1e6:.2f} MB)")
