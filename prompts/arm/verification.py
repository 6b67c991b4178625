"""ARM's stages over drafts: the decoder's changes to a solver draft (an extension, off by
default) and self-verification (§3.3), each constrained to the draft's own objects.

| stage | replies with | value | constraint (``rt.ask``) |
|---|---|---|---|
| ``arm_draft`` | ``{"add": [ids], "drop": [ids]}`` | ``{"add", "drop"}`` | :func:`changes_schema`: ids of the draft's search objects |
| ``arm_verify`` | ``{"objects": [ids], "reasoning"}`` | ``{"objects", "reasoning"}`` | :func:`selection_schema`: ids of the draft's objects |
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from langchain_core.prompts import ChatPromptTemplate

from atomgraph.errors import ParseError
from atomgraph.prompts.arm.parsing import NONE, clean, json_value, unique
from atomgraph.prompts.constraints import JsonSchema
from atomgraph.prompts.stage import Stage, text_parser


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


# --- draft: objects to add from the draft's search objects, objects to drop ----------------------

_DRAFT = ChatPromptTemplate.from_messages([
    ("system",
     "You are assembling the documents and tables needed to answer a question. A solver proposed a "
     "draft: a set of objects and how they connect. Other candidate objects are listed by id and title. "
     "If an object the question needs is missing, add it from the candidates; if a draft object is "
     "useless, drop it. Change at most {max_changes} objects, or none. Reply with a JSON object "
     '{{"add": [ids], "drop": [ids]}} and nothing else.'),
    ("human", "Question: {question}\nKeywords: {keywords}\n\nDraft:\n{draft}\n\nOther candidates:\n{others}\n\nChanges:"),
])


def changes_schema(pool: Sequence[str]) -> JsonSchema:
    return JsonSchema(ids_schema(pool, ["add", "drop"]), "draft_changes")


def parse_changes(text: str) -> dict[str, list[str]]:
    """``{"add": [...], "drop": [...]}`` from JSON, or ``ADD: a, b`` / ``DROP: c`` lines;
    "no changes" gives both empty."""
    text = (text or "").strip()
    if not text:
        raise ParseError("the model returned no changes (empty reply)")
    value = json_value(text)
    if isinstance(value, dict) and ("add" in value or "drop" in value):
        out = {}
        for key in ("add", "drop"):
            v = value.get(key) or []
            if isinstance(v, str):
                v = [v]
            if not isinstance(v, list):
                raise ParseError(f"field {key!r} of the changes is not a list")
            out[key] = unique(x for x in v if isinstance(x, (str, int)))
        return out
    out = {"add": [], "drop": []}
    found = False
    for line in text.splitlines():
        m = re.match(r"^\s*(add|drop|remove)\s*[:：]\s*(.*)$", line, re.I)
        if m:
            found = True
            key = "add" if m.group(1).lower() == "add" else "drop"
            rest = m.group(2).strip()
            if not NONE.match(rest):
                out[key] += [x for x in unique(rest.split(",")) if x not in out[key]]
    if found or NONE.match(text):
        return out
    raise ParseError(f"no ADD/DROP changes found in the reply: {text[:120]!r}")


DRAFT = Stage("arm_draft", "decoder", _DRAFT, text_parser(parse_changes, "changes"), max_tokens=200,
              render=render_draft_inputs)

# --- verify: the objects of one draft that together answer the question ------------------------

# One demonstration, a development question of HotpotQA (the ATOMR authors' dev_100 split), objects in
# our own words in the draft's own format: a base model otherwise copies a placeholder for the
# reasoning and keeps nothing.
VERIFY_DEMO = (
    "Question: Which has more members, Dada or Alt-J?\nKeywords: members, Dada, Alt-J\n\nDraft:\n"
    "Object id: d1\nDocument name: Dada (band)\nDocument content: Dada is an American rock trio formed in "
    "Los Angeles in 1992 by Joie Calio, Michael Gurley and Phil Leavitt.\n\n"
    "Object id: d2\nDocument name: Dada\nDocument content: Dada was an art movement of the European "
    "avant-garde that began in Zurich in 1916.\n\n"
    "Object id: d3\nDocument name: Alt-J\nDocument content: Alt-J is an English indie rock band formed in "
    "Leeds in 2007; its four founding members met at university.\n\n"
    "Connections:\n- Dada (band) and Dada are related\n\nSelection: "
    '{"objects": ["d1", "d3"], "reasoning": "d1 gives the members of the band Dada and d3 those of Alt-J; '
    'd2 is an art movement, not the band."}'
)

_VERIFY = ChatPromptTemplate.from_messages([
    ("system",
     "You check a draft set of documents and tables against a question. Keep the objects whose content "
     "covers some part of the question (see its keywords) or connects objects that do; leave out the "
     "rest. Use only ids that appear in the draft. Reply with a JSON object: the ids kept under "
     '"objects", then in "reasoning" one or two sentences saying why.\n\n'
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
