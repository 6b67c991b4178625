"""How KAR³'s prompts show knowledge: the chosen chunks ("what is known so far") and the
candidates a selector chooses from. Each stage's ``render_*`` function (next to its prompt)
is the stage's ``Stage.render``: it turns the node's inputs into prompt variables with these helpers.

The layout is the authors' (``pikerag/prompts/decomposition/atom_based.py``): a chunk is
``Title: <title>. Content: <text>``, each chunk once, in the order chosen, up to a total
length; atomic-question candidates are ``Question i: <atom>`` (no titles); paragraph
candidates ``Paragraph i: Title: <title>. Content: <text>``.
"""

from __future__ import annotations

from typing import Iterable, Protocol

NONE_YET = "(none yet)"
CONTEXT_LIMIT = 80_000  # characters of chosen chunks shown (the authors' limit)


class ChunkLike(Protocol):
    chunk_id: str
    title: str
    text: str
    atom: str


def paragraph(title: str, text: str) -> str:
    return f"Title: {title}. Content: {text}" if title else text


def render_known(chosen: Iterable[ChunkLike], limit: int = CONTEXT_LIMIT) -> str:
    """The chosen chunks, each once, blank-line separated (``(none yet)`` when there are none)."""
    seen: set[str] = set()
    parts: list[str] = []
    size = 0
    for h in chosen:
        if h.chunk_id in seen:
            continue
        seen.add(h.chunk_id)
        parts.append(paragraph(h.title, h.text))
        size += len(parts[-1]) + 2
        if size >= limit:
            break
    return "\n\n".join(parts) if parts else NONE_YET


def render_atom_candidates(hits: Iterable[ChunkLike], show_titles: bool = False) -> str:
    """``Question i: <atom>`` per candidate (with ``show_titles``: ``  (from: <title>)``). A
    chunk-backup hit of a chunk without atoms shows the start of its text instead."""
    lines = []
    for i, h in enumerate(hits, 1):
        label = h.atom or (h.text[:200] + ("..." if len(h.text) > 200 else ""))
        lines.append(f"Question {i}: {label}" + (f"  (from: {h.title})" if show_titles and h.title else ""))
    return "\n".join(lines)


def render_paragraph_candidates(hits: Iterable[ChunkLike]) -> str:
    """``Paragraph i: Title: <title>. Content: <text>`` per candidate (the chunk-selection backup)."""
    return "\n".join(f"Paragraph {i}: {paragraph(h.title, h.text)}" for i, h in enumerate(hits, 1))
