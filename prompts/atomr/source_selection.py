"""Dynamic knowledge-source selection (ATOMR §3.3.1, KDD'25 Figure 9), in our words.

The model names the sources to consult on one line ("Wikipedia, Google");
:func:`match_sources` maps those names back to registered source names.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from atomgraph.prompts.atomr.templating import chat_prompt

SOURCE_SELECTION_MARKER = "Task: select knowledge sources"

_KIND_WORDS = {"text": "text corpus", "web": "web search", "kg": "knowledge graph"}
_LABELS = {"wikipedia": "Wikipedia", "google": "Google", "wikidata": "Wikidata"}


def source_label(name: str) -> str:
    """Display name of a registered source: "wikipedia" → "Wikipedia", "my_corpus" → "My Corpus"
    (how the source list names it, and the heading of its block of retrieved knowledge)."""
    key = (name or "").strip().lower()
    if key in _LABELS:
        return _LABELS[key]
    words = re.split(r"[\s_\-]+", (name or "").strip())
    return " ".join(w[:1].upper() + w[1:] for w in words if w) or "Source"

_SYSTEM = f"""{SOURCE_SELECTION_MARKER}.

Decide which of the available knowledge sources should be consulted to answer a question. You may choose more than one. Sources come in three kinds: text corpora (an encyclopedia such as Wikipedia), web search (a search engine such as Google) and knowledge graphs (structured facts such as Wikidata).

Guidance:
- Ordinary facts about an entity or the links between entities (names, dates, places, numbers such as population, creative works, plots, family and other relationships): consult every kind: text, web and knowledge graph.
- Questions about what or who something is, explanations, or telling apart things that share a name ("Who is ...", "What is ...", "How does ..."): consult text and web.
- Superlatives (the largest, longest, oldest, first, most ...): consult the knowledge graph and web.
- Questions needing up-to-date knowledge (news, recent events, prices and financial figures, current office holders, details of recent products): consult web only.
- When unsure, consult all of them.

Only name sources from the available list, spelled as listed. Reply with one line: the chosen source names separated by commas, nothing else.

Examples, with Wikipedia, Google and Wikidata available:
Q: What are bonds?
A: Wikipedia, Google

Q: Who directed the movie "The Social Network"?
A: Wikipedia, Google, Wikidata

Q: What is the deepest oceanic trench on Earth?
A: Wikidata, Google

Q: Who was the MVP of the NBA Finals last year?
A: Google

Q: Who are Zoe Kravitz's parents?
A: Wikipedia, Google, Wikidata"""

# The example questions above are CRAG dev questions of ../shared/data, one per kind of the
# guidance (the choices are ours): EXAMPLE_SOURCES names the file and question_id of each.
_CRAG_DEV = "atomr/questions/multi_source/CRAG/CRAG_dev_100.jsonl"
EXAMPLE_SOURCES: dict[str, str] = {
    "What are bonds?": f"{_CRAG_DEV}#553f6da3-dd3c-40df-83e6-e21202a68a04",
    'Who directed the movie "The Social Network"?': f"{_CRAG_DEV}#31616f49-8b8e-432c-84a5-3fb8075cd6e1",
    "What is the deepest oceanic trench on Earth?": f"{_CRAG_DEV}#b10b89b9-a48f-4278-aaa5-9c988a47a603",
    "Who was the MVP of the NBA Finals last year?": f"{_CRAG_DEV}#83cfd2c8-d469-409d-bd32-24696ca5e21a",
    "Who are Zoe Kravitz's parents?": f"{_CRAG_DEV}#68ca2297-6175-44cb-a26e-8355461a7442",
}

SOURCE_SELECTION_PROMPT = chat_prompt(_SYSTEM, "Available sources ({n_sources}):\n{source_list}\n\nQ: {question}\nA:")


def describe_sources(sources: Iterable[Any]) -> str:
    """One line per source: ``- Wikipedia (text corpus): <description>``."""
    lines = []
    for s in sources:
        kind = _KIND_WORDS.get(str(getattr(s, "kind", "") or ""), str(getattr(s, "kind", "") or "source"))
        desc = re.sub(r"\s+", " ", str(getattr(s, "description", "") or "")).strip()
        line = f"- {source_label(s.name)} ({kind})"
        lines.append(f"{line}: {desc}" if desc else line)
    return "\n".join(lines)


_ANSWER_LINE_RE = re.compile(
    r"^\s*(?:a|answer|final answer|sources?|selected(?: sources?)?|selection|choice)\s*[:：]\s*(.*)$", re.I
)
_CONTINUATION_RE = re.compile(r"\n\s*q\s*[:：]", re.I)


def _alias_pattern(alias: str) -> re.Pattern:
    words = [re.escape(w) for w in re.split(r"[\s_\-]+", alias.strip()) if w]
    return re.compile(r"(?<![A-Za-z0-9_])" + r"[\s_\-]+".join(words) + r"(?![A-Za-z0-9_])", re.I)


def _listy(line: str) -> bool:
    """A short line that can only be (part of) a list of names, e.g. ``- Google``."""
    return bool(line.strip()) and len(re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip()) <= 40


def _answer_segment(text: str, patterns: list[tuple[re.Pattern, str]]) -> str:
    """The part of the reply that holds the choice: after the last "A:"/"Answer:" marker;
    else the first line (with the list lines right below it) when it names a source;
    else the last line naming one (with the list lines right above it)."""
    body = text.replace("**", "").replace("`", "")
    cont = _CONTINUATION_RE.search(body, 1)
    if cont and body[: cont.start()].strip():
        body = body[: cont.start()]  # an invented next example
    lines = body.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        m = _ANSWER_LINE_RE.match(lines[i])
        if m:
            if m.group(1).strip():
                return m.group(1)
            below = [ln for ln in lines[i + 1 :] if ln.strip()]
            return "\n".join(below[: next((k for k, ln in enumerate(below) if not _listy(ln)), len(below))])
    lines = [ln for ln in lines if ln.strip()]
    named = [i for i, ln in enumerate(lines) if any(p.search(ln) for p, _ in patterns)]
    if not named:
        return body
    if named[0] == 0:
        end = 1
        while end < len(lines) and _listy(lines[end]):
            end += 1
        return "\n".join(lines[:end])
    start = named[-1]
    while start > 0 and _listy(lines[start - 1]) and _listy(lines[start]):
        start -= 1
    return "\n".join(lines[start : named[-1] + 1])


def match_sources(text: str, available: list[str]) -> list[str]:
    """The registered names of ``available`` that ``text`` chooses, in the order written;
    empty when it names none (``"all"`` chooses all)."""
    aliases: dict[str, str] = {}
    for name in available:
        for alias in (name, source_label(name)):
            aliases.setdefault(alias.lower(), name)
    patterns = sorted(((_alias_pattern(a), n) for a, n in aliases.items()), key=lambda p: -len(p[0].pattern))
    segment = _answer_segment(text or "", patterns)
    found: dict[str, int] = {}
    masked = segment
    for pat, name in patterns:  # longest aliases first, so "Google News" is not also "Google"
        for m in pat.finditer(masked):
            found[name] = min(found.get(name, m.start()), m.start())
        masked = pat.sub(lambda m: " " * len(m.group(0)), masked)
    if not found and re.search(r"\ball\b", segment, re.I):
        return list(available)
    return sorted(found, key=found.__getitem__)


def source_key(name: str) -> str:
    """A source name or display label as one comparable key: "Google News" → "google_news"."""
    return re.sub(r"[\s\-]+", "_", (name or "").strip().lower())


def read_source_choice(text: str) -> list[str]:
    """The stage's parser: the source names the reply chooses, as keys
    (:func:`source_key`), in the order written; ``["all"]`` for "all". The node keeps those
    that name an available source (:func:`choose_sources`). Raises ParseError on an empty
    reply."""
    from atomgraph.errors import ParseError

    if not (text or "").strip():
        raise ParseError("source selection returned an empty reply")
    segment = _answer_segment(text, [])
    names = []
    for part in re.split(r"[,;\n/]|\band\b|&", segment):
        part = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", part).strip(" .\"'`*[]")
        if part and len(part) <= 60:
            names.append(source_key(part))
    if not names:
        raise ParseError("source selection named nothing")
    return list(dict.fromkeys(names))


def choose_sources(keys: list[str], available: list[str]) -> list[str]:
    """The registered names of ``available`` that the parsed keys name (by name or label)."""
    by_key: dict[str, str] = {}
    for name in available:
        by_key.setdefault(source_key(name), name)
        by_key.setdefault(source_key(source_label(name)), name)
    if "all" in keys:
        return list(available)
    chosen = [by_key[k] for k in keys if k in by_key]
    if not chosen:  # a name inside a longer phrase ("use Wikipedia")
        chosen = match_sources(", ".join(keys).replace("_", " "), available)
    return list(dict.fromkeys(chosen))
