"""§3.3 self-verification and aggregation: the decoder reads each draft in words (Appendix C),
keeps the objects that answer the question, and the verified drafts vote.

- the drafts in words (Appendix C: :func:`verbalize_draft`, :func:`verbalize_object`): each
  object serialised as in Appendix A (:func:`atomgraph.tools.objects.serialize`) but keeping only
  its ``n`` rows or sentences most similar to the question (embedding similarity, in their
  original order), then the connections: joinable columns between tables ("column X in A
  connects with column Y in B") and entity links ("A includes '…' which mentions B");
- the ``verify`` node: the decoder keeps, per draft, the objects that answer the question (only
  the draft's objects count), with the token log-probabilities of their names where the server
  returns them; with ``connected_selection`` (a switch) a selection is cut to its largest part
  joined by the draft's links (:func:`connected_part`), the cut objects recorded;
- the ``aggregate`` node: the confidence-weighted vote over the drafts (:func:`aggregate_votes`;
  without verification, :func:`vote_drafts`).

Aggregation, as §3.3 writes it: "the number of votes an
object receives is the count of its occurrences across all drafts", softmaxed, and "the weight
of a vote" is the probability of the tokens that name the object in the verifier's reply (exp of
their mean log-probability; 1 where the server returned none or the name's tokens were not
found). An object's confidence is

    vote_weight × (mean weight of the votes the verifiers cast for it) + (1 − vote_weight) × softmax(occurrences)

so every object of every draft has a confidence: an object no verifier selected has vote weight
0 and ranks by its occurrences after the selected ones (with ``vote_weight`` ≥ 0.5 and no
log-probabilities always after them), and the final set — "the data objects with the highest
confidence" — holds k objects whenever the drafts do (the paper: ARM retrieves "on average 5.00
objects" at k = 5 on every set). Ties: the best relevance R_i, then first occurrence.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
from langchain_core.runnables import RunnableConfig

from atomgraph.injection import fence
from atomgraph.nodes.arm.structure_alignment import column_compatibility, find_root, sentences
from atomgraph.prompts.arm import VERIFY, selection_schema
from atomgraph.state.arm_graph import ArmState, Draft, Verdict, Vote
from atomgraph.tools.arm_index import ArmIndex, title_key, tokens
from atomgraph.tools.objects import DataObject, serialize

if TYPE_CHECKING:
    from atomgraph.nodes.arm.pipeline import ArmRuntime


# --- drafts in words (Appendix C): what the decoder reads -------------------------------------------

MAX_UNITS = 200  # rows or sentences of one object compared with the question


def _encode(index: ArmIndex, texts: list[str]) -> np.ndarray:
    emb = index.embeddings
    encode = getattr(emb, "encode", None)
    vecs = np.asarray(encode(texts) if callable(encode) else emb.embed_documents(texts), dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms == 0, 1, norms)


MEMO_OBJECTS = 4096  # objects whose unit vectors are kept per index (drafts and questions share objects)


def unit_vectors(index: ArmIndex, obj: DataObject, units: list[str]) -> np.ndarray:
    """``_encode(index, units)`` of one object, encoded once per index (a draft's objects recur
    in the other drafts and in other questions' drafts); the same call, so the same vectors."""
    memo = index.__dict__.setdefault("_verbalize_units", {})
    vecs = memo.get(obj.id)
    if vecs is None or len(vecs) != len(units):
        vecs = _encode(index, units)
        if len(memo) >= MEMO_OBJECTS:
            memo.pop(next(iter(memo)))
        memo[obj.id] = vecs
    return vecs


def top_units(index: ArmIndex, obj: DataObject, question: str, n: int) -> list[int]:
    """Positions of the ``n`` rows (table) or sentences (passage) most similar to the question."""
    units = [" | ".join(r) for r in obj.rows] if obj.is_table else sentences(obj.text)
    units = units[:MAX_UNITS]
    if len(units) <= n:
        return list(range(len(units)))
    try:
        sims = unit_vectors(index, obj, units) @ index.embed_query(question)
    except Exception:  # noqa: BLE001 - fall back to word overlap when the encoder fails
        q = set(tokens(question))
        sims = np.array([len(q & set(tokens(u))) for u in units], dtype=float)
    return sorted(int(i) for i in np.argsort(-sims, kind="stable")[:n])


def verbalize_object(index: ArmIndex, obj: DataObject, question: str, n: int) -> str:
    keep = top_units(index, obj, question, n)
    if obj.is_table:
        body = serialize(obj, [obj.rows[i] for i in keep]) if obj.rows else serialize(obj)
    else:
        sents = sentences(obj.text)
        text = " ".join(sents[i] for i in keep) if len(sents) > n else obj.text
        body = f"Document name: {obj.title}\nDocument content: {text}"
    return f"Object id: {obj.id}\n{body}"


def _mention_sentence(a: DataObject, b: DataObject) -> str | None:
    key = title_key(b.title)
    for s in sentences(a.text) if not a.is_table else [" | ".join(r) for r in a.rows]:
        if key and key in " ".join(tokens(s)):
            return s
    return None


def connection(index: ArmIndex, a: DataObject, b: DataObject) -> str:
    """One connection between two draft objects, in words."""
    if a.is_table and b.is_table:
        best = max(((column_compatibility(a, x, b, y), x, y) for x in a.columns for y in b.columns),
                   default=(0.0, "", ""))
        if best[0] > 0:
            return f"column {best[1]} in {a.title} connects with column {best[2]} in {b.title}"
    for x, y in ((a, b), (b, a)):
        s = _mention_sentence(x, y)
        if s:
            return f"{x.title} includes \"{s[:300]}\" which mentions {y.title}"
    return f"{a.title} and {b.title} are related"


def verbalize_draft(index: ArmIndex, ids: Sequence[str], links: Sequence[dict], question: str, n: int) -> str:
    """The draft as the decoder reads it: objects, then connections among them, fenced as data
    (``<evidence>`` ... ``</evidence>``: :func:`atomgraph.injection.fence`)."""
    objs = [index.objects[index.position(i)] for i in ids]
    parts = [verbalize_object(index, o, question, n) for o in objs]
    inside = set(ids)
    lines = [connection(index, index.objects[index.position(l["a"])], index.objects[index.position(l["b"])])
             for l in links if l.get("a") in inside and l.get("b") in inside]
    text = "\n\n".join(parts)
    if lines:
        text += "\n\nConnections:\n" + "\n".join(f"- {ln}" for ln in lines)
    return fence(text)


# --- the nodes: verify, aggregate ---------------------------------------------------------------------

def make_verify_node(art: ArmRuntime) -> Callable:
    async def verify(state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        drafts: list[Draft] = state.get("drafts") or []
        if not drafts or not ctx.verification or not ctx.llm:
            return {"verdicts": []}
        index = await art.aindex(ctx)
        dec = await art.decoding(ctx, state, VERIFY.role)
        logprobs = ctx.logprobs and art.takes_logprobs(await art.amodel(VERIFY.role))
        question = state["question"]

        async def one(d: Draft):
            inputs = {"question": question, "keywords": state.get("keywords"),
                      "draft": verbalize_draft(index, d["ids"], d["links"], question, ctx.verbalize_top_rows)}
            return await art.ask(VERIFY, inputs, config, constraint=selection_schema(d["ids"]), logprobs=logprobs,
                                    backend_kind=dec["backend"])

        results = await asyncio.gather(*(one(d) for d in drafts))
        verdicts: list[Verdict] = []
        problems = []
        for d, result in zip(drafts, results):
            if not result.ok:
                problems.append(f"verify draft {d['draft']}: {result.problem}; its vote is left out")
                verdicts.append(Verdict(draft=d["draft"], selected=None, weights={}, problem=result.problem))
                continue
            ids, unknown, named = resolve_names(result.value["objects"], d["ids"], index)
            lps = span_logprobs(token_logprobs(result.message), list(named))
            weights: dict[str, float] = {}
            for name, oid in named.items():
                if name in lps:
                    weights[oid] = round(max(weights.get(oid, -1e9), lps[name]), 6)
            verdict = Verdict(draft=d["draft"], selected=ids, weights=weights, ignored=unknown,
                              reasoning=result.value.get("reasoning", ""), problem=None)
            if ctx.connected_selection and ctx.structure_alignment:  # information alignment alone draws no links
                verdict = cut_to_connected(verdict, d["links"])
            verdicts.append(verdict)
        return {"verdicts": verdicts, "llm_calls": [r.call for r in results], "problems": problems}

    return verify


def connected_part(selected: Sequence[str], links: Sequence[dict],
                   weights: dict[str, float]) -> tuple[list[str], list[str]]:
    """The ``connected_selection`` switch: the largest part of a selection joined by the draft's
    links between selected objects (§3.3: the verifier checks "that selected objects are
    connected"); ties go to the part holding the best-weighted object, then the first selected.
    Returns (kept, cut), each in the selection's order."""
    chosen = set(selected)
    parent: dict[str, str] = {}
    for link in links:
        if link["a"] in chosen and link["b"] in chosen:
            ra, rb = find_root(parent, link["a"]), find_root(parent, link["b"])
            if ra != rb:
                parent[ra] = rb
    parts: dict[str, list[str]] = {}
    for o in selected:
        parts.setdefault(find_root(parent, o), []).append(o)
    if len(parts) < 2:
        return list(selected), []
    order = {o: i for i, o in enumerate(selected)}
    best = max(parts.values(), key=lambda p: (len(p), max(weights.get(o, -math.inf) for o in p), -min(order[o] for o in p)))
    return best, [o for o in selected if o not in best]


def cut_to_connected(verdict: Verdict, links: Sequence[dict]) -> Verdict:
    """The verdict with its selection cut to :func:`connected_part` (a copy; the verdict itself
    when nothing is cut): the cut objects in ``unconnected``, their weights dropped."""
    if not verdict.get("selected"):
        return verdict
    weights = verdict.get("weights") or {}
    kept, cut = connected_part(verdict["selected"], links, weights)
    if not cut:
        return verdict
    return Verdict(**{**verdict, "selected": kept, "unconnected": cut,
                      "weights": {o: w for o, w in weights.items() if o in kept}})


def make_aggregate_node(art: ArmRuntime) -> Callable:
    async def aggregate(state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        index = await art.aindex(ctx)
        drafts: list[Draft] = state.get("drafts") or []
        usable = [v for v in state.get("verdicts") or [] if v.get("selected") is not None]
        votes, how = aggregate_votes(drafts, usable, vote_weight=ctx.vote_weight)
        problems = []
        chosen = [v["id"] for v in votes][: ctx.k]
        kept = any(v.get("selected") for v in usable)
        if not ctx.verification or not ctx.llm:
            how = "draft votes (" + ("no model: llm=False" if not ctx.llm else "verification off") + ")"
            votes, chosen = [], vote_drafts(drafts, ctx.k)
        elif not usable and drafts:
            problems.append("aggregate: no draft was verified; the drafts' own votes are used")
            how = "draft votes (no verification was readable)"
        elif not kept and drafts:  # every verifier kept nothing: said, and the drafts' own votes used
            how = "draft votes (every verification kept no object)"
            problems.append(f"aggregate: all {len(usable)} readable verification(s) kept no object; "
                            "the drafts' own votes are used")
        return {"votes": votes, "retrieved_ids": chosen,
                "retrieved_titles": [index.objects[index.position(i)].title for i in chosen],
                "decoding": {**(state.get("decoding") or {}), "vote": how},
                "problems": problems}

    return aggregate


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


# --- token log-probabilities ----------------------------------------------------------------------

def token_logprobs(msg: Any) -> list[tuple[str, float]]:
    """``(token, logprob)`` pairs of a reply (OpenAI-format ``response_metadata["logprobs"]``;
    empty when the server returned none)."""
    meta = getattr(msg, "response_metadata", None) or {}
    lp = meta.get("logprobs") or {}
    content = lp.get("content") if isinstance(lp, dict) else lp if isinstance(lp, list) else None
    out: list[tuple[str, float]] = []
    for t in content or []:
        if isinstance(t, dict) and isinstance(t.get("token"), str) and isinstance(t.get("logprob"), (int, float)):
            out.append((t["token"], float(t["logprob"])))
    return out


def span_logprobs(tokens: Sequence[tuple[str, float]], names: Sequence[str]) -> dict[str, float]:
    """The mean log-probability of the tokens that spell each name in the reply (§3.3: the
    tokens of an object's name, averaged). A name not found in the reply is left out."""
    if not tokens:
        return {}
    text = "".join(t for t, _ in tokens)
    starts = []
    pos = 0
    for t, _ in tokens:
        starts.append(pos)
        pos += len(t)
    out: dict[str, float] = {}
    for name in names:
        if not name:
            continue
        at = text.find(json.dumps(name, ensure_ascii=False)[1:-1])
        if at < 0:
            at = text.find(name)
        if at < 0:
            continue
        end = at + len(name)
        vals = [lp for (t, lp), s in zip(tokens, starts) if s < end and s + len(t) > at]
        if vals:
            out[name] = sum(vals) / len(vals)
    return out


# --- aggregation (§3.3) -------------------------------------------------------------------------

def _draft_counts(drafts: Sequence[Draft]) -> tuple[dict[str, int], dict[str, float]]:
    """Each object's occurrences across the drafts (in first-occurrence order) and its best R_i."""
    counts: dict[str, int] = {}
    rel: dict[str, float] = {}
    for d in drafts:
        for oid in dict.fromkeys(d["ids"]):
            counts[oid] = counts.get(oid, 0) + 1
            rel[oid] = max(rel.get(oid, float("-inf")), float((d.get("relevance") or {}).get(oid, 0.0)))
    return counts, rel


def _selection_weights(verdicts: Sequence[Verdict]) -> tuple[dict[str, list[float]], str]:
    """The weight of each selection of each object (exp of its name tokens' mean log-probability,
    capped at 1; 1 without log-probabilities), in first-selection order, and the mode."""
    weights: dict[str, list[float]] = {}
    for v in verdicts:
        lp = v.get("weights") or {}
        for oid in dict.fromkeys(v.get("selected") or []):
            weights.setdefault(oid, []).append(math.exp(min(0.0, float(lp[oid]))) if oid in lp else 1.0)
    return weights, "logprobs" if any(v.get("weights") for v in verdicts) else "frequency"


def _shares(counts: dict[str, int]) -> dict[str, float]:
    """The counts softmaxed (the paper's normalised number of votes)."""
    top = max(counts.values())
    z = sum(math.exp(c - top) for c in counts.values())
    return {oid: math.exp(c - top) / z for oid, c in counts.items()}


def aggregate_votes(drafts: Sequence[Draft], verdicts: Sequence[Verdict], *,
                    vote_weight: float) -> tuple[list[Vote], str]:
    """§3.3's aggregation: every object of every draft, best first,
    and the mode (``logprobs`` or ``frequency``).

    ``votes`` is the object's occurrences across the drafts (softmaxed into ``share``);
    ``selected`` the verdicts that kept it; ``weight`` the mean weight of those selections
    (exp of the name tokens' mean log-probability, 1 without) and 0 for an object no verifier
    kept; ``confidence`` = vote_weight × weight + (1 − vote_weight) × share. ``verdicts``: the
    readable ones (``selected`` ids, ``weights``: id → mean logprob). Ties: best R_i, then
    first occurrence.
    """
    counts, rel = _draft_counts(drafts)
    weights, mode = _selection_weights(verdicts)
    for oid in weights:  # a verdict's ids are its draft's; a hand-made one may not be
        counts.setdefault(oid, 1)
        rel.setdefault(oid, float("-inf"))
    if not counts:
        return [], mode
    shares = _shares(counts)
    order = {oid: i for i, oid in enumerate(counts)}
    scored = []
    for oid, c in counts.items():
        share = shares[oid]
        w = weights.get(oid) or []
        mean_w = sum(w) / len(w) if w else 0.0
        conf = vote_weight * mean_w + (1 - vote_weight) * share
        scored.append((conf, Vote(id=oid, votes=c, selected=len(w), weight=round(mean_w, 6), share=round(share, 6),
                                  confidence=round(conf, 6))))
    scored.sort(key=lambda r: (-r[0], -rel[r[1]["id"]], order[r[1]["id"]]))
    return [v for _, v in scored], mode


def vote_drafts(drafts: Sequence[Draft], k: int) -> list[str]:
    """Aggregation without verification (the LLM-free path, ``verification=False``): each
    draft votes for its objects; most votes first, ties by best relevance, then draft order."""
    votes, rel = _draft_counts(drafts)
    order = {oid: i for i, oid in enumerate(votes)}
    return sorted(votes, key=lambda o: (-votes[o], -rel[o], order[o]))[:k]
