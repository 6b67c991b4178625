"""Node functions of the ``arm`` graph, one per stage of the ARM paper.

decompose → align → retrieve → structure → draft → verify → aggregate → answer

Every node reads the run's :class:`~atomgraph.state.arm_graph.ArmGraphContext`, records its
model calls, and turns a failed call or an unreadable reply into a note in ``problems`` and
a documented fallback (the LLM-free path of :mod:`atomgraph.nodes.arm.alignment`, the
solver's draft unchanged, a frequency vote, the first draft), never into an exception. Only a
missing model or data-collection configuration raises ``ConfigError``.

Invariant of ``align``: every ``aligned[*]["ngram"]`` is a corpus n-gram of the index, on
every decoding path (constrained, snapped, LLM-free), whatever the model returned.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.errors import AtomgraphError
from atomgraph.nodes.arm.alignment import (
    align_keyword,
    build_alignment_request,
    extract_keywords,
    keyword_parts,
    parse_alignment,
)
from atomgraph.nodes.arm.collection import Collection
from atomgraph.nodes.arm.decoding import (
    ask_bound,
    choice_schema,
    decoding_mode,
    schema_body,
    span_logprobs,
    token_logprobs,
)
from atomgraph.nodes.arm.pool import Scores, base_pool, solve_drafts, vote_drafts
from atomgraph.nodes.arm.verbalize import verbalize_draft, verbalize_object
from atomgraph.nodes.arm.voting import aggregate as vote
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.arm.stages import ALIGN, ALIGN_LIST, ANSWER, DECOMPOSE, DRAFT, VERIFY
from atomgraph.prompts.constraints import JsonSchema, TokenTrie, is_local, unwrap
from atomgraph.tools.arm_index import normalize_ngram
from atomgraph.state.arm_graph import ArmGraphContext
from atomgraph.state.evidence import Evidence
from atomgraph.state.usage import RetrieverCall
from atomgraph.tools.arm_index import ArmIndex
from atomgraph.tools.base import retriever_run
from atomgraph.state.output import check_question


class ArmRuntime:
    """The method runtime plus the data collection (its index is resolved per run)."""

    def __init__(self, rt: MethodRuntime, collection: Collection):
        self.rt = rt
        self.collection = collection

    def params(self, config: RunnableConfig | None) -> ArmGraphContext:
        return self.rt.params(config)

    def index(self, ctx: ArmGraphContext) -> ArmIndex:
        return self.collection.index(ctx.objects, ctx.index_cache)

    async def aindex(self, ctx: ArmGraphContext) -> ArmIndex:
        """:meth:`index` in a thread: the first call reads the objects file and loads the
        embedding model, which must not block the event loop (``langgraph dev`` forbids it)."""
        return await asyncio.to_thread(self.index, ctx)


def _keep_corpus(index: ArmIndex, entries: list[dict], problems: list[str]) -> list[dict]:
    """The invariant, enforced at the end of alignment: only corpus n-grams pass."""
    out = []
    for e in entries:
        if isinstance(e.get("ngram"), str) and index.has_ngram(e["ngram"]):
            out.append(e)
        else:  # never expected: every path above already yields corpus n-grams
            problems.append(f"align: dropped {e.get('ngram')!r}, not a corpus n-gram")
    return out


def group_alignment(entries: list[dict]) -> list[dict]:
    """Per keyword, its list of corpus n-grams: ``{"keyword", "ngrams", "scores", "mode"}``
    (the record every run keeps; each n-gram occurs contiguously in some object)."""
    out: dict[str, dict] = {}
    for e in entries:
        rec = out.setdefault(e["keyword"], {"keyword": e["keyword"], "ngrams": [], "scores": [], "mode": e.get("mode", "none")})
        if e["ngram"] not in rec["ngrams"]:
            rec["ngrams"].append(e["ngram"])
            rec["scores"].append(e.get("score"))
    return list(out.values())


def _titles(index: ArmIndex, ids: list[str]) -> list[str]:
    return [index.objects[index.position(i)].title for i in ids]


# --- information alignment -----------------------------------------------------------------

def make_decompose_node(art: ArmRuntime) -> Callable:
    """Keywords: replayed from the input (no model), else the model's decomposition, else
    (unreadable reply) the question's corpus n-grams."""

    async def decompose(state: dict, config: RunnableConfig) -> dict[str, Any]:
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
        result = await art.rt.ask(DECOMPOSE, {"question": question, "max_keywords": ctx.max_keywords}, config)
        if result.ok:
            return {"question": question, "keywords": result.value[: ctx.max_keywords], "keyword_source": "model",
                    "llm_calls": [result.call]}
        kws = extract_keywords(question, index)[: ctx.max_keywords]
        return {"question": question, "keywords": kws, "keyword_source": "question_ngrams", "llm_calls": [result.call],
                "problems": [f"decompose: {result.problem}; keywords taken from the question's corpus n-grams"]}

    return decompose


def make_align_node(art: ArmRuntime) -> Callable:
    """Each keyword to a corpus n-gram: by the model under the server's constraint (replayed
    keywords: LLM-free). The invariant holds on every path (module doc)."""

    async def align(state: dict, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        index = await art.aindex(ctx)
        question = state["question"]
        keywords = state.get("keywords") or []
        problems: list[str] = []
        if state.get("keyword_source") != "model":
            entries = [{"keyword": a.keyword, "ngram": a.ngram, "score": round(a.score, 4), "path": a.path, "mode": "none"}
                       for kw in keywords for a in align_keyword(kw, index, per_keyword=ctx.ngrams_per_keyword,
                                                                  min_score=ctx.min_alignment_score)]
            kept = _keep_corpus(index, entries, problems)
            return {"aligned": kept, "alignment": group_alignment(kept), "problems": problems,
                    "decoding": {"mode": "none", "why": f"keywords {state.get('keyword_source')}: aligned without a model"}}
        model = await art.rt.amodel(ALIGN.role)
        if ctx.decoding in ("auto", "local_trie_beam") and is_local(model):
            return await _align_by_beam(art, ctx, index, question, keywords, model, config)
        # may ask the server who it is (HTTP, cached per URL): in a thread, off the event loop
        mode, why = await asyncio.to_thread(decoding_mode, model, ctx.decoding)
        parts = [(kw, part) for kw in keywords for part in keyword_parts(kw)]
        requests = [build_alignment_request(part, index, mode, shortlist_size=ctx.shortlist_size,
                                            max_enum=ctx.enum_max_values) for _, part in parts]

        async def one(kw: str, req):
            options = "\n".join(req.allowed) if req.allowed else "(no close phrase found: write the phrase as the collection would)"
            result, _ = await ask_bound(art.rt, ALIGN, {"question": question, "keyword": req.keyword, "options": options},
                                        config, mode=req.mode, body=req.body)
            return kw, req, result

        results = await asyncio.gather(*(one(kw, req) for (kw, _), req in zip(parts, requests)))
        entries: list[dict] = []
        calls = []
        for kw, req, result in results:
            calls.append(result.call)
            got = parse_alignment(result.value, req, index) if result.ok else None
            if got is not None:
                entries.append({"keyword": kw, "ngram": got.ngram, "score": round(got.score, 4), "path": got.path,
                                "mode": req.mode})
                continue
            fallback = align_keyword(req.keyword, index, per_keyword=1, min_score=0.0)
            reason = result.problem if not result.ok else "the reply matches no corpus n-gram"
            problems.append(f"align {req.keyword!r}: {reason}; " +
                            (f"aligned without the model to {fallback[0].ngram!r}" if fallback else "keyword dropped"))
            entries += [{"keyword": kw, "ngram": a.ngram, "score": round(a.score, 4), "path": "fallback", "mode": req.mode}
                        for a in fallback]
        kept = _keep_corpus(index, entries, problems)
        return {"aligned": kept, "alignment": group_alignment(kept), "llm_calls": calls, "problems": problems,
                "decoding": {"mode": mode, "why": why}}

    return align


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


async def _align_by_beam(art: ArmRuntime, ctx: ArmGraphContext, index: ArmIndex, question: str,
                         keywords: list[str], model: Any, config: RunnableConfig) -> dict[str, Any]:
    """§3.2.1 with an in-process model: each keyword rephrased as a list ``(a, b, …)`` of corpus
    n-grams by beam search over a token trie of every n-gram; score = mean logit per n-gram."""
    trie = await asyncio.to_thread(ngram_token_trie, index, unwrap(model).engine)
    constraint = TokenTrie(trie, beam_width=ctx.beam_width, n_best=1)
    problems: list[str] = []
    entries: list[dict] = []
    calls = []
    for kw in keywords:  # one engine: sequential
        result = await art.rt.ask(ALIGN_LIST, {"question": question, "keyword": kw}, config, constraint=constraint)
        calls.append(result.call)
        meta = getattr(result.message, "response_metadata", None) or {}
        beams = meta.get("beams") or []
        best = beams[0] if beams else {}
        strings = best.get("strings") or (result.value if result.ok else [])
        scores = best.get("string_scores") or [None] * len(strings)
        got = [(normalize_ngram(g), sc) for g, sc in zip(strings, scores) if index.has_ngram(normalize_ngram(g))]
        if got:
            entries += [{"keyword": kw, "ngram": g, "score": None if sc is None else round(float(sc), 4),
                         "path": "beam", "mode": "local_trie_beam"} for g, sc in got]
            continue
        fallback = align_keyword(kw, index, per_keyword=ctx.ngrams_per_keyword, min_score=0.0)
        problems.append(f"align {kw!r}: {result.problem or 'no n-gram list decoded'}; "
                        + (f"aligned without the model to {[a.ngram for a in fallback]}" if fallback else "keyword dropped"))
        entries += [{"keyword": kw, "ngram": a.ngram, "score": round(a.score, 4), "path": "fallback",
                     "mode": "local_trie_beam"} for a in fallback]
    kept = _keep_corpus(index, entries, problems)
    return {"aligned": kept, "alignment": group_alignment(kept), "llm_calls": calls, "problems": problems,
            "decoding": {"mode": "local_trie_beam",
                         "why": f"in-process model: beam search (width {ctx.beam_width}) over a token trie of "
                                f"{len(index.trie)} corpus n-grams"}}


# --- retrieval and structure alignment -------------------------------------------------------

async def _scores(art: ArmRuntime, ctx: ArmGraphContext, state: dict) -> tuple[ArmIndex, Scores]:
    index = await art.aindex(ctx)
    groups = [a["ngrams"] for a in state.get("alignment") or []]
    # embeds the question and each keyword's n-gram list: in a thread, off the event loop
    return index, await asyncio.to_thread(Scores.of, index, state["question"], groups, ctx.bm25_weight)


def make_retrieve_node(art: ArmRuntime) -> Callable:
    """The base search objects: BM25 over the aligned n-grams and embedding similarity."""

    async def retrieve(state: dict, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        index, scores = await _scores(art, ctx, state)
        pool = base_pool(index, scores, ctx)
        ps = list(pool)
        rel = scores.relevance(ps, ctx.bm25_weight)
        candidates = [{"id": index.objects[p].id, "via": pool[p], "bm25": round(float(scores.bm25[p]), 4),
                       "dense": round(float(scores.dense[p]), 4), "relevance": round(float(r), 4)}
                      for p, r in zip(ps, rel)]
        ngrams = list(dict.fromkeys(a["ngram"] for a in state.get("aligned") or []))
        async with retriever_run("arm_objects", state["question"], tags=["source:arm"],  # a trace span
                                 metadata={"ngrams": ngrams[:50]}) as span:
            span.end(Evidence(title=index.objects[p].title, text=index.objects[p].text[:300], source="arm",
                              id=index.objects[p].id, metadata={"via": pool[p]}) for p in ps)
        calls = [RetrieverCall(source="arm:bm25", query=" | ".join(ngrams)[:500],
                               hits=sum(1 for v in pool.values() if v == "bm25")),
                 RetrieverCall(source="arm:dense", query=state["question"][:500],
                               hits=sum(1 for v in pool.values() if v == "dense"))]
        calls += [RetrieverCall(source="arm:keyword", query=", ".join(a["ngrams"])[:500],
                                hits=sum(1 for v in pool.values() if v == f"keyword {i}"))
                  for i, a in enumerate(state.get("alignment") or [])]
        return {"candidates": candidates, "retriever_calls": calls}

    return retrieve


def make_structure_node(art: ArmRuntime) -> Callable:
    """One MIP draft per expanded set of search objects (§3.2.2)."""

    async def structure(state: dict, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        index, scores = await _scores(art, ctx, state)
        pool = {index.position(c["id"]): c["via"] for c in state.get("candidates") or []}

        # embeds units and runs CBC: in a thread, off the event loop
        drafts = await asyncio.to_thread(solve_drafts, index, pool, scores, ctx)
        notes = []
        if ctx.structure_alignment and len(drafts) < ctx.drafts:
            notes.append(f"structure: {ctx.drafts - len(drafts)} expansion(s) added nothing new; {len(drafts)} draft(s)")
        return {"drafts": drafts, "problems": notes}

    return structure


async def _mode_for(art: ArmRuntime, ctx: ArmGraphContext, state: dict) -> str:
    mode = (state.get("decoding") or {}).get("mode")
    if mode in (None, "none"):
        mode, _ = await asyncio.to_thread(decoding_mode, await art.rt.amodel(VERIFY.role), ctx.decoding)
    return mode


def make_draft_node(art: ArmRuntime) -> Callable:
    """The decoder's changes to each solver draft: objects added from the draft's search
    objects, objects dropped; at most ``max_draft_changes`` per draft."""

    async def draft(state: dict, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        drafts = [dict(d) for d in state.get("drafts") or []]
        if ctx.max_draft_changes == 0 or not drafts:
            return {}
        index = await art.aindex(ctx)
        mode = await _mode_for(art, ctx, state)
        question = state["question"]
        keywords = ", ".join(state.get("keywords") or []) or "(none)"

        async def one(d: dict):
            others = sorted((i for i in d["pool"] if i not in d["ids"]), key=lambda i: -d["relevance"].get(i, 0))[:20]
            if not others and not d["ids"]:
                return None
            body = schema_body(mode, choice_schema(d["pool"], ["add", "drop"]), "draft_changes")
            values = {"question": question, "keywords": keywords, "max_changes": ctx.max_draft_changes,
                      "draft": verbalize_draft(index, d["ids"], d["links"], question, ctx.verbalize_top_rows),
                      "others": "\n".join(f"{i} — {index.objects[index.position(i)].title}" for i in others) or "(none)"}
            if is_local(art.rt.model(DRAFT.role)):  # the kit's call path constrains in-process models
                return await art.rt.ask(DRAFT, values, config,
                                        constraint=JsonSchema(choice_schema(d["pool"], ["add", "drop"]), "draft_changes"))
            result, _ = await ask_bound(art.rt, DRAFT, values, config, mode=mode, body=body)
            return result

        results = await asyncio.gather(*(one(d) for d in drafts))
        calls, problems = [], []
        for d, result in zip(drafts, results):
            if result is None:
                continue
            calls.append(result.call)
            if not result.ok:
                problems.append(f"draft {d['draft']}: {result.problem}; the solver's draft kept")
                continue
            inside = set(d["ids"])
            adds = [i for i in result.value["add"] if i in d["pool"] and i not in inside]
            drops = [i for i in result.value["drop"] if i in inside]
            budget = ctx.max_draft_changes
            adds, drops = adds[:budget], drops[: max(0, budget - len(adds[:budget]))]
            ids = [i for i in d["ids"] if i not in drops] + adds
            ignored = [i for i in result.value["add"] + result.value["drop"] if i not in adds + drops]
            if not ids:
                problems.append(f"draft {d['draft']}: the changes left no object; the solver's draft kept")
                continue
            d.update(ids=ids, added=adds, dropped=drops, ignored=ignored)
        return {"drafts": drafts, "llm_calls": calls, "problems": problems}

    return draft


# --- self-verification, aggregation, answer ----------------------------------------------------

def resolve_names(names: list[str], ids: list[str], index: ArmIndex) -> tuple[list[str], list[str], dict[str, str]]:
    """Map the verifier's names to draft ids (exact id, case-insensitive id, title, or
    ``[n]``/``n`` position); ``(ids, unknown names, name → id)``."""
    by_fold = {i.casefold(): i for i in ids}
    by_title = {index.objects[index.position(i)].title.casefold(): i for i in ids}
    out, unknown, named = [], [], {}
    for name in names:
        key = name.strip().strip("[]").strip()
        oid = (name if name in ids else by_fold.get(key.casefold()) or by_title.get(key.casefold())
               or (ids[int(key) - 1] if key.isdigit() and 1 <= int(key) <= len(ids) else None))
        if oid is None:
            unknown.append(name)
        else:
            named[name] = oid
            if oid not in out:
                out.append(oid)
    return out, unknown, named


def make_verify_node(art: ArmRuntime) -> Callable:
    """The decoder verifies each draft: which of its objects answer the question (only draft
    objects count), with token log-probabilities where the server returns them."""

    async def verify(state: dict, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        drafts = state.get("drafts") or []
        if not drafts or not ctx.verification:
            return {"verdicts": []}
        index = await art.aindex(ctx)
        mode = await _mode_for(art, ctx, state)
        question = state["question"]
        keywords = ", ".join(state.get("keywords") or []) or "(none)"

        async def one(d: dict):
            body = schema_body(mode, choice_schema(d["ids"], ["objects"], with_reasoning=True), "verified_objects")
            values = {"question": question, "keywords": keywords,
                      "draft": verbalize_draft(index, d["ids"], d["links"], question, ctx.verbalize_top_rows)}
            if is_local(art.rt.model(VERIFY.role)):  # the kit's call path constrains in-process models
                schema = choice_schema(d["ids"], ["objects"], with_reasoning=True)
                res = await art.rt.ask(VERIFY, values, config, constraint=JsonSchema(schema, "verified_objects"),
                                       logprobs=ctx.logprobs)
                return res, res.message
            return await ask_bound(art.rt, VERIFY, values, config, mode=mode, body=body, logprobs=ctx.logprobs)

        results = await asyncio.gather(*(one(d) for d in drafts))
        verdicts, calls, problems = [], [], []
        for d, (result, raw) in zip(drafts, results):
            calls.append(result.call)
            if not result.ok:
                problems.append(f"verify draft {d['draft']}: {result.problem}; its vote is left out")
                verdicts.append({"draft": d["draft"], "selected": None, "weights": {}, "problem": result.problem})
                continue
            ids, unknown, named = resolve_names(result.value["objects"], d["ids"], index)
            lps = span_logprobs(token_logprobs(raw), list(named))
            weights = {}
            for name, oid in named.items():
                if name in lps:
                    weights[oid] = round(max(weights.get(oid, -1e9), lps[name]), 6)
            verdicts.append({"draft": d["draft"], "selected": ids, "weights": weights, "ignored": unknown,
                             "reasoning": result.value.get("reasoning", ""), "problem": None})
        return {"verdicts": verdicts, "llm_calls": calls, "problems": problems}

    return verify


def make_aggregate_node(art: ArmRuntime) -> Callable:
    """The confidence-weighted vote over the verified drafts; the retrieved objects."""

    async def aggregate(state: dict, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        index = await art.aindex(ctx)
        drafts = state.get("drafts") or []
        usable = [v for v in state.get("verdicts") or [] if v.get("selected") is not None]
        votes, how = vote(usable, vote_weight=ctx.vote_weight)
        problems = []
        chosen = [v["id"] for v in votes][: ctx.k]
        if not ctx.verification:
            how = "draft votes (verification off)"
            chosen = vote_drafts(drafts, ctx.k)
        elif not usable and drafts:
            how = "first draft (no verification was readable)"
            problems.append("aggregate: no draft was verified; the first draft's objects are used")
            chosen = list(drafts[0]["ids"])[: ctx.k]
        if ctx.fill_to_k and len(chosen) < ctx.k:
            for d in drafts:
                for i in d["ids"]:
                    if len(chosen) < ctx.k and i not in chosen:
                        chosen.append(i)
        return {"votes": votes, "retrieved_ids": chosen, "retrieved_titles": _titles(index, chosen),
                "decoding": {**(state.get("decoding") or {}), "vote": how}, "problems": problems}

    return aggregate


def make_answer_node(art: ArmRuntime) -> Callable:
    """The answer from the retrieved objects (skipped with ``answer=False``); the trace."""

    async def answer(state: dict, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        out: dict[str, Any] = {"stopped": None}
        problems: list[str] = []
        if state.get("error"):
            out.update(answer="", answers=[], error=state["error"])
        elif not ctx.answer:
            out.update(answer="", answers=[], error=None)
        else:
            index = await art.aindex(ctx)
            ids = state.get("retrieved_ids") or []
            objects = "\n\n".join(verbalize_object(index, index.objects[index.position(i)], state["question"],
                                                   ctx.verbalize_top_rows) for i in ids) or "(nothing was retrieved)"
            result = await art.rt.ask(ANSWER, {"question": state["question"], "objects": objects}, config)
            out["llm_calls"] = [result.call]
            if result.ok:
                out.update(answer=result.value, answers=[result.value], error=None)
            else:
                problems.append(f"answer: {result.problem}")
                out.update(answer="", answers=[], error=result.problem)
        out["trace"] = {
            "method": "arm",
            "keywords": state.get("keywords") or [],
            "keyword_source": state.get("keyword_source"),
            "decoding": state.get("decoding") or {},
            "alignment": state.get("alignment") or [],
            "aligned": state.get("aligned") or [],
            "distinct_drafts": len({frozenset(d["ids"]) for d in state.get("drafts") or []}),
            "candidates": state.get("candidates") or [],
            "drafts": state.get("drafts") or [],
            "verdicts": state.get("verdicts") or [],
            "votes": state.get("votes") or [],
            "retrieved_ids": state.get("retrieved_ids") or [],
            "answered": bool(ctx.answer and not state.get("error")),
            "problems": list(state.get("problems") or []) + problems,
        }
        out["retrieved_ids"] = state.get("retrieved_ids") or []
        out["retrieved_titles"] = state.get("retrieved_titles") or []
        if problems:
            out["problems"] = problems
        return out

    return answer
