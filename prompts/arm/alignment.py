"""ARM's information-alignment stages (§3.2.1): the question's keywords, then each keyword
rephrased as corpus n-grams.

| stage | replies with | value | constraint (``rt.ask``) |
|---|---|---|---|
| ``arm_decompose`` | a JSON list of keywords | ``list[str]`` | — (the paper's free decomposition) |
| ``arm_decompose_list`` | ``(a, b, c)``: the keywords as n-grams | ``list[str]`` | ``TokenTrie`` of the question's and the corpus's n-grams (switch ``decompose_constraint="ngrams"``, in-process) |
| ``arm_align`` | one of the offered n-grams (a shortlist) | ``str`` | ``Choice`` of the shortlist |
| ``arm_align_list`` | ``(a, b, c)``: a list of corpus n-grams | ``list[str]`` | ``TokenTrie`` (in-process) or :func:`ngram_list_grammar` (served) |
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from langchain_core.prompts import ChatPromptTemplate

from atomgraph.errors import ParseError
from atomgraph.prompts.arm.parsing import BULLET, clean, json_value, line_items, unique
from atomgraph.prompts.constraints import Choice, Grammar, list_grammar
from atomgraph.prompts.stage import Stage, text_parser
from atomgraph.text import escape, unsafe_chars

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
    unsafe = [i for i in items if unsafe_chars(i)]
    items = [i for i in items if not unsafe_chars(i)]  # never carried into a later prompt (an unencodable request)
    if not items:
        if unsafe:
            raise ParseError(f"the reply's keywords hold control characters or lone surrogates: {escape(text[:120])!r}")
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
