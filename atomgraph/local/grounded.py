"""Answers grounded in the evidence shown (ARM's n-gram alignment applied to answering; in-process
models only).

>>> reply = grounded_reply(engine, prompt, ["Ulm Minster | Ulm Minster is a Lutheran church ..."],
...                        stop=["\\nQuestion:"], max_tokens=96)
>>> reply.text      # '... So the answer is: (1) Paraphrase Answer: ...; (2) Answer List: ["Ulm Minster"]'
>>> reply.strings, reply.grounded   # ['Ulm Minster'], True

An answering stage (an operator or direct RAG) writes its reasoning and paraphrase freely, as its
demonstrations do, up to ``Answer List:``; the list itself is then decoded by constrained beam
search (:func:`~atomgraph.local.beam.beam_decode`) over a token trie of the evidence's n-grams
(:func:`evidence_ngrams`: 1 to ``max_n`` consecutive words of each passage, as written) plus
``Unknown``: every answer is a span of the evidence shown, or ``Unknown``. The reply keeps the
stage's own format, so the stage's parser reads it unchanged.

This is our switch (``grounded_answers``), not a paper's setting: ATOMR's answers are free text.
``benchmarks/bench_local_grounded.py`` measures it against the free answers.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    from atomgraph.local.engine import LocalEngine

LIST_MARKER = "Answer List:"
UNKNOWN = "Unknown"
MAX_N = 5
_EDGE = "\"'“”‘’()[]{}<>,.;:!?|*"
_LABEL_RE = re.compile(r"\[\d+\]")  # passage labels [1], [2] are not evidence
_SPLIT_RE = re.compile(r"[.;:!?|\n]\s+|\s*\|\s*")  # n-grams do not cross sentences or the title bar


def evidence_ngrams(texts: Iterable[str], max_n: int = MAX_N) -> set[str]:
    """1..``max_n``-word spans of ``texts`` as written (case kept; punctuation stripped from the
    span's two ends; no span crosses a sentence end or a ``|``), plus ``Unknown``."""
    out = {UNKNOWN}
    for text in texts:
        text = _LABEL_RE.sub(" ", str(text or ""))
        for part in _SPLIT_RE.split(text):
            words = part.split()
            for i in range(len(words)):
                for n in range(1, max_n + 1):
                    if i + n > len(words):
                        break
                    span = " ".join(words[i:i + n]).strip(_EDGE).strip()
                    if span and len(span) <= 80:
                        out.add(span)
    return out


KNOWLEDGE_RE = re.compile(r"Retrieved Knowledge:\s*\n(.*?)\n\n(?:Condition:|Question:)", re.S)


def knowledge_block(text: str) -> str | None:
    """The evidence an ATOMR answering prompt shows (the last ``Retrieved Knowledge:`` block of
    its input), or None when it shows none."""
    found = KNOWLEDGE_RE.findall(text or "")
    return found[-1] if found else None


@dataclass
class GroundedReply:
    text: str  # the whole reply, in the stage's format
    strings: list[str] = field(default_factory=list)  # the answer list as decoded
    grounded: bool = False  # the list was decoded under the evidence trie
    n_ngrams: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    finish_reason: str = "stop"
    note: str = ""
    beam_evaluations: int = 0  # model evaluations of the list's beam search (one per live hypothesis per step)
    beam_steps: int = 0


def grounded_reply(engine: "LocalEngine", prompt: Sequence[int], evidence: Sequence[str], *,
                   stop: Sequence[str] = (), max_tokens: int = 128, beam_width: int = 2, max_items: int = 3,
                   list_tokens: int = 32, trie_cache: str | None = None,
                   free_text: str | None = None) -> GroundedReply:
    """The reply to ``prompt`` (an answering stage's prompt tokens) with its answer list decoded
    under the trie of ``evidence``'s n-grams (see the module doc). ``max_tokens`` caps the free
    part, ``list_tokens`` the list. ``free_text``: a greedy free reply to the same prompt from the
    same KV-cache history (a benchmark's other arm), whose text up to ``Answer List:`` is the free
    part this call would generate; given, the free part is not generated again."""
    from atomgraph.local.beam import beam_decode
    from atomgraph.local.trie import TokenTrie

    t0 = time.perf_counter()
    with engine.lock:
        if free_text is None:
            free = engine.generate(prompt, max_tokens=max_tokens, stop=[*stop, LIST_MARKER])
            head, n_out = free.text.rstrip(), len(free.tokens)
        else:
            head = free_text.split(LIST_MARKER, 1)[0].rstrip()
            n_out = len(engine.tokenize(head)) + (LIST_MARKER in free_text)
        if "Paraphrase Answer" not in head:
            # the free part ran to its cap or to a stop sequence before the paraphrase: close it in the format
            head = head + " So the answer is: (2) "
        elif not head.endswith("(2)"):
            head = head.rstrip(";") + "; (2) "
        else:
            head = head + " "
        head = head + LIST_MARKER + " "
        grams = evidence_ngrams(evidence)
        trie = TokenTrie.build(grams, engine, cache_dir=trie_cache, use_cache=trie_cache is not None)
        cont = engine.tokenize(head, add_bos=False)
        res = beam_decode(engine, list(prompt) + cont, trie, beam_width=beam_width, n_best=1, max_items=max_items,
                          max_tokens=list_tokens, open='["', sep='", "', close='"]')
    best = res.best
    strings = list(best.strings) if best else []
    if UNKNOWN in strings and len(strings) > 1:
        strings = [s for s in strings if s != UNKNOWN]
    if strings == [UNKNOWN]:
        strings = []
    lst = "[" + ", ".join(f'"{s}"' for s in strings) + "]"
    note = "" if best else f"no list closed under the evidence trie ({res.stop_reason})"
    return GroundedReply(text=head + lst, strings=strings, grounded=best is not None, n_ngrams=len(trie),
                         output_tokens=n_out + (len(best.tokens) if best else 0),
                         seconds=time.perf_counter() - t0, finish_reason="stop" if best else "length", note=note,
                         beam_evaluations=res.evaluated_tokens, beam_steps=res.steps)
