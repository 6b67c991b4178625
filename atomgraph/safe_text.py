"""Bytes that are not text: finding them in a model's reply, and escaping them before a terminal sees them.

A reply such as ``"Ulm\\x1b]0;PWNED\\x07\\x1b[2J"`` holds a terminal escape (set the window
title, clear the screen); ``"\\u202e"`` reverses what follows on screen; NUL and lone surrogates
(``"\\ud800"``, legal in JSON, not encodable in UTF-8) crash printing. What counts as *unsafe*:

- C0 control characters other than tab, newline and carriage return (ESC and NUL included), DEL
  and the C1 controls U+0080-U+009F (CSI U+009B, OSC U+009D);
- the bidirectional embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069;
- lone surrogates U+D800-U+DFFF.

:func:`unsafe_chars` lists them (the answer contract refuses an answer that holds one, reason
``control_chars``); :func:`escape` writes each as its ``\\uXXXX`` escape — readable on a
terminal and, inside a JSON string, the same character — so what is printed is inert and a
JSON document printed through it stays valid. :func:`install` wraps ``sys.stdout`` and
``sys.stderr`` of the command line with :class:`SafeStream`, so nothing any command prints can
steer the terminal or crash on a surrogate.

>>> escape("Ulm\\x1b]0;PWNED\\x07")
'Ulm\\\\u001b]0;PWNED\\\\u0007'
>>> unsafe_chars("Ulm\\u202e")
['\\\\u202e']
"""

from __future__ import annotations

import io
import re
import sys
from typing import TextIO

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
