"""ATOMR's prompt stages in one place: what each stage's prompt shows, the stage table, and how
each reply is read (see :mod:`atomgraph.prompts.stage` for what a stage is). The prompts' words
live beside this module, one per paper stage (``plan.py`` §3.2, ``source_selection.py`` and
``operators.py`` §3.3.1, ``reasoning.py`` §3.3.2, ``kg_program.py``); the per-dataset
demonstrations and rules in ``packs/``; the planner's JSON read as a tree in ``tree_parser.py``.

| stage | role | replies with | value |
|---|---|---|---|
| ``plan`` | planner | the tree as flat JSON | a list of :class:`ReasoningTree` (each plan the reply holds, parsed and repaired) |
| ``source_selection`` | executor | source names on one line | the chosen names as keys |
| ``search`` / ``relate`` / ``filter`` | executor | ATOMR's answer format | :class:`ParsedAnswer` |
| ``child_reasoning`` / ``sibling_reasoning`` / ``direct_rag`` / ``closed_book`` | answerer | ATOMR's answer format | :class:`ParsedAnswer` |
| ``kg_program`` | executor | a JSON object (asked under ``kg_program.PROGRAM_CONSTRAINT``) | :class:`QueryProgram` |

Read top to bottom:

1. **Prompt packs in a stage**: the chosen pack's demonstrations, rules and Unknown option
   filled into each stage's template (:func:`render_for`, :func:`get_pack`), and the questions
   and answers the packs show (an evaluation leaves them out; a copied one is no answer).
2. **What the reasoning prompts show**: retrieved knowledge, one block per source
   (:func:`format_knowledge`), and the question-answer pairs of child / sibling reasoning
   (:func:`format_qa_pairs`).
3. **ATOMR's answer format and its reader** (:func:`parse_answer`; the authors' reading,
   :func:`read_as_authors`; the structured answer).
4. **The plan**: the planner's reply read as trees (:func:`read_plans`), the root check, the
   structured plan and the constraint that keeps a plan whole.
5. **The stages** (:data:`STAGES`).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Callable

from pydantic import BaseModel, Field

from atomgraph.errors import ParseError
from atomgraph.injection import fence
from atomgraph.prompts.atomr.kg_program import KG_PROGRAM_PROMPT, read_program
from atomgraph.prompts.atomr.operators import FILTER_PROMPT, RELATE_PROMPT, SEARCH_PROMPT
from atomgraph.prompts.atomr.packs import DEFAULT_PACK, PACKS, PromptPack
from atomgraph.prompts.atomr.packs.common import Demo
from atomgraph.prompts.atomr.plan import PLAN_PROMPT, PLAN_SYSTEM
from atomgraph.prompts.atomr.reasoning import (
    CHILD_REASONING_PROMPT, CLOSED_BOOK_PROMPT, DIRECT_RAG_PROMPT, SIBLING_REASONING_PROMPT,
)
from atomgraph.prompts.atomr.source_selection import (SOURCE_SELECTION_PROMPT, read_source_choice, source_key,
                                                      source_label)
from atomgraph.prompts.atomr.templating import UNKNOWN_RULE
from atomgraph.prompts.atomr.tree_parser import parse_plans, parse_tree
from atomgraph.prompts.stage import AnswerRefused, Stage, check_answer, reply_problem, text_parser
from atomgraph.state.atomr import ReasoningTree, TreeParseError
from atomgraph.state.run import Evidence
from atomgraph.text import content_words
from atomgraph.text import loads as read_value
from atomgraph.tools.wikidata_source import QueryProgram


# === 1. prompt packs in a stage =================================================================
#
# A pack (``packs/``) is data: planner demonstrations, each stage's demonstrations, the answer
# rules, whether direct RAG may say Unknown. Here it is filled into a stage's template: the
# templates carry ``{examples}``, ``{rules}`` (and direct RAG ``{unknown_rule}``), filled from the
# pack named by the ``pack`` input (default ``general``).

def get_pack(name: str | None) -> PromptPack:
    """The pack called ``name`` (None or "" is ``general``); ValueError naming the packs otherwise."""
    key = (name or DEFAULT_PACK).strip().lower()
    if key not in PACKS:
        raise ValueError(f"unknown prompt pack {name!r}; packs are {', '.join(PACKS)}")
    return PACKS[key]


def plan_text(pack: PromptPack) -> str:
    """The planner's demonstrations: ``Question: …`` then ``Decomposition Tree: {…}`` for each."""
    return "\n\n".join(
        f"Question: {q}\nDecomposition Tree: {json.dumps(tree, ensure_ascii=False)}" for q, tree in pack.plan_examples
    )


def examples_text(pack: PromptPack, stage: str) -> str:
    """``stage``'s demonstrations, numbered ``Example 1.``, ``Example 2.``, …"""
    return "\n\n".join(f"Example {i}.\n{getattr(ex, 'text', ex)}" for i, ex in enumerate(pack.examples.get(stage, []), 1))


def rules_text(pack: PromptPack) -> str:
    """The pack's answer rules on a line of their own ("" when it has none)."""
    return f"\n{pack.rules}" if pack.rules else ""


def unknown_rule(pack: PromptPack, stage: str) -> str:
    """The Unknown option for ``stage``'s instructions ("" where the authors offer none)."""
    return f" {UNKNOWN_RULE}" if stage == "direct_rag" and pack.direct_rag_unknown else ""


def render_for(stage: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A stage's renderer: its inputs plus the chosen pack's ``examples`` and ``rules``."""

    def render(inputs: dict[str, Any]) -> dict[str, Any]:
        pack = get_pack(inputs.get("pack"))
        text = plan_text(pack) if stage == "plan" else examples_text(pack, stage)
        return {**inputs, "examples": text, "rules": rules_text(pack), "unknown_rule": unknown_rule(pack, stage)}

    return render


def _norm_q(text: str) -> str:
    return " ".join("".join(c for c in str(text).lower() if c.isalnum() or c.isspace()).split())


def demonstration_questions(name: str | None) -> set[str]:
    """The questions pack ``name`` shows as demonstrations (planner questions and the questions
    of every stage's examples, and for a :class:`Demo` the dataset question it was written on),
    normalised (lower case, letters and digits): an evaluation split leaves these out (``eval run``
    says how many)."""
    pack = get_pack(name)
    out = {_norm_q(q) for q, _ in pack.plan_examples}
    for examples in pack.examples.values():
        for ex in examples:
            if isinstance(ex, Demo):
                out.add(_norm_q(ex.question))
            out |= {_norm_q(q.split(" (Filter condition:")[0]) for q in _questions_asked(ex)}
    return out


def _questions_asked(example: Demo | str) -> list[str]:
    """The questions a demonstration's text asks (its ``Question: `` lines)."""
    text = getattr(example, "text", example)
    return [ln[len("Question: "):] for ln in text.splitlines() if ln.startswith("Question: ")]


_ANSWER_LIST = re.compile(r"Answer List:\s*(\[.*?\])\s*$", re.S)


def demonstration_answers(name: str | None, stage: str) -> tuple[tuple[str, str], ...]:
    """``(question, answer)`` for each answer of pack ``name``'s demonstrations of ``stage``: what
    a reply read the authors' way (``keep_raw_reply``) is held against, so that a demonstration's
    answer copied by the model is no answer (the answer contract's ``demonstration`` clause)."""
    out: list[tuple[str, str]] = []
    for ex in get_pack(name).examples.get(stage, []):
        question = next(iter(_questions_asked(ex)), "")
        m = _ANSWER_LIST.search(getattr(ex, "text", ex))
        try:
            items = json.loads(m.group(1)) if m else []
        except ValueError:
            items = []
        out += [(question, str(a)) for a in items if str(a).strip()]
    return tuple(out)


# === 2. what the reasoning prompts show ==========================================================
#
# Retrieved knowledge as the operator and direct-RAG prompts show it, one block per source,
# fenced as data (the prompts' EVIDENCE_RULE says so):
#
#     <evidence>
#     Wikipedia Passages:
#     [1] Title | text
#     [2] Title | text
#
#     Google Results:
#     [1] Title | snippet
#     </evidence>
#
# and the question-answer pairs child and sibling reasoning show (ATOMR §3.3.2).

NO_KNOWLEDGE = "(no knowledge retrieved)"

_HEADINGS = {"wikipedia": "Wikipedia Passages", "google": "Google Results", "wikidata": "Wikidata Facts"}


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
    to ``max_chars_per_item``; the blocks fenced as data (``<evidence>`` ... ``</evidence>``:
    :func:`atomgraph.injection.fence`). ``"(no knowledge retrieved)"`` when there is none."""
    groups: dict[str, list[Evidence]] = {}
    for ev in evidence or []:
        groups.setdefault(ev.source, []).append(ev)
    blocks = []
    for source, items in groups.items():
        lines = [f"{knowledge_heading(source)}:"]
        lines += [f"[{i}] {_one_line(ev.render(), max_chars_per_item)}" for i, ev in enumerate(items, 1)]
        blocks.append("\n".join(lines))
    return fence("\n\n".join(blocks)) if blocks else NO_KNOWLEDGE


NO_PAIRS = "(none)"


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", str(text or "")).strip()


def format_qa_pairs(pairs) -> str:
    """One line per question, in id order: ``Q: 2. Who wrote [1]? A: <answer>``.

    Each pair is ``(node_id, question, answers)`` or ``(node_id, question, answers,
    paraphrase)``; ``answers`` is a list (written as a JSON list; ``[]`` when the node found
    nothing, never "Unknown") or already-written text. With a paraphrase the answer reads
    ``<paraphrase>. ["a", "b"]`` (the authors show it for questions that reference others,
    whose bare list would be ambiguous)."""
    lines = []
    for pair in sorted(pairs or [], key=lambda p: p[0]):
        node_id, question, answers = pair[0], pair[1], pair[2]
        paraphrase = _flat(pair[3]) if len(pair) > 3 and pair[3] else ""
        q = _flat(question)
        prefix = f"{node_id}. "
        if not q.startswith(prefix):
            q = prefix + q
        listed = json.dumps([_flat(a) for a in answers], ensure_ascii=False) if isinstance(answers, list) \
            else (_flat(answers) or "[]")
        lines.append(f"Q: {q} A: {paraphrase.rstrip('.')}. {listed}" if paraphrase else f"Q: {q} A: {listed}")
    return "\n".join(lines) if lines else NO_PAIRS


# === 3. ATOMR's answer format and its reader ====================================================
#
# Every ATOMR answering prompt (operators, child/sibling reasoning, direct RAG) asks the model
# to end with::
#
#     So the answer is: (1) Paraphrase Answer: <a sentence>; (2) Answer List: ["a", "b"]
#
# Real models bend this in many ways: markdown, code fences, single-quoted or unquoted lists,
# numbered lines instead of ``(1)``/``(2)``, a bare answer line, an invented next example after
# the answer. :func:`parse_answer` reads all of these and raises ParseError when nothing
# answer-like is present, or when an item of the list breaks the answer contract
# (``prompts/stage.py``: too long, evidence, an echo, a template token, markup, instructions to
# the reader; the error says ``answer refused (<reason>)``).

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
# knowledge (:func:`format_knowledge`), copied out by the model; its "[3]" is a citation, not a list.
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


# --- the structured answer (a JSON schema where the backend takes one) ---
class AnswerSchema(BaseModel):
    reasoning: str = Field(description="One to three short sentences citing what was used.")
    paraphrase: str = Field(description="A sentence restating the question with its answer, or 'Unknown'.")
    answers: list[str] = Field(description="Short clean answer strings; empty when unknown.")


def answer_from_structured(a: AnswerSchema) -> ParsedAnswer:
    """The structured answer; every item held to the answer contract, as :func:`parse_answer` does."""
    items = read_items(a.answers)
    unknown = not items or a.paraphrase.strip().lower() == "unknown"
    return ParsedAnswer(paraphrase=a.paraphrase.strip(), answers=items, unknown=unknown, raw=a.model_dump_json())


# === 4. the plan ================================================================================

class PlanNode(BaseModel):
    question: str = Field(description="The question, numbered like '2. Who directed [1]?' except the root.")
    children: list[str] = Field(default_factory=list, description="Numbered child questions, if decomposed.")
    operator: str | None = Field(None, description="One atomic call: Search(...), Relate(...) or Filter(...), or [DR].")


class PlanSchema(BaseModel):
    """The Atomic Reasoning Tree as a list of nodes (root first)."""

    nodes: list[PlanNode]


def plan_from_structured(plan: PlanSchema | dict) -> str:
    """The structured plan as the planner's flat JSON (what the tree parser reads): a
    :class:`PlanSchema`, or a dict of :func:`~atomgraph.prompts.atomr.plan.plan_schema`'s shape
    (``{"root": node, "nodes": [node, ...]}``, the root first)."""
    if isinstance(plan, dict):
        nodes = ([plan["root"]] if isinstance(plan.get("root"), dict) else []) + \
            [n for n in plan.get("nodes") or [] if isinstance(n, dict)]
        nodes = [PlanNode.model_validate(n) for n in nodes]
    else:
        nodes = list(plan.nodes)
    flat: dict[str, object] = {}
    for n in nodes:
        flat[n.question] = n.children if n.children else (n.operator or "[DR]")
    if not flat:
        raise ParseError("the structured plan has no nodes")
    return json.dumps(flat, ensure_ascii=False)


def _structured_plan_text(text: str) -> str:
    """``text`` itself, or, when it is one JSON object of :func:`plan_schema`'s shape (a reply
    made under that schema), the same plan as the planner's flat JSON."""
    stripped = (text or "").strip()
    if not (stripped.startswith("{") and '"nodes"' in stripped and '"root"' in stripped):
        return text
    try:
        obj = json.loads(stripped)
    except (ValueError, RecursionError):
        return text
    if isinstance(obj, dict) and set(obj) == {"root", "nodes"} and isinstance(obj["root"], dict):
        try:
            return plan_from_structured(obj)
        except (ParseError, ValueError):
            return text
    return text


def plan_constraint(question: str, backend_kind: str):
    """The constraint that keeps a plan for ``question`` whole on a backend (:mod:`~atomgraph.
    prompts.constraints`): :func:`~atomgraph.prompts.atomr.plan.plan_grammar` where the backend
    takes GBNF grammars (the in-process model, vLLM, a llama.cpp server), the root-pinned
    :func:`~atomgraph.prompts.atomr.plan.plan_schema` on OpenAI, None elsewhere."""
    from atomgraph.prompts.atomr.plan import PLAN_CLOSE_RESERVE, plan_grammar, plan_schema
    from atomgraph.prompts.constraints import Grammar, JsonSchema

    if backend_kind in ("local", "vllm", "llamacpp"):
        return Grammar(plan_grammar(question), close_reserve=PLAN_CLOSE_RESERVE)
    if backend_kind == "openai":
        return JsonSchema(plan_schema(question), name="atomic_reasoning_tree")
    return None


def read_plan(text: str) -> ReasoningTree:
    """The planner's reply as a tree (``tree_parser.parse_tree``, every repair recorded on
    the tree). Raises ParseError when no tree can be read."""
    if not (text or "").strip():
        raise ParseError("the planner returned an empty reply")
    try:
        return parse_tree(text)
    except TreeParseError as exc:
        raise ParseError(f"the plan could not be parsed: {exc.reason}") from None


def read_plans(text: str) -> list[ReasoningTree]:
    """Every plan the planner's reply holds, as trees, in order (``tree_parser.split_plans``:
    a small model writes a copied demonstration's plan next to its own; the plan node keeps
    the one whose root is the question asked). A reply with one plan gives one tree, read
    exactly as :func:`read_plan` reads it. Raises ParseError when no plan can be read."""
    if not (text or "").strip():
        raise ParseError("the planner returned an empty reply")
    text = _structured_plan_text(text)
    trees, problems = [], []
    for tree in parse_plans(text):
        if isinstance(tree, TreeParseError):
            problems.append(tree.reason)
        else:
            trees.append(tree)
    if not trees:
        raise ParseError(f"the plan could not be parsed: {problems[0]}")
    return trees


# Root check: the planner's root must be the question asked. At least half of the
# question's content words must appear in the root (a planner that copied an example's
# question, or planned a different question, fails this). Of several plans in one reply, the
# one whose root shares the most passes; none passing is a parse failure.
ROOT_MATCH_THRESHOLD = 0.5


def root_overlap(root: str, question: str) -> float:
    """Share of the question's content words found in the planner's root question."""
    q = content_words(question)
    return len(q & content_words(root)) / len(q) if q else 1.0


def plan_reply_problem(text: str | None, question: str, pack: str | None = None) -> str | None:
    """Why a planner reply that gave no tree for ``question`` is no plan at all, in words
    (``stage.reply_problem`` against the plan prompt's instructions and the pack's
    demonstrations), e.g. ``the reply is no plan but instructions to the reader (injection)``;
    None when the reply shows no such sign."""
    try:
        demos = [q for q, _ in get_pack(pack).plan_examples]
    except ValueError:
        demos = []
    kind = reply_problem(text, question=question, instructions=[PLAN_SYSTEM], demonstrations=demos)
    if kind is None or kind == "empty":  # an empty reply's parse error says so already
        return None
    return f"the reply is no plan but {_NOT_A_PLAN[kind]} ({kind})"


_NOT_A_PLAN = {"echo": "an echo of the prompt (its instructions and demonstrations)",
               "injection": "instructions to the reader", "demonstration": "a copy of a demonstration, or one of its own",
               "template_token": "chat-template tokens"}


# === 5. the stages ==============================================================================

class SourceChoice(BaseModel):
    sources: list[str] = Field(description="Names of the sources to consult, spelled as listed.")


# Stop sequences: where a few-shot reply ends and an invented next demonstration would begin.
ANSWER_STOP = ("\nQuestion:", "\nRetrieved Knowledge:", "\nExample ", "\nChild questions and answers:",
               "\nReferenced questions and answers:")
PLAN_STOP = ("\nQuestion:",)
SOURCE_STOP = ("\nQ:",)


# Output caps as the authors' code sets them: the planner 512 tokens, asked again once at 768 when its
# reply is cut (finish_reason "length"; THU-KEG/AtomR src/main.py:83-86); every answer stage — the
# operators, child/[DR] reasoning, direct RAG, the closed-book answer — 256, once more at 512
# (src/global_reasoner.py:175-177 and the same lines per function); source selection 64, no retry
# (src/main.py:177). The retry is made by rt.ask (Stage.retry_max_tokens) and recorded.
PLAN_CAP, PLAN_RETRY_CAP = 512, 768
ANSWER_CAP, ANSWER_RETRY_CAP = 256, 512


def _answer_stage(name: str, role: str, prompt, answers: bool = True) -> Stage[ParsedAnswer]:
    # ``answers``: held to the question too (check_answer_to) — not the operators: Search("Wild
    # Strawberries", "1957 film") rightly answers with the question's own words
    return Stage(name=name, role=role, prompt=prompt, parser=text_parser(parse_answer, "atomr_answer"),
                 schema=AnswerSchema, from_structured=answer_from_structured, max_tokens=ANSWER_CAP,
                 retry_max_tokens=ANSWER_RETRY_CAP, answers=answers, stop=ANSWER_STOP, render=render_for(name))


PLAN_STAGE: Stage[list[ReasoningTree]] = Stage(
    name="plan", role="planner", prompt=PLAN_PROMPT, parser=text_parser(read_plans, "atomr_plan"),
    schema=PlanSchema, from_structured=lambda p: read_plans(plan_from_structured(p)), max_tokens=PLAN_CAP,
    retry_max_tokens=PLAN_RETRY_CAP, stop=PLAN_STOP, render=render_for("plan"),
)
SOURCE_SELECTION_STAGE: Stage[list[str]] = Stage(
    name="source_selection", role="executor", prompt=SOURCE_SELECTION_PROMPT,
    parser=text_parser(read_source_choice, "atomr_sources"), schema=SourceChoice,
    from_structured=lambda c: [source_key(s) for s in c.sources], max_tokens=64, stop=SOURCE_STOP,
)
SEARCH_STAGE = _answer_stage("search", "executor", SEARCH_PROMPT, answers=False)
RELATE_STAGE = _answer_stage("relate", "executor", RELATE_PROMPT, answers=False)
FILTER_STAGE = _answer_stage("filter", "executor", FILTER_PROMPT, answers=False)
CHILD_REASONING_STAGE = _answer_stage("child_reasoning", "answerer", CHILD_REASONING_PROMPT)
SIBLING_REASONING_STAGE = _answer_stage("sibling_reasoning", "answerer", SIBLING_REASONING_PROMPT)
DIRECT_RAG_STAGE = _answer_stage("direct_rag", "answerer", DIRECT_RAG_PROMPT)
CLOSED_BOOK_STAGE = _answer_stage("closed_book", "answerer", CLOSED_BOOK_PROMPT)

KG_PROGRAM_STAGE = Stage(
    name="kg_program", role="executor", prompt=KG_PROGRAM_PROMPT, parser=text_parser(read_program, "atomr_kg_program"),
    schema=QueryProgram, max_tokens=128, stop=("\nQuestion:",),
)

OPERATOR_STAGES = {"search": SEARCH_STAGE, "relate": RELATE_STAGE, "filter": FILTER_STAGE}

STAGES: dict[str, Stage] = {s.name: s for s in (
    PLAN_STAGE, SOURCE_SELECTION_STAGE, SEARCH_STAGE, RELATE_STAGE, FILTER_STAGE,
    CHILD_REASONING_STAGE, SIBLING_REASONING_STAGE, DIRECT_RAG_STAGE, CLOSED_BOOK_STAGE, KG_PROGRAM_STAGE,
)}


def operator_stage(name: str) -> Stage[ParsedAnswer]:
    """The executor stage of atomic operator ``name`` (Search, Relate or Filter; any case)."""
    try:
        return OPERATOR_STAGES[str(name).strip().lower()]
    except KeyError:
        raise ValueError(f"unknown atomic operator {name!r}: expected Search, Relate or Filter") from None
