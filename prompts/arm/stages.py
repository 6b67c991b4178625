"""ARM's prompt stages (§3.2–3.3 of the ARM paper), each a prompt with its tolerant parser.

Stage names carry the ``arm_`` prefix (``arm_decompose``, ...): tags, scripted models and
``stage_max_tokens`` address them by it.

- ``decompose`` — the keywords the question needs, found without looking at the data;
- ``align`` — one keyword rephrased as one of the corpus n-grams offered (the server may
  constrain the reply to them: see :mod:`atomgraph.nodes.arm.decoding`);
- ``draft`` — the decoder's changes to one solver draft: objects to add from the other
  candidates, objects to drop;
- ``verify`` — the objects of one draft that together answer the question;
- ``answer`` — the answer from the chosen objects (``So the answer is: ...``).

Every parser reads JSON when it finds it and plain lines otherwise, and raises
:class:`~atomgraph.errors.ParseError` on text it cannot read.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.prompts import ChatPromptTemplate

from atomgraph.errors import ParseError
from atomgraph.prompts.baselines import answer_parser, extract_answer
from atomgraph.prompts.stage import Stage, text_parser

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\(\d+\))\s*")
_MAX_ITEM_CHARS = 200


def _json_value(text: str) -> Any:
    """The first JSON object or list in ``text`` (code fences allowed), or None."""
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(text)
    decoder = json.JSONDecoder()
    for cand in candidates:
        for i, ch in enumerate(cand):
            if ch in "[{":
                try:
                    value, _ = decoder.raw_decode(cand[i:])
                except (ValueError, RecursionError):
                    continue
                return value
    return None


def _clean(item: Any) -> str:
    s = item if isinstance(item, str) else ("" if item is None else str(item))
    return s.strip().strip("\"'`“”‘’").strip()[:_MAX_ITEM_CHARS]


def _unique(items) -> list[str]:
    out: list[str] = []
    for it in items:
        s = _clean(it)
        if s and s not in out:
            out.append(s)
    return out


def _line_items(text: str, label: str | None = None) -> list[str]:
    """Items from plain lines: bullets or numbers stripped, a leading ``label:`` dropped, one
    comma-separated line split."""
    lines = [ln for ln in (x.strip() for x in text.splitlines()) if ln]
    if label:
        lab = re.compile(rf"^\s*{label}\s*[:：]\s*", re.I)
        lines = [x for x in (lab.sub("", ln).strip() for ln in lines) if x]
    items = [_BULLET.sub("", ln) for ln in lines]
    if len(items) == 1 and "," in items[0]:
        items = items[0].split(",")
    return _unique(items)


# --- parsers ---------------------------------------------------------------------------------

def parse_keywords(text: str) -> list[str]:
    """Keywords from a JSON list, ``{"keywords": [...]}``, or one per line / comma-separated."""
    text = (text or "").strip()
    if not text:
        raise ParseError("the model returned no keywords (empty reply)")
    value = _json_value(text)
    if isinstance(value, dict):
        value = value.get("keywords")
    if isinstance(value, list):
        items = _unique(v for v in value if isinstance(v, (str, int, float)))
    else:
        if text[0] in "[{" or text.startswith("```"):
            raise ParseError(f"unreadable JSON in the reply: {text[:120]!r}")
        if "\n" not in text and "," not in text and text[-1] in ".!?" and len(text.split()) > 3:
            raise ParseError(f"the reply is a sentence, not keywords: {text[:120]!r}")
        items = [i for i in _line_items(text, "keywords") if len(i.split()) <= 6]
    items = [i for i in items if re.search(r"\w", i) and len(i) <= 100]
    if not items:
        raise ParseError(f"no keywords found in the reply: {text[:120]!r}")
    return items


def parse_ngram(text: str) -> str:
    """The n-gram the model chose: ``{"ngram": ...}``, or the first non-empty line."""
    text = (text or "").strip()
    if not text:
        raise ParseError("the model returned no n-gram (empty reply)")
    value = _json_value(text) if text.lstrip().startswith(("{", "`")) else None
    if isinstance(value, dict) and isinstance(value.get("ngram"), str):
        return value["ngram"].strip()
    first = _clean(_BULLET.sub("", text.splitlines()[0]))
    first = re.sub(r"^\s*(?:n-?gram|answer)\s*[:：]\s*", "", first, flags=re.I)
    if not first:
        raise ParseError(f"no n-gram found in the reply: {text[:120]!r}")
    return first


def parse_ngram_list(text: str) -> list[str]:
    """The n-gram list of a constrained beam reply ``(a, b, c)``: its items, normalised."""
    from atomgraph.tools.arm_index import normalize_ngram

    body = (text or "").strip()
    if body.startswith("("):
        body = body[1:]
    body = body.split(")")[0]
    items = [normalize_ngram(x) for x in body.split(",")]
    items = list(dict.fromkeys(x for x in items if x))
    if not items:
        raise ParseError(f"no n-gram list in the reply: {(text or '')[:120]!r}")
    return items


_NONE = re.compile(r"^\s*(?:none|no changes?|nothing|n/a|-)\s*\.?\s*$", re.I)


def parse_changes(text: str) -> dict[str, list[str]]:
    """``{"add": [...], "drop": [...]}`` from JSON, or ``ADD: a, b`` / ``DROP: c`` lines;
    "no changes" gives both empty."""
    text = (text or "").strip()
    if not text:
        raise ParseError("the model returned no changes (empty reply)")
    value = _json_value(text)
    if isinstance(value, dict) and ("add" in value or "drop" in value):
        out = {}
        for key in ("add", "drop"):
            v = value.get(key) or []
            if isinstance(v, str):
                v = [v]
            if not isinstance(v, list):
                raise ParseError(f"field {key!r} of the changes is not a list")
            out[key] = _unique(x for x in v if isinstance(x, (str, int)))
        return out
    out = {"add": [], "drop": []}
    found = False
    for line in text.splitlines():
        m = re.match(r"^\s*(add|drop|remove)\s*[:：]\s*(.*)$", line, re.I)
        if m:
            found = True
            key = "add" if m.group(1).lower() == "add" else "drop"
            rest = m.group(2).strip()
            if not _NONE.match(rest):
                out[key] += [x for x in _unique(rest.split(",")) if x not in out[key]]
    if found or _NONE.match(text):
        return out
    raise ParseError(f"no ADD/DROP changes found in the reply: {text[:120]!r}")


def parse_selection(text: str) -> dict[str, Any]:
    """``{"objects": [...], "reasoning": "..."}`` from JSON (a bare list too), or a
    ``Selected: a, b`` line, or one object per line."""
    text = (text or "").strip()
    if not text:
        raise ParseError("the model selected nothing (empty reply)")
    value = _json_value(text)
    reasoning = ""
    if isinstance(value, dict):
        reasoning = _clean(value.get("reasoning", ""))
        value = value.get("objects", value.get("selected"))
    if isinstance(value, list):
        return {"objects": _unique(v for v in value if isinstance(v, (str, int))), "reasoning": reasoning}
    m = re.search(r"^\s*(?:selected|objects)\s*[:：]\s*(.*)$", text, re.I | re.M)
    if m:
        rest = m.group(1).strip()
        return {"objects": [] if _NONE.match(rest) else _unique(rest.split(",")), "reasoning": text[: m.start()].strip()}
    raise ParseError(f"no selected objects found in the reply: {text[:120]!r}")


# --- prompts ---------------------------------------------------------------------------------

_DECOMPOSE = ChatPromptTemplate.from_messages([
    ("system",
     "You prepare a search over a collection of documents and tables. Read the question and list the "
     "key pieces of information needed to answer it: names of entities, attributes, relations, table or "
     "column names, values. Use short keywords of one to three words, taken from the question or "
     "implied by it. Reply with a JSON list of at most {max_keywords} strings and nothing else."),
    ("human", "Question: {question}\nKeywords:"),
])

_ALIGN = ChatPromptTemplate.from_messages([
    ("system",
     "The words of a keyword may differ from how the data collection writes them. Rephrase the keyword "
     "as one phrase that occurs in the collection. Choose exactly one phrase from the list of options "
     "and reply with that phrase only, written as it appears in the list."),
    ("human", "Question: {question}\nKeyword: {keyword}\nOptions:\n{options}\nPhrase:"),
])

_ALIGN_LIST = ChatPromptTemplate.from_messages([
    ("system",
     "The words of a keyword may differ from how the data collection writes them. Rephrase the keyword "
     "as a list of short phrases (one to three words each) the way the collection would write them, "
     "in parentheses and separated by commas, for example (degree, educated, postgraduate)."),
    ("human", "Question: {question}\nKeyword: {keyword}\nPhrases:"),
])

_DRAFT = ChatPromptTemplate.from_messages([
    ("system",
     "You are assembling the documents and tables needed to answer a question. A solver proposed a "
     "draft: a set of objects and how they connect. Other candidate objects are listed by id and title. "
     "If an object the question needs is missing, add it from the candidates; if a draft object is "
     "useless, drop it. Change at most {max_changes} objects, or none. Reply with a JSON object "
     '{{"add": [ids], "drop": [ids]}} and nothing else.'),
    ("human", "Question: {question}\nKeywords: {keywords}\n\nDraft:\n{draft}\n\nOther candidates:\n{others}\n\nChanges:"),
])

_VERIFY = ChatPromptTemplate.from_messages([
    ("system",
     "You check a draft set of documents and tables against a question. Keep the objects whose content "
     "covers some part of the question (see its keywords) or connects objects that do; leave out the "
     "rest. Use only ids that appear in the draft. Reply with a JSON object "
     '{{"reasoning": "<one or two sentences>", "objects": [ids]}} and nothing else.'),
    ("human", "Question: {question}\nKeywords: {keywords}\n\nDraft:\n{draft}\n\nSelection:"),
])

_ANSWER = ChatPromptTemplate.from_messages([
    ("system",
     "Answer the question from the documents and tables below. Give the shortest answer that fully "
     "answers it: an entity, a date, a number, yes or no. Where the objects do not hold the answer, "
     "answer from what you know. Finish with a line 'So the answer is: <answer>'."),
    ("human", "Objects:\n{objects}\n\nQuestion: {question}\nAnswer:"),
])


DECOMPOSE = Stage("arm_decompose", "decoder", _DECOMPOSE, text_parser(parse_keywords, "keywords"), max_tokens=160)
ALIGN = Stage("arm_align", "decoder", _ALIGN, text_parser(parse_ngram, "ngram"), max_tokens=32)
# §3.2.1 as the paper decodes it: a list of corpus n-grams under a token-trie beam search
ALIGN_LIST = Stage("arm_align_list", "decoder", _ALIGN_LIST, text_parser(parse_ngram_list, "ngram_list"), max_tokens=48)
DRAFT = Stage("arm_draft", "decoder", _DRAFT, text_parser(parse_changes, "changes"), max_tokens=200)
VERIFY = Stage("arm_verify", "decoder", _VERIFY, text_parser(parse_selection, "selection"), max_tokens=400)
# the answer contract against the prompt's own instructions (a small model sends them back)
ANSWER = Stage("arm_answer", "answerer", _ANSWER,
               answer_parser([m.prompt.template for m in _ANSWER.messages if hasattr(m, "prompt")], name="answer"),
               max_tokens=256, answers=True)

STAGES: dict[str, Stage] = {s.name: s for s in (DECOMPOSE, ALIGN, ALIGN_LIST, DRAFT, VERIFY, ANSWER)}
