"""Reply cutting: a reply longer than the stage's output cap allows is cut client-side before
any parser reads it (a server that ignores the cap reads as if it had honoured it)."""

from __future__ import annotations

from typing import Any

from atomgraph.models import message_text
from atomgraph.nodes.recorder import CUT_FROM_KEY
from atomgraph.prompts.answer_contract import reply_limit


def reply_chars(message: Any) -> int:
    """The length of a reply: its text plus its tool calls' arguments."""
    n = len(message_text(message)) if message is not None else 0
    for tc in getattr(message, "tool_calls", None) or []:
        n += len(str(tc.get("args", "")))
    return n


def cut_message(message: Any, max_tokens: int | None) -> tuple[Any, int | None]:
    """``(message, None)`` when the reply fits the output cap (:func:`reply_limit` characters),
    else a copy whose text is cut at the limit, and the reply's original length."""
    limit = reply_limit(max_tokens)
    if limit is None or message is None or not hasattr(message, "content"):
        return message, None
    n = reply_chars(message)
    if n <= limit:
        return message, None
    meta = {**(getattr(message, "response_metadata", None) or {}), CUT_FROM_KEY: n}
    return message.model_copy(update={"content": message_text(message)[:limit], "response_metadata": meta}), n


def cut_reply(out: Any, max_tokens: int | None) -> tuple[Any, int | None]:
    """What a stage's model returned (a message, or structured output's ``{"raw", "parsed",
    "parsing_error"}``), cut at the output cap before a parser reads it: a message's text is cut;
    a structured reply over the cap is not read at all (a server honouring the cap would have
    cut its JSON short). Returns the reply's original length when it was over the cap."""
    if isinstance(out, dict):
        raw, over = cut_message(out.get("raw"), max_tokens)
        if over is None:
            return out, None
        return {"raw": raw, "parsed": None, "parsing_error": "the structured reply is over the output cap"}, over
    return cut_message(out, max_tokens)


# Finish reasons that mean the server ended the reply for length (OpenAI and compatible servers,
# the in-process model: "length"; Anthropic: "max_tokens").
LENGTH_REASONS = frozenset({"length", "max_tokens"})


def ended_for_length(finish_reason: str | None) -> bool:
    """Whether a server's finish reason says it cut the reply at the output cap."""
    return (finish_reason or "").strip().lower() in LENGTH_REASONS


def whole_inside(text: str, answers: list[str]) -> bool:
    """Whether every answer lies whole inside a cut reply: the reply went on after it (its last
    occurrence is followed by more text before the cut). A reply cut in the middle of its answer,
    or right at its end ("So the answer is: PWNED and then"), holds no whole answer."""
    if not answers:
        return False
    for answer in answers:
        a = answer.strip()
        i = text.rfind(a) if a else -1
        if i < 0 or not text[i + len(a):].strip():
            return False
    return True
