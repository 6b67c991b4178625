"""Retrieved knowledge as ATOMR's prompts show it: one block per source.

    Wikipedia Passages:
    [1] Title | text
    [2] Title | text

    Google Results:
    [1] Title | snippet
"""

from __future__ import annotations

import re

from atomgraph.state.run import Evidence

NO_KNOWLEDGE = "(no knowledge retrieved)"

_LABELS = {"wikipedia": "Wikipedia", "google": "Google", "wikidata": "Wikidata"}
_HEADINGS = {"wikipedia": "Wikipedia Passages", "google": "Google Results", "wikidata": "Wikidata Facts"}


def source_label(name: str) -> str:
    """Display name of a registered source: "wikipedia" → "Wikipedia", "my_corpus" → "My Corpus"."""
    key = (name or "").strip().lower()
    if key in _LABELS:
        return _LABELS[key]
    words = re.split(r"[\s_\-]+", (name or "").strip())
    return " ".join(w[:1].upper() + w[1:] for w in words if w) or "Source"


def knowledge_heading(name: str) -> str:
    """Block heading for a source's evidence: "Wikipedia Passages", "Google Results",
    "Wikidata Facts", otherwise "<Label> Results"."""
    key = (name or "").strip().lower()
    return _HEADINGS.get(key) or f"{source_label(name)} Results"


def _one_line(text: str, max_chars: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) > max_chars:
        text = text[: max(0, max_chars - 3)].rstrip() + "..."
    return text


def format_knowledge(evidence: list[Evidence], *, max_chars_per_item: int = 1000) -> str:
    """Evidence grouped by ``ev.source`` (in order of first appearance), each block headed by
    its display label and numbered from 1; each item ``[i] Title | text`` on one line, cut
    to ``max_chars_per_item``. ``"(no knowledge retrieved)"`` when there is none."""
    groups: dict[str, list[Evidence]] = {}
    for ev in evidence or []:
        groups.setdefault(ev.source, []).append(ev)
    blocks = []
    for source, items in groups.items():
        lines = [f"{knowledge_heading(source)}:"]
        lines += [f"[{i}] {_one_line(ev.render(), max_chars_per_item)}" for i, ev in enumerate(items, 1)]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) if blocks else NO_KNOWLEDGE
