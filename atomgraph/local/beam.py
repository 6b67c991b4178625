"""Constrained beam decoding of a list of allowed strings (ARM §3.2.1, information alignment).

>>> engine = load_engine()
>>> trie = TokenTrie.build(corpus_ngrams(objects), engine)
>>> prompt = engine.chat_prompt([("user", "Rephrase 'physics award' with corpus n-grams.")])
>>> result = beam_decode(engine, prompt, trie, beam_width=4)
>>> result.best.strings, result.best.score            # ['nobel prize', 'physics'], -> float
>>> [(b.text, b.score, b.finish_reason) for b in result.beams]   # every finished list, best first
>>> result.stop_reason, result.ended                  # why the search stopped; beams that died and why

The reply has the shape ``(first, second, third)``: the opening delimiter is forced, then every
token stays inside ``trie`` (:class:`~atomgraph.local.trie.TokenTrie`) until an allowed string is
complete, where the separator (another string follows) and the closing delimiter become allowed
too. A hypothesis that reaches a prefix with no continuation ends there — kept, closed, if it
already holds a complete string, else dropped — and :attr:`BeamResult.ended` records why
(``"no_continuation"``), so an empty or mismatched trie ends the search cleanly.

**Scores.** As in the paper, the score of a string is the average *logit* over its tokens, and a
list's score is the mean of its strings' scores; finished lists are returned best first by that
score (``rank_by="avg_logit"``, the default). While searching, hypotheses are pruned to
``beam_width`` by their summed log-probability (the usual beam criterion, comparable across
hypotheses of different shapes); ``rank_by="logprob"`` also ranks the finished lists by their
mean token log-probability.

**Cost.** The prompt is evaluated once; every step evaluates each live hypothesis's tokens after
the KV-cache prefix it shares with the previous hypothesis (hypotheses are visited in token order),
one token or a short batch. The engine runs batches on as many threads as single tokens (see
:mod:`atomgraph.local.engine`): with llama-cpp-python's default, such 2-6-token batches cost
0.5-11 s each on a loaded 2-CPU machine. The engine's lock is held for the whole search.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Sequence

import numpy as np

if TYPE_CHECKING:
    from atomgraph.local.engine import LocalEngine
    from atomgraph.local.trie import TokenTrie


@dataclass
class BeamList:
    """One decoded list: its strings, each string's score (average logit), the list's score."""

    strings: list[str]
    string_scores: list[float]
    score: float  # mean of string_scores (rank_by="avg_logit") or mean token log-prob
    logprob: float  # summed token log-probability of the whole reply
    finish_reason: str  # "closed", "max_items", "max_tokens", "no_continuation"
    text: str
    tokens: list[int] = field(default_factory=list)


@dataclass
class BeamResult:
    beams: list[BeamList]  # finished lists, best first (at most n_best)
    stop_reason: str  # "closed" (enough lists closed), "no_continuation", "max_tokens"
    ended: list[dict] = field(default_factory=list)  # hypotheses that could not go on: text, reason
    prompt_tokens: int = 0
    steps: int = 0
    evaluated_tokens: int = 0
    seconds: float = 0.0

    @property
    def best(self) -> BeamList | None:
        return self.beams[0] if self.beams else None

    def as_dict(self) -> dict:
        return {
            "beams": [{"strings": b.strings, "string_scores": b.string_scores, "score": b.score,
                       "logprob": b.logprob, "finish_reason": b.finish_reason, "text": b.text} for b in self.beams],
            "stop_reason": self.stop_reason, "ended": self.ended, "steps": self.steps,
            "evaluated_tokens": self.evaluated_tokens, "seconds": self.seconds,
        }


@dataclass
class _Hyp:
    tokens: list[int]
    logprob: float
    forced: list[int]  # delimiter tokens still to emit
    items: list[tuple[list[int], list[float]]]  # complete strings: tokens, their logits
    cur: list[int]
    cur_logits: list[float]
    closing: bool = False  # the forced tokens are the closing delimiter's


def beam_decode(
    engine: "LocalEngine",
    prompt: Sequence[int],
    trie: "TokenTrie",
    *,
    beam_width: int = 4,
    n_best: int | None = None,
    max_items: int = 8,
    max_tokens: int = 64,
    open: str = "(",
    sep: str = ", ",
    close: str = ")",
    rank_by: Literal["avg_logit", "logprob"] = "avg_logit",
) -> BeamResult:
    """Decode ``open s1 sep s2 … close`` after ``prompt`` with every ``s`` in ``trie`` (see module doc).

    ``beam_width`` hypotheses are kept per step; the search stops once ``beam_width`` lists are
    closed (or none can go on, or after ``max_tokens`` generated tokens, where open lists that
    hold a complete string are closed). ``n_best`` (default ``beam_width``) lists are returned.
    """
    if beam_width < 1:
        raise ValueError("beam_width must be at least 1")
    n_best = n_best or beam_width
    t0 = time.perf_counter()
    # A separator ending in a space (", ") leaves the space to the next string's own first token
    # (its "following" spelling in the trie); any other separator is followed by the bare spelling.
    spaced = sep.endswith(" ") and bool(sep.strip())
    open_t, sep_t, close_t = (engine.tokenize(d) for d in (open, sep.rstrip(" ") if spaced else sep, close))
    if not open_t or not sep_t or not close_t:
        raise ValueError("the delimiters must not be empty")
    prompt = list(prompt)
    live = [_Hyp([], 0.0, list(open_t), [], [], [])]
    finished: list[tuple[_Hyp, str]] = []
    ended: list[dict] = []
    steps = evaluated = 0
    with engine.lock:
        while live and steps < max_tokens:
            steps += 1
            candidates: list[tuple[float, _Hyp, int, str, float]] = []
            for h in sorted(live, key=lambda h: h.tokens):
                logits = engine.evaluate(prompt + h.tokens)
                if not h.tokens:  # the prompt alone: saved, so the next prompt sharing its prefix restores it
                    engine.remember(prompt)
                evaluated += 1
                m = float(logits.max())
                lse = m + float(np.log(np.exp(logits - m).sum()))
                for tok, action in _moves(h, trie, sep_t, close_t, max_items, spaced):
                    candidates.append((h.logprob + float(logits[tok]) - lse, h, tok, action, float(logits[tok])))
                if not _moves_exist(h, trie, spaced):
                    reason = "no_continuation"
                    ended.append({"text": _text(engine, h), "reason": reason})
                    if h.items:
                        finished.append((h, reason))
            candidates.sort(key=lambda c: -c[0])
            live = []
            for lp, h, tok, action, logit in candidates:
                if len(live) >= beam_width:
                    break
                nh = _advance(h, tok, action, lp, logit, sep_t, close_t)
                if nh.closing and not nh.forced:
                    finished.append((nh, "max_items" if len(nh.items) >= max_items else "closed"))
                else:
                    live.append(nh)
            if len(finished) >= beam_width:
                break
        if len(finished) >= beam_width or (not live and finished):
            stop_reason = "closed"
        elif not live:
            stop_reason = "no_continuation"
        else:
            stop_reason = "max_tokens"
            for h in live:
                if h.cur and trie.is_complete(h.cur, first=_first(h, spaced)):
                    h = _advance(h, close_t[0], "close", h.logprob, 0.0, sep_t, close_t)
                if h.items:
                    finished.append((h, "max_tokens"))
                ended.append({"text": _text(engine, h), "reason": "max_tokens"})
    beams = [_as_list(engine, h, why, rank_by, open, sep, close) for h, why in finished]
    beams.sort(key=lambda b: -b.score)
    return BeamResult(beams=beams[:n_best], stop_reason=stop_reason, ended=ended, prompt_tokens=len(prompt),
                      steps=steps, evaluated_tokens=evaluated, seconds=time.perf_counter() - t0)


def _first(h: _Hyp, spaced: bool) -> bool:
    """Whether ``h``'s current string uses the trie's first (bare) spelling."""
    return not h.items or not spaced


def _moves(h: _Hyp, trie: "TokenTrie", sep_t, close_t, max_items, spaced: bool) -> list[tuple[int, str]]:
    """(token, action) pairs allowed after ``h``: action is "forced", "item", "sep" or "close"."""
    if h.forced:
        return [(h.forced[0], "forced")]
    first = _first(h, spaced)
    moves = [(int(t), "item") for t in trie.next_tokens(h.cur, first=first)]
    if h.cur and trie.is_complete(h.cur, first=first):
        if len(h.items) + 1 < max_items:
            moves.append((sep_t[0], "sep"))
        moves.append((close_t[0], "close"))
    return moves


def _moves_exist(h, trie, spaced: bool) -> bool:
    first = _first(h, spaced)
    return bool(h.forced) or len(trie.next_tokens(h.cur, first=first)) > 0 or (
        bool(h.cur) and trie.is_complete(h.cur, first=first))


def _advance(h: _Hyp, tok: int, action: str, lp: float, logit: float, sep_t, close_t) -> _Hyp:
    nh = _Hyp(h.tokens + [tok], lp, list(h.forced), list(h.items), list(h.cur), list(h.cur_logits), h.closing)
    if action == "forced":
        nh.forced = nh.forced[1:]
    elif action == "item":
        nh.cur.append(tok)
        nh.cur_logits.append(logit)
    else:  # sep or close: the current string is complete
        nh.items.append((nh.cur, nh.cur_logits))
        nh.cur, nh.cur_logits = [], []
        rest = (sep_t if action == "sep" else close_t)[1:]
        nh.forced = list(rest)
        nh.closing = action == "close"
        if nh.closing and not rest:
            return nh
    return nh


def _text(engine: "LocalEngine", h: _Hyp) -> str:
    return engine.detokenize(h.tokens)


def _as_list(engine, h: _Hyp, why: str, rank_by: str, open: str, sep: str, close: str) -> BeamList:
    strings = [engine.detokenize(toks).strip() for toks, _ in h.items]
    scores = [float(np.mean(lg)) if lg else 0.0 for _, lg in h.items]
    n = max(len(h.tokens), 1)
    score = float(np.mean(scores)) if (rank_by == "avg_logit" and scores) else h.logprob / n
    text = open + sep.join(strings) + close
    return BeamList(strings, scores, score, h.logprob, why, text, list(h.tokens))
