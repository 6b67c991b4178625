"""Scripted KAR³ models, for tests, notebooks and benchmarks without an LLM.

The scripted atomizer turns each sentence of a chunk into an atomic question; the scripted
proposer answers from a per-question plan (one list of sub-questions per round, then
an empty list); the selector picks a fixed candidate; the answerer replies in KAR³'s JSON.

>>> model = kar3_scripted_model({"Where did X's advisor die?": [["Who was X's advisor?"], ["Where did Y die?"]]},
...                             answer="Munich")
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from atomgraph.testing import ScriptedChatModel

_PASSAGE = re.compile(r"## Content\n(.*?)\n\n## Your questions:", re.S)
_QUESTION = re.compile(r"## Question\n(.*?)(?:\n\n|$)", re.S)
_GATHERED = re.compile(r"## Knowledge we already have\n(.*?)\n\n## ", re.S)


def passage_of(prompt: str) -> tuple[str, str]:
    """(title, text) of the chunk in an atomize prompt (``Title: <title>. Content: <text>``)."""
    m = _PASSAGE.search(prompt)
    body = m.group(1) if m else prompt
    if body.startswith("Title: "):
        title, sep, text = body[len("Title: "):].partition(". Content: ")
        if sep:
            return title, text
    return "", body


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.strip().split()) >= 3]


def sentence_atoms(prompt: str) -> str:
    """An atomizer reply: each sentence of the chunk as a question (titled where it lacks the title)."""
    title, text = passage_of(prompt)
    out = []
    for s in sentences(text) or [text]:
        q = s.rstrip(".!?") + "?"
        out.append(q if not title or title.split()[-1] in q else f"{title}: {q}")
    return "\n".join(out)


def synthetic_atoms(title: str, text: str, n: int = 10) -> list[str]:
    """``n`` atomic questions for a chunk without a model (for sizing benchmarks): its
    sentences as questions, then windows of its words."""
    words = text.split()
    out = [s.rstrip(".!?") + "?" for s in sentences(text)]
    i = 0
    while len(out) < n and words:
        out.append(f"What about {title}: {' '.join(words[i:i + 8])}?")
        i = (i + 5) % max(1, len(words))
    return list(dict.fromkeys(out))[:n]


def chunks_in_context(prompt: str) -> int:
    """How many chosen chunks a propose/select/answer prompt shows."""
    m = _GATHERED.search(prompt)
    return 0 if not m or m.group(1).startswith("(none yet)") else len(re.findall(r"^Title: .*?\. Content: ", m.group(1), re.M))


def question_of(prompt: str) -> str:
    m = list(_QUESTION.finditer(prompt + "\n\n"))
    return m[-1].group(1).strip() if m else ""


def kar3_scripted_model(
    plans: dict[str, list[list[str]]] | Callable[[str], str] | None = None,
    answer: str | Callable[[str], str] = "unknown",
    select: str | Callable[[str], str] = '{"thinking": "the first candidate asks what is missing", "question_idx": 1}',
    select_paragraph: str | Callable[[str], str] = '{"thinking": "the first paragraph", "paragraph_idx": 1}',
    atomize: str | Callable[[str], str] = sentence_atoms,
    latency_s: float = 0.0,
    **stages: Any,
) -> ScriptedChatModel:
    """A model for every KAR³ stage. ``plans`` maps a question to its proposals per round
    (round t uses entry t-1; past the end: an empty list, i.e. stop), or is the proposer's
    reply as a function of the prompt. ``answer``: the answer text (or a function of the prompt)."""

    def propose(prompt: str) -> str:
        if callable(plans):
            return plans(prompt)
        q = question_of(prompt)
        rounds = (plans or {}).get(q)
        if rounds is None:
            rounds = next((v for k, v in (plans or {}).items() if k in prompt), [[q]])
        t = chunks_in_context(prompt)
        subs = rounds[t] if t < len(rounds) else []
        return json.dumps({"thinking": f"{t} chunk(s) known", "sub_questions": subs})

    def answering(prompt: str) -> str:
        text = answer(prompt) if callable(answer) else answer
        return json.dumps({"rationale": "from the passages", "answer": text})

    script: dict[str, Any] = {"atomize": atomize, "propose": propose, "select": select,
                              "select_paragraph": select_paragraph, "answer": answering}
    script.update(stages)
    return ScriptedChatModel(stages=script, latency_s=latency_s)
