"""ARM's prompt stages (§3.2–3.3 of the ARM paper) in one place: each stage's prompt with its
parser, output cap, renderer and constraint side by side, in the order a question meets them.

Stage names carry the ``arm_`` prefix (``arm_decompose``, ...): tags, scripted models and
``stage_max_tokens`` address them by it.

| paper | stage | replies with | value | constraint (``rt.ask``) |
|---|---|---|---|---|
| §3.2.1 | ``arm_decompose`` | a JSON list of keywords | ``list[str]`` | — (the paper's free decomposition) |
| §3.2.1 | ``arm_decompose_list`` | ``(a, b, c)``: the keywords as n-grams | ``list[str]`` | ``TokenTrie`` of the question's and the corpus's n-grams (switch ``decompose_constraint="ngrams"``, in-process) |
| §3.2.1 | ``arm_align`` | one of the offered n-grams (a shortlist) | ``str`` | ``Choice`` of the shortlist |
| §3.2.1 | ``arm_align_list`` | ``(a, b, c)``: a list of corpus n-grams | ``list[str]`` | ``TokenTrie`` (in-process) or :func:`ngram_list_grammar` (served) |
| §3.3 | ``arm_verify`` | ``{"objects": [ids], "reasoning"}`` | ``{"objects", "reasoning"}`` | :func:`selection_schema`: ids of the draft's objects |
| answer | ``arm_answer`` | ``So the answer is: ...`` | ``str`` | — |

Every parser reads JSON when it finds it (:func:`json_value`) and plain lines otherwise, and
raises :class:`~atomgraph.errors.ParseError` on text it cannot read.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from langchain_core.prompts import ChatPromptTemplate

from atomgraph.errors import ParseError
from atomgraph.injection import EVIDENCE_RULE
from atomgraph.prompts.constraints import Choice, Grammar, JsonSchema, list_grammar
from atomgraph.prompts.stage import Stage, answer_parser, text_parser
from atomgraph.text import read_json

# --- what the parsers share: the first JSON value in a reply, and plain-line items -----------------

BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\(\d+\))\s*")
NONE = re.compile(r"^\s*(?:none|no changes?|nothing|n/a|-)\s*\.?\s*$", re.I)
_MAX_ITEM_CHARS = 200


def json_value(text: str) -> Any:
    """The JSON object or list of ``text`` (code fences allowed), or None: the one reader of model
    JSON (:func:`atomgraph.text.read_json`; a citation marker such as the ``[1]`` of
    ``'Sure! [1] is the first. Then: ["a", "b"]'`` is not taken for the list)."""
    return read_json(text)


def clean(item: Any) -> str:
    s = item if isinstance(item, str) else ("" if item is None else str(item))
    return s.strip().strip("\"'`“”‘’").strip()[:_MAX_ITEM_CHARS]


def unique(items) -> list[str]:
    out: list[str] = []
    for it in items:
        s = clean(it)
        if s and s not in out:
            out.append(s)
    return out


def line_items(text: str, label: str | None = None) -> list[str]:
    """Items from plain lines: bullets or numbers stripped, a leading ``label:`` dropped, one
    comma-separated line split."""
    lines = [ln for ln in (x.strip() for x in text.splitlines()) if ln]
    if label:
        lab = re.compile(rf"^\s*{label}\s*[:：]\s*", re.I)
        lines = [x for x in (lab.sub("", ln).strip() for ln in lines) if x]
    items = [BULLET.sub("", ln) for ln in lines]
    if len(items) == 1 and "," in items[0]:
        items = items[0].split(",")
    return unique(items)


# --- §3.2.1 information alignment ---------------------------------------------------------------

# --- decompose: the keywords the question needs, found without looking at the data -----------

_DECOMPOSE = ChatPromptTemplate.from_messages([
    ("system",
     "You prepare a search over a collection of documents and tables. Read the question and list the "
     "key pieces of information needed to answer it: names of entities, attributes, relations, table or "
     "column names, values. Use short keywords of one to three words, taken from the question or "
     "implied by it. Reply with a JSON list of at most {max_keywords} strings and nothing else."),
    ("human", "Question: {question}\nKeywords:"),
])


def parse_keywords(text: str) -> list[str]:
    """Keywords from a JSON list, ``{"keywords": [...]}``, or one per line / comma-separated."""
    text = (text or "").strip()
    if not text:
        raise ParseError("the model returned no keywords (empty reply)")
    value = json_value(text)
    if isinstance(value, dict):
        value = value.get("keywords")
    if isinstance(value, list):
        items = unique(v for v in value if isinstance(v, (str, int, float)))
    else:
        if text[0] in "[{" or text.startswith("```"):
            raise ParseError(f"unreadable JSON in the reply: {text[:120]!r}")
        if "\n" not in text and "," not in text and text[-1] in ".!?" and len(text.split()) > 3:
            raise ParseError(f"the reply is a sentence, not keywords: {text[:120]!r}")
        items = [i for i in line_items(text, "keywords") if len(i.split()) <= 6]
    items = [i for i in items if re.search(r"\w", i) and len(i) <= 100]
    if not items:
        raise ParseError(f"no keywords found in the reply: {text[:120]!r}")
    return items


DECOMPOSE = Stage("arm_decompose", "decoder", _DECOMPOSE, text_parser(parse_keywords, "keywords"), max_tokens=160)

# --- decompose_list: the keywords as a list of n-grams (switch decompose_constraint="ngrams") ---

# Demonstrations: development questions of HotpotQA and MuSiQue (ATOMR authors' dev_100 splits), the
# keywords ours, each an n-gram of its question as the paper's decomposition into substrings writes them.
DECOMPOSE_LIST_DEMOS = (
    ("Which has more members, Dada or Alt-J?", "dada, alt j, members"),
    ("Atlas Shrugged was a film based on the books by a proponent of what philosophy?",
     "atlas shrugged, film, books, proponent, philosophy"),
    ("What field of work did the person who first recognized that hydrogen was a discrete substance work in?",
     "field of work, first recognized, hydrogen, discrete substance"),
)

_DECOMPOSE_LIST = ChatPromptTemplate.from_messages([
    ("system",
     "You prepare a search over a collection of documents and tables. Read the question and list the "
     "key pieces of information needed to answer it: names of entities, attributes, relations, values, "
     "each as one to three lower-case words of the question or of the collection, in parentheses and "
     "separated by commas.\n\n"
     + "\n\n".join(f"Question: {q}\nKeywords: ({k})" for q, k in DECOMPOSE_LIST_DEMOS)),
    ("human", "Question: {question}\nKeywords:"),
])

DECOMPOSE_LIST = Stage("arm_decompose_list", "decoder", _DECOMPOSE_LIST,
                       text_parser(lambda text: parse_ngram_list(text), "keywords"), max_tokens=48)

# --- align: one keyword as one n-gram of a shortlist (served and closed models) --------------

_ALIGN = ChatPromptTemplate.from_messages([
    ("system",
     "The words of a keyword may differ from how the data collection writes them. Rephrase the keyword "
     "as one phrase that occurs in the collection. Choose exactly one phrase from the list of options "
     "and reply with that phrase only, written as it appears in the list."),
    ("human", "Question: {question}\nKeyword: {keyword}\nOptions:\n{options}\nPhrase:"),
])
NO_OPTIONS = "(no close phrase found: write the phrase as the collection would)"


def render_align(inputs: dict[str, Any]) -> dict[str, Any]:
    """``options``: the shortlisted n-grams, one per line."""
    allowed: Sequence[str] = inputs.get("options") or ()
    return {"question": inputs["question"], "keyword": inputs["keyword"],
            "options": "\n".join(allowed) if allowed else NO_OPTIONS}


def shortlist_choice(allowed: Sequence[str]) -> Choice | None:
    """The reply is one of the shortlisted n-grams (an OpenAI enum reply is ``{"ngram": ...}``);
    None without a shortlist (no constraint can then be met)."""
    return Choice(tuple(allowed), key="ngram") if allowed else None


def parse_ngram(text: str) -> str:
    """The n-gram the model chose: ``{"ngram": ...}``, or the first non-empty line."""
    text = (text or "").strip()
    if not text:
        raise ParseError("the model returned no n-gram (empty reply)")
    value = json_value(text) if text.lstrip().startswith(("{", "`")) else None
    if isinstance(value, dict) and isinstance(value.get("ngram"), str):
        return value["ngram"].strip()
    first = clean(BULLET.sub("", text.splitlines()[0]))
    first = re.sub(r"^\s*(?:n-?gram|answer)\s*[:：]\s*", "", first, flags=re.I)
    if not first:
        raise ParseError(f"no n-gram found in the reply: {text[:120]!r}")
    return first


ALIGN = Stage("arm_align", "decoder", _ALIGN, text_parser(parse_ngram, "ngram"), max_tokens=32, render=render_align)

# --- align_list: §3.2.1 as the paper decodes it, a list of corpus n-grams ---------------------

# Demonstrations: development questions of HotpotQA and MuSiQue (the ATOMR authors' dev_100 splits in
# ../shared/data/atomr), never the retrieval sets' questions; the lists are ours, written the way the
# paper's Table 7 writes them ("alumni (alumni, former, university)"): the keyword as the collection
# spells it first where it does, then other n-grams a document would use for it. One block per
# question, one line per keyword, as the paper's "The relevant n-grams are ..." line.
ALIGN_LIST_DEMOS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Which has more members, Dada or Alt-J?",
     (("Dada", "dada, dada band"), ("members", "members, band members, lineup"), ("Alt-J", "alt j"))),
    ("Atlas Shrugged was a film based on the books by a proponent of what philosophy?",
     (("Atlas Shrugged", "atlas shrugged, ayn rand"), ("proponent", "proponent, advocate, developed"),
      ("philosophy", "philosophy, philosophical"))),
    ("What field of work did the person who first recognized that hydrogen was a discrete substance work in?",
     (("hydrogen", "hydrogen"), ("first recognized", "first recognized, discovered, identified"),
      ("field of work", "field, scientist, known for"))),
)


def _demos() -> str:
    blocks = ["Question: " + q + "".join(f"\nKeyword: {k}\nN-grams: ({v})" for k, v in lists)
              for q, lists in ALIGN_LIST_DEMOS]
    return "\n\n".join(blocks).replace("{", "{{").replace("}", "}}")


_ALIGN_LIST = ChatPromptTemplate.from_messages([
    ("system",
     "The words of a keyword may differ from how the data collection writes them. Rewrite each keyword "
     "as the n-grams (one to three lower-case words each) that the collection uses for it, in "
     "parentheses and separated by commas.\n\n" + _demos()),
    ("human", "Question: {question}\nKeyword: {keyword}\nN-grams:"),
])
LIST_OPEN, LIST_CLOSE, LIST_SEP = "(", ")", ", "  # the reply's delimiters, for the parser and both constraints
# In process the beam forces the opening delimiter itself: " (" as the demonstrations write it after
# "N-grams:" (Gemma's tokenizer glues the space to the parenthesis; "(" alone would open a list the
# demonstrations never show, and the base model answers it with "(1)", "(a)").
LOCAL_LIST_OPEN = " ("


def ngram_list_grammar(ngrams: Iterable[str]) -> Grammar:
    """Served models: the reply is ``(a, b, …)`` with every item a corpus n-gram — a GBNF grammar
    over the collection's n-gram set, prefix-factored (:func:`~atomgraph.prompts.constraints.list_grammar`)."""
    return list_grammar(ngrams, open=LIST_OPEN, close=LIST_CLOSE, sep=LIST_SEP)


def parse_ngram_list(text: str) -> list[str]:
    """The n-gram list of a constrained reply ``(a, b, c)``: its items, normalised."""
    from atomgraph.tools.arm_index import normalize_ngram

    body = (text or "").strip()
    if body.startswith(LIST_OPEN):
        body = body[1:]
    body = body.split(LIST_CLOSE)[0]
    items = [normalize_ngram(x) for x in body.split(LIST_SEP.strip())]
    items = list(dict.fromkeys(x for x in items if x))
    if not items:
        raise ParseError(f"no n-gram list in the reply: {(text or '')[:120]!r}")
    return items


ALIGN_LIST = Stage("arm_align_list", "decoder", _ALIGN_LIST, text_parser(parse_ngram_list, "ngram_list"), max_tokens=48)


# --- stages over drafts (§3.3): constrained to the draft's own objects ----------------------------

def render_draft_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    """``keywords``: the question's keywords, comma-separated ("(none)" without any)."""
    return {**inputs, "keywords": ", ".join(inputs.get("keywords") or []) or "(none)"}


def ids_schema(ids: Sequence[str], fields: Sequence[str], *, with_reasoning: bool = False) -> dict:
    """A JSON schema whose ``fields`` are lists of values from ``ids`` (the draft's objects);
    ``with_reasoning``: then a ``reasoning`` string, *after* the lists, so that a reasoning cut at
    the output cap cannot leave the lists empty (the cap closes the document with each missing
    key's shortest value: ``[]`` for a list decoded after a runaway reasoning)."""
    item = {"type": "string", "enum": list(ids)} if ids else {"type": "string"}
    props: dict[str, Any] = {f: {"type": "array", "items": item} for f in fields}
    if with_reasoning:
        props["reasoning"] = {"type": "string"}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


# --- verify: the objects of one draft that together answer the question ------------------------

# One demonstration, a development question of HotpotQA (the ATOMR authors' dev_100 split), objects in
# our own words in the draft's own format: a base model otherwise copies a placeholder for the
# reasoning and keeps nothing.
VERIFY_DEMO = (
    "Question: Which has more members, Dada or Alt-J?\nKeywords: members, Dada, Alt-J\n\nDraft:\n<evidence>\n"
    "Object id: d1\nDocument name: Dada (band)\nDocument content: Dada is an American rock trio formed in "
    "Los Angeles in 1992 by Joie Calio, Michael Gurley and Phil Leavitt.\n\n"
    "Object id: d2\nDocument name: Dada\nDocument content: Dada was an art movement of the European "
    "avant-garde that began in Zurich in 1916.\n\n"
    "Object id: d3\nDocument name: Alt-J\nDocument content: Alt-J is an English indie rock band formed in "
    "Leeds in 2007; its four founding members met at university.\n\n"
    "Connections:\n- Dada (band) and Dada are related\n</evidence>\n\nSelection: "
    '{"objects": ["d1", "d3"], "reasoning": "d1 gives the members of the band Dada and d3 those of Alt-J; '
    'd2 is an art movement, not the band."}'
)

_VERIFY = ChatPromptTemplate.from_messages([
    ("system",
     "You check a draft set of documents and tables against a question. Keep the objects whose content "
     "covers some part of the question (see its keywords) or connects objects that do; leave out the "
     "rest. Use only ids that appear in the draft. Reply with a JSON object: the ids kept under "
     '"objects", then in "reasoning" one or two sentences saying why. ' + EVIDENCE_RULE + "\n\n"
     + VERIFY_DEMO.replace("{", "{{").replace("}", "}}")),
    ("human", "Question: {question}\nKeywords: {keywords}\n\nDraft:\n{draft}\n\nSelection:"),
])


def selection_schema(ids: Sequence[str]) -> JsonSchema:
    return JsonSchema(ids_schema(ids, ["objects"], with_reasoning=True), "verified_objects")


def parse_selection(text: str) -> dict[str, Any]:
    """``{"objects": [...], "reasoning": "..."}`` from JSON (a bare list too), or a
    ``Selected: a, b`` line, or one object per line."""
    text = (text or "").strip()
    if not text:
        raise ParseError("the model selected nothing (empty reply)")
    value = json_value(text)
    reasoning = ""
    if isinstance(value, dict):
        reasoning = clean(value.get("reasoning", ""))
        value = value.get("objects", value.get("selected"))
    if isinstance(value, list):
        return {"objects": unique(v for v in value if isinstance(v, (str, int))), "reasoning": reasoning}
    m = re.search(r"^\s*(?:selected|objects)\s*[:：]\s*(.*)$", text, re.I | re.M)
    if m:
        rest = m.group(1).strip()
        return {"objects": [] if NONE.match(rest) else unique(rest.split(",")), "reasoning": text[: m.start()].strip()}
    raise ParseError(f"no selected objects found in the reply: {text[:120]!r}")


VERIFY = Stage("arm_verify", "decoder", _VERIFY, text_parser(parse_selection, "selection"), max_tokens=400,
               render=render_draft_inputs)


# --- answer: the answer from the retrieved objects ------------------------------------------

_ANSWER = ChatPromptTemplate.from_messages([
    ("system",
     "Answer the question from the documents and tables below. Give the shortest answer that fully "
     "answers it: an entity, a date, a number, yes or no. Where the objects do not hold the answer, "
     "answer from what you know. Finish with a line 'So the answer is: <answer>'. " + EVIDENCE_RULE),
    ("human", "Objects:\n{objects}\n\nQuestion: {question}\nAnswer:"),
])

# the answer contract against the prompt's own instructions (a small model sends them back)
ANSWER = Stage("arm_answer", "answerer", _ANSWER,
               answer_parser([m.prompt.template for m in _ANSWER.messages if hasattr(m, "prompt")], name="answer"),
               max_tokens=256, answers=True)


STAGES: dict[str, Stage] = {s.name: s for s in (DECOMPOSE, DECOMPOSE_LIST, ALIGN, ALIGN_LIST, VERIFY, ANSWER)}
