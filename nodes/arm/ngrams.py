"""Information alignment without the LLM call (§3.2.1 of the ARM paper).

The paper lets the model rephrase each of its keywords as corpus n-grams by constrained
beam decoding. Where the model cannot decode under every n-gram (closed APIs, and served
models by default), each keyword gets a *shortlist* of corpus n-grams (:func:`shortlist`,
:func:`alignment_request`) that the server constrains the reply to (a ``Choice``, in the
backend's own request form: :mod:`atomgraph.prompts.constraints`); a model that offers no
constraint writes freely, and :func:`snap` finds the nearest corpus n-grams. Which path a
run takes is decided in one place, :func:`atomgraph.nodes.arm.common.decoding_mode`.

INVARIANT: whatever path produced it, an aligned n-gram returned by this module
(:func:`parse_alignment`, :func:`snap`, :func:`align_keyword`) is a corpus n-gram of the
index (``index.has_ngram``) — or nothing at all.

Without a model, :func:`informative_keywords` takes the question's keywords: its maximal spans
that are corpus n-grams and its names the corpus spells otherwise (``question_keywords="all"``,
the default), or the names and rarer spans alone (``"informative"``); :func:`extract_keywords`
is the corpus spans alone (``"corpus"``). :func:`align_keyword` keeps the best shortlisted
n-grams.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from rapidfuzz import fuzz, process

from atomgraph.prompts.constraints import fit_enum
from atomgraph.tools.arm_index import MAX_N, ArmIndex, normalize_ngram, raw_tokens, stopwords, tokens


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
