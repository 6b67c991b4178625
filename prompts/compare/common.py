"""What the comparison prompts share: the answer line, its reader, and small text helpers."""

from __future__ import annotations

import re

from langchain_core.prompts import ChatPromptTemplate

from atomgraph.errors import ParseError
from atomgraph.prompts.stage import FEW_SHOT_STOPS
from atomgraph.prompts.stage import answer_parser, extract_answer, read_answer

__all__ = ["ANSWER_RULE", "FEW_SHOT_STOPS", "answer_parser", "extract_answer", "read_answer", "strip_label",
           "first_sentence", "clean_reply", "has_answer_marker", "instructions_of", "final_answer_parser"]

ANSWER_RULE = ("Give the shortest answer that fully answers the question (an entity, a date, a number, "
               "yes or no) on a last line of the form 'So the answer is: <answer>'.")

_MARKER = re.compile(r"(?:so\s+)?the\s+(?:final\s+)?answer\s+is\s*[:：]?", re.I)


def clean_reply(text: str) -> str:
    """The reply without surrounding whitespace, code fences or markdown emphasis; ParseError when empty."""
    text = re.sub(r"```[a-zA-Z]*", "", text or "").replace("**", "").replace("__", "").strip()
    if not text:
        raise ParseError("the model returned an empty response")
    return text


def instructions_of(prompt: ChatPromptTemplate) -> list[str]:
    """The fixed text of a prompt's system message (what an echoing model repeats)."""
    return [m.prompt.template for m in prompt.messages[:1] if hasattr(m, "prompt")]


def final_answer_parser(prompt: ChatPromptTemplate, demonstrations=(), *, require_marker: bool = True,
                        name: str = "final_answer"):
    """The answer-contract parser of a stage that asks for 'So the answer is: ...' (after its
    reasoning when ``require_marker``), held against ``prompt``'s instructions and ``demonstrations``."""
    return answer_parser(instructions_of(prompt), demonstrations, require_marker=require_marker, name=name)


def has_answer_marker(text: str) -> bool:
    return bool(_MARKER.search(text or ""))


def strip_label(line: str, *labels: str) -> str:
    """``line`` without a leading ``Label:`` (any of ``labels``, case-insensitive)."""
    for label in labels:
        line = re.sub(rf"^\s*{label}\s*[:：]\s*", "", line, flags=re.I)
    return line.strip()


def first_sentence(text: str) -> str:
    """The first sentence of the first non-empty line."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])", line, maxsplit=1)
    return parts[0].strip()
