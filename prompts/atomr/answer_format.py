"""ATOMR's answer format and a tolerant reader for it.

Every ATOMR answering prompt (operators, child/sibling reasoning, direct RAG) asks the model
to end with::

    So the answer is: (1) Paraphrase Answer: <a sentence>; (2) Answer List: ["a", "b"]

Real models bend this in many ways — markdown, code fences, single-quoted or unquoted
lists, numbered lines instead of ``(1)``/``(2)``, a bare answer line, an invented next
example after the answer. :func:`parse_answer` reads all of these and raises
:class:`~atomgraph.errors.ParseError` when nothing answer-like is present, or when an item of
the list breaks the answer contract (``prompts/stage.py``: too long, evidence, an
echo, a template token, markup, instructions to the reader; the error says ``answer refused
(<reason>)``).
"""

from __future__ import annotations

import ast
import re

from pydantic import BaseModel

from atomgraph.errors import ParseError
from atomgraph.prompts.stage import AnswerRefused, check_answer, reply_problem
from atomgraph.text import loads as read_value

ANSWER_FORMAT = 'So the answer is: (1) Paraphrase Answer: <one sentence>; (2) Answer List: ["<item>", ...]'


class ParsedAnswer(BaseModel):
    paraphrase: str
    answers: list[str]
    unknown: bool  # the model said Unknown, gave an empty list, or said it cannot answer
    raw: str


def answer_text(answers: list[str]) -> str:
    """How a list answer is written into a later question or the final answer:
    the items joined by ``", "`` (empty string for an empty list)."""
    return ", ".join(a.strip() for a in answers if a and a.strip())


# --- text clean-up ------------------------------------------------------------------------
_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "«": '"', "»": '"', "‘": "'", "’": "'"})
_FENCE_RE = re.compile(r"^\s*```[\w-]*\s*$", re.M)
_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s*", re.M)

_SO_RE = re.compile(r"(?:\bso\s*,?\s*)?\bthe\s+(?:final\s+)?answer\s+is\s*[:：]?", re.I)
_LIST_RE = re.compile(r"answer[\s_]*list[\"']?\s*[:：]?", re.I)
_PARA_RE = re.compile(r"paraphrased?[\s_]*answer[\"']?\s*[:：]?", re.I)
# where a model that keeps going starts inventing the next example
_CONTINUATION_RE = re.compile(
    r"\n\s*(?:question|q|retrieved knowledge|your question|child questions and answers|examples?)\s*[:.]", re.I
)
# a model that runs on without line breaks: "Answer: X Question: … Answer: …" (the next invented example)
_INLINE_QUESTION_RE = re.compile(r"\s+Question\s*[:：]\s")
_ITEM2_RE = re.compile(r"[;,]?\s*(?:\(\s*2\s*\)|\b2\s*[.)])\s*(?=\**\s*answer\s*list)", re.I)
_BARE_RE = re.compile(r"(?:^|\n)\s*(?:final\s+answer|answer)\s*[:：]\s*(.+)", re.I)

_UNKNOWN_WORDS = {"unknown", "none", "n/a", "na", "null", "nil", "no answer", "not known", "unanswerable", ""}
_CANNOT_RE = re.compile(
    r"\b(?:cannot|can't|can ?not|unable to|impossible to)\s+(?:be\s+)?(?:answer|determine|determined|find|tell|identify)"
    r"|\bnot enough information\b|\binsufficient information\b|\bno (?:relevant )?information\b|\bdo(?:es)? not (?:know|provide)\b|\bdon'?t know\b",
    re.I,
)
_ABBREVIATIONS = {"jr.", "sr.", "inc.", "co.", "corp.", "ltd.", "st.", "dr.", "mr.", "mrs.", "ms.", "bros.", "vs.", "no.", "mt."}
# a lone line that talks to the user rather than answering
_CHATTER_RE = re.compile(r"\s*(?:i|i'm|i'd|i'll|sorry|as an ai|let me|please|here is|here's|okay|ok|sure|hello|hi)\b", re.I)
_MONTH_DAY_RE = re.compile(
    r"^(?:(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?"
    r"|\d{1,2}(?:st|nd|rd|th)?\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?)$",
    re.I,
)


def _clean(text: str) -> str:
    text = text.translate(_QUOTES).replace("\r\n", "\n")
    text = _FENCE_RE.sub("", text)
    text = _HEADING_RE.sub("", text)
    text = text.replace("**", "").replace("__", "").replace("`", "")
    return text.strip()


def _is_unknown_item(item: str) -> bool:
    return item.strip().strip(".!\"' ").lower() in _UNKNOWN_WORDS


def _strip_period(item: str) -> str:
    """Drop one trailing period, but keep abbreviations such as ``Jr.`` or ``D.C.``."""
    item = item.strip()
    if item.endswith(".") and not item.endswith(".."):
        last = item.split()[-1]
        if "." not in last[:-1] and last.lower() not in _ABBREVIATIONS:
            return item[:-1].rstrip()
    return item


# --- list reading -------------------------------------------------------------------------
def _flatten(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple, set)):
        return [s for v in value for s in _flatten(v)]
    if isinstance(value, bool):
        return ["Yes" if value else "No"]
    if isinstance(value, float) and value.is_integer():
        return [str(int(value))]
    return [str(value)]


def _scan_list(s: str, start: int) -> tuple[list[str], int, bool]:
    """Read a ``[...]`` list beginning at ``s[start] == '['`` by hand: items split on
    top-level commas, a quote opens an item only at its start (so apostrophes inside
    ``'Shakira's album'`` are fine). Returns (items, end index, any item was quoted)."""
    items: list[str] = []
    i, n, quoted_any = start + 1, len(s), False
    while i < n:
        while i < n and s[i] in " \t\n":
            i += 1
        if i >= n:
            break
        if s[i] == "]":
            return items, i + 1, quoted_any
        if s[i] == ",":
            i += 1
            continue
        if s[i] in "\"'":
            q, j, buf = s[i], i + 1, []
            while j < n:
                if s[j] == "\\" and j + 1 < n:
                    buf.append(s[j + 1])
                    j += 2
                    continue
                if s[j] == q and re.match(r"\s*(?:,|\]|$)", s[j + 1 :]):
                    break
                buf.append(s[j])
                j += 1
            items.append("".join(buf))
            quoted_any = True
            i = j + 1
        else:
            m = re.match(r"[^,\]\n]*", s[i:])
            items.append(m.group(0).strip())
            i += m.end()
    return items, n, quoted_any


def _merge_dates(items: list[str]) -> list[str]:
    """Unquoted ``[August 4, 1961]`` splits into two pieces; put dates back together."""
    out: list[str] = []
    for it in items:
        if out and re.fullmatch(r"\d{3,4}", it.strip()) and _MONTH_DAY_RE.match(out[-1].strip()):
            out[-1] = f"{out[-1].strip()}, {it.strip()}"
        else:
            out.append(it)
    return out


# "[3] Albert Einstein | Albert Einstein (1879–1955) was ...": a line of the retrieved
# knowledge (see knowledge.py), copied out by the model; its "[3]" is a citation, not a list.
_EVIDENCE_LINE_RE = re.compile(r"\[\d+\]\s+[^\n|\[\]]{1,200}\|")


def _read_list(s: str) -> tuple[list[str], bool] | None:
    """The answer list at the start of ``s`` (after "Answer List:"). Returns (items, found)
    or None when there is no list there."""
    s = s.lstrip(" \t:：")
    if _EVIDENCE_LINE_RE.match(s):
        return None
    if s.startswith("["):
        items, end, quoted = _scan_list(s, 0)
        candidate = s[:end]
        try:
            return _flatten(read_value(candidate)), True
        except (ValueError, TypeError):  # not a whole JSON or Python list: read its items below
            pass
        if not quoted:
            items = _merge_dates(items)
        return items, True
    # a numbered or bulleted list on the following lines
    first, _, rest = s.partition("\n")
    if not first.strip() and rest:
        lines = []
        for line in rest.split("\n"):
            m = re.match(r"\s*(?:\d+[.)]|[-*•])\s+(.+)", line)
            if not m:
                if lines or line.strip():
                    break
                continue
            lines.append(m.group(1))
        if lines:
            return [x.strip().strip("\"'") for x in lines], True
    line = first.strip()
    if not line:
        return None
    return [_strip_period(line.strip("\"' ").rstrip(";"))], True


def _tidy(items: list[str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for it in items:
        it = re.sub(r"\s+", " ", it).strip().strip("\"'").strip()
        key = it.lower()
        if it and key not in seen:
            seen.add(key)
            out.append(it)
    return out


def _last(pattern: re.Pattern, text: str) -> re.Match | None:
    m = None
    for m in pattern.finditer(text):
        pass
    return m


def _paraphrase(segment: str) -> str | None:
    m = _last(_PARA_RE, segment)
    if not m:
        return None
    tail = segment[m.end() :]
    cut = _ITEM2_RE.search(tail) or _LIST_RE.search(tail)
    para = tail[: cut.start()] if cut else tail.split("\n")[0]
    para = para.strip(" \t\n;,\"'{}")
    return _strip_period(para) if para else ""


# Chat-template tokens a local model may write out (Llama's [INST] and </s>, Gemma's turn
# markers, ChatML and Llama-3 specials): never part of an answer; after one, a new turn starts.
_TEMPLATE_TOKEN_RE = re.compile(r"\[/?INST\]|</?s>|<\|[a-z_]+\|>|<(?:start|end)_of_turn>(?:\s*(?:user|model)\b)?", re.I)
# A reply that opens with an example or a question of its own answers something else.
_INVENTED_START_RE = re.compile(r"^\s*(?:example\s*\d*\s*[.:]|question\s*[:：])", re.I)


def _own_turn(text: str) -> str:
    """The model's own reply: leading template tokens dropped, cut at the next one."""
    text = re.sub(r"^(?:\s*" + _TEMPLATE_TOKEN_RE.pattern + r")+", "", text, flags=re.I)
    m = _TEMPLATE_TOKEN_RE.search(text)
    return text[: m.start()] if m else text


def parse_answer(text: str) -> ParsedAnswer:
    """Read ATOMR's "So the answer is: (1) Paraphrase Answer: …; (2) Answer List: […]".

    Only the answer to the question asked is read: chat-template tokens (``[/INST]``,
    ``<end_of_turn>``) end the reply, and an invented next example ("Question: …" or
    "Example 3." after the answer) is cut off; a reply that *is* an invented example (it
    opens with one) has no answer to our question and raises ParseError."""
    raw = text if isinstance(text, str) else ""
    body = _clean(_own_turn(raw))
    if not body:
        raise ParseError("the model returned an empty answer")
    if _INVENTED_START_RE.match(body):
        raise ParseError("the reply opens with an invented example, not an answer to the question: " + _excerpt(raw))
    for pattern in (_CONTINUATION_RE, _INLINE_QUESTION_RE):
        cont = pattern.search(body)
        if cont and body[: cont.start()].strip():
            body = body[: cont.start()].rstrip()

    # ignore an invented next example after the first complete answer list
    first_list = _LIST_RE.search(body)
    if first_list:
        after = _CONTINUATION_RE.search(body, first_list.end())
        if after:
            body = body[: after.start()]

    lst = _last(_LIST_RE, body)
    para_m = _last(_PARA_RE, body)
    answers: list[str] | None = None
    if lst or para_m:
        # the format's own markers win over any "the answer is" inside the paraphrase
        anchor = min(m.start() for m in (lst, para_m) if m)
        so = _last(_SO_RE, body[:anchor])
        preamble = body[: so.start()] if so else re.sub(r"\(?1[.)]?\s*$", "", body[:anchor].rstrip())
        para = _paraphrase(body)
        if lst:
            got = _read_list(body[lst.end() :])
            answers = got[0] if got else []
    else:
        # "So the answer is: Paris." or "So the answer is ["a", "b"]"
        so = _last(_SO_RE, body)
        preamble = body[: so.start()] if so else ""
        para = None
        got = _read_list(body[so.end() :]) if so and body[so.end() :].strip() else None
        if got:
            answers = got[0]
    if answers is None and para is None and so is not None:
        raise ParseError("the model output says 'So the answer is' but gives no answer: " + _excerpt(raw))
    if answers is None and para is None:
        bare = None
        for bare in _BARE_RE.finditer(body):
            pass
        got = _read_list(bare.group(1) if bare else body) if bare or body.lstrip().startswith("[") else None
        if _EVIDENCE_LINE_RE.match((bare.group(1) if bare else body).lstrip(" \t:：")):
            raise ParseError("the model output is a passage of the retrieved knowledge, not an answer: " + _excerpt(raw))
        if got:
            answers = got[0]
        elif "\n" not in body and len(body.split()) <= 12 and not _CANNOT_RE.search(body) and not _CHATTER_RE.match(body):
            answers = [_strip_period(body.strip("\"' "))]
        elif _CANNOT_RE.search(body):
            return ParsedAnswer(paraphrase="Unknown", answers=[], unknown=True, raw=raw)
        else:
            kind = reply_problem(body)  # instructions to the reader, chat-template debris: say so
            if kind is not None:
                raise AnswerRefused(kind, "no answer found in the model output; got: " + _excerpt(raw))
            raise ParseError(
                "no answer found in the model output (expected '" + ANSWER_FORMAT + "'); got: " + _excerpt(raw)
            )

    if answers is None:  # a paraphrase but no list: the paraphrase is the answer
        answers = [] if _is_unknown_item(para or "") else [_strip_period(para or "")]

    # "Unknown", "None", "I cannot determine this from the passages" are not answers
    items = read_items(answers)
    if not para:
        para = _last_sentence(preamble) or answer_text(items) or "Unknown"
    unknown = not items
    return ParsedAnswer(paraphrase=para or "Unknown", answers=items, unknown=unknown, raw=raw)


def read_items(answers: list[str]) -> list[str]:
    """The items of an answer list: tidied, without 'Unknown' / 'I cannot tell' ones, each held
    to the answer contract (an item that is no answer makes the reply unreadable:
    :class:`~atomgraph.prompts.stage.AnswerRefused`)."""
    items = [a for a in _tidy([str(x) for x in answers if x is not None])
             if not _is_unknown_item(a) and not _CANNOT_RE.search(a)]
    for a in items:
        check_answer(a)
    return items


def _last_sentence(text: str) -> str:
    text = re.sub(r"^\s*answer\s*[:：]\s*", "", text.strip(), flags=re.I)
    if not text:
        return ""
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    last = lines[-1][-500:].rstrip(".").strip() if lines else ""
    return last if len(last.split()) >= 3 else ""  # not a bare "Therefore,"


def _excerpt(text: str, n: int = 160) -> str:
    flat = re.sub(r"\s+", " ", text or "").strip()
    return repr(flat if len(flat) <= n else flat[: n - 3] + "...")


_AUTHORS_SO_RE = re.compile(r"answer is: (.*)", re.I | re.S)
_AUTHORS_PARA_RE = re.compile(r"Paraphrase Answer:\s*(.*?)\s*(?=; \(2\) Answer List|\n\(2\) Answer List|\(2\) |Answer List)")


def read_as_authors(text: str) -> ParsedAnswer:
    """A reply read the way the ATOMR authors read every reply (``keep_raw_reply``): the text
    after the first "answer is:" (else the whole reply); its last ``[...]`` read as a list, else
    the paraphrase, else that text itself, as the one answer. It never fails to give an answer;
    each item is still held to the answer contract (:class:`AnswerRefused` otherwise)."""
    raw = text if isinstance(text, str) else ""
    m = _AUTHORS_SO_RE.search(raw)
    ans = m.group(1) if m else raw
    pm = _AUTHORS_PARA_RE.search(ans)
    para = pm.group(1).strip().rstrip(";") if pm else ans
    body = ans.replace(", ...", "").replace(",...", "")
    items: list[str] | None = None
    start, end = body.rfind("["), body.rfind("]")
    if 0 <= start < end:
        try:
            value = ast.literal_eval(body[start : end + 1])
            items = [str(v) for v in value] if isinstance(value, (list, tuple)) else None
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            items = None
    if items is None:
        items = [para if pm else ans]
    items = [i.strip() for i in items if str(i).strip()]
    for item in items:
        check_answer(item)
    return ParsedAnswer(paraphrase=para.strip() or "Unknown", answers=items, unknown=not items, raw=raw)
