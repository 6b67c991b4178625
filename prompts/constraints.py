"""Constraints on what a model may write, and how each backend is asked for them.

A stage call can carry one constraint (``rt.ask(stage, inputs, config, constraint=...)``):

- :class:`Choice` — the reply is exactly one of a list of strings;
- :class:`JsonSchema` — the reply is a JSON value valid under a schema;
- :class:`Grammar` — the reply is a sentence of a GBNF grammar (llama.cpp's notation);
- :class:`TokenTrie` — the reply is a delimited list of strings from a token trie, found by
  constrained beam search (ARM's information alignment, §3.2.1: in-process models only).

A constraint is a plain value; :func:`constrain` turns it into the request form of the model's
backend (:func:`backend`):

| backend | Choice | JsonSchema | Grammar | TokenTrie |
|---|---|---|---|---|
| ``local`` (in-process llama.cpp) | ``choices=`` | ``json_schema=`` | ``grammar=`` | ``ngram_trie=`` beam search |
| ``vllm`` (OpenAI-compatible) | ``structured_outputs.choice`` | ``structured_outputs.json`` | ``structured_outputs.grammar`` | — |
| ``llamacpp`` server | ``grammar`` (alternatives) | ``response_format`` ``json_object`` + ``schema`` | ``grammar`` | — |
| ``openai`` (api.openai.com) | JSON-schema ``enum`` (≤ 1,000 values) | ``response_format`` strict | — | — |
| anything else | — | — | — | — |

Where a backend offers no form ("—"), the call runs unconstrained and says so: the
:class:`Applied` value that comes back records how the reply was constrained, or why not,
and the call's record carries it, so an unconstrained reply is never taken for a constrained one.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from langchain_core.runnables import Runnable, RunnableBinding

from atomgraph.backends import json_object_format
from atomgraph.errors import ConfigError

log = logging.getLogger(__name__)

OPENAI_MAX_ENUM = 1000  # OpenAI structured outputs accept at most this many enum values
OPENAI_ENUM_CHARS = 15000  # ... and at most this many characters in all when over 250 values


@dataclass(frozen=True)
class Choice:
    """The reply is exactly one of ``options``. Where a backend can only constrain JSON (OpenAI),
    the reply is ``{key: option}`` and :func:`unwrap_reply` gives the option back."""

    options: tuple[str, ...]
    key: str = "value"

    def __post_init__(self):
        object.__setattr__(self, "options", tuple(str(o) for o in self.options))
        if not self.options:
            raise ConfigError("a Choice constraint needs at least one option")


@dataclass(frozen=True)
class JsonSchema:
    """The reply is a JSON value valid under ``schema`` (named ``name`` where a backend wants a name)."""

    schema: dict = field(hash=False)
    name: str = "reply"


@dataclass(frozen=True)
class Grammar:
    """The reply is a sentence of the GBNF grammar ``gbnf`` (start symbol ``root``).
    ``close_reserve`` (in-process model only): a JSON-shaped grammar is steered to close within
    the last ``close_reserve`` tokens of the output cap, so that a capped reply still parses."""

    gbnf: str
    close_reserve: int = 0


@dataclass(frozen=True)
class TokenTrie:
    """The reply is ``open`` item (``sep`` item)* ``close``, each item a string of ``trie``,
    chosen by beam search of width ``beam_width``; the ``n_best`` best lists come back with
    their scores (mean logit per token, ARM §3.2.1)."""

    trie: Any = field(hash=False)
    beam_width: int = 4
    n_best: int = 1
    open: str = "("
    close: str = ")"
    sep: str = ", "


Constraint = Choice | JsonSchema | Grammar | TokenTrie


@dataclass(frozen=True)
class Applied:
    """How a call's reply was constrained: ``form`` (e.g. ``"vllm structured_outputs.choice"``)
    or ``None`` when it ran unconstrained, with ``reason``."""

    backend: str
    form: str | None
    reason: str = ""

    @property
    def constrained(self) -> bool:
        return self.form is not None

    def describe(self) -> str:
        return self.form if self.form else f"unconstrained ({self.reason})"


# Which backend serves a model (and the server probe, the one network call) live in the foundation:
from atomgraph.backends import (  # noqa: E402,F401  (re-exported: the constraint API names them too)
    BACKENDS, Backend, accepts_logprobs, backend, base_url, is_local, is_openai_client, probe_server, unwrap)

# --- request forms ---------------------------------------------------------------------------

def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal: quotes, backslashes and control characters escaped."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def choice_grammar(options: Sequence[str]) -> str:
    """A GBNF grammar whose sentences are exactly ``options``."""
    return "root ::= " + " | ".join(gbnf_literal(o) for o in options)


def _rule(i: int) -> str:
    return f"t{i}"  # a letter and digits: never a keyword of any grammar engine (xgrammar reads "true" as one)


def list_grammar(strings: Iterable[str], *, open: str = "(", close: str = ")", sep: str = ", ") -> Grammar:
    """A GBNF grammar whose sentences are ``open s (sep s)* close``, each ``s`` one of ``strings``
    (the served counterpart of :class:`TokenTrie`).

    The strings are prefix-factored: their character trie with every chain of single children
    folded into one literal (a radix tree), one rule per branching node. No alternation is
    wider than the strings' alphabet, and the grammar grows with the trie's nodes instead of
    repeating every shared prefix in a flat alternation. Built from the sorted strings without
    materialising the trie."""
    keys = sorted({s for s in strings if isinstance(s, str) and s})
    if not keys:
        raise ConfigError("a list grammar needs at least one string")
    rules: list[str] = [""]
    stack = [(0, len(keys), 0, 0)]  # a node: keys[lo:hi] share their first `depth` characters
    while stack:
        lo, hi, depth, at = stack.pop()
        if len(keys[lo]) == depth:  # the node's own string (sorted first): the rule's caller makes it optional
            lo += 1
        alts = []
        while lo < hi:
            first = keys[lo][depth]
            end = lo + 1
            while end < hi and keys[end][depth] == first:
                end += 1
            common = len(os.path.commonprefix([keys[lo], keys[end - 1]]))
            label = gbnf_literal(keys[lo][depth:common])
            if end - lo == 1:  # a leaf: the rest of one string
                alts.append(label)
            else:
                rules.append("")
                stack.append((lo, end, common, len(rules) - 1))
                alts.append(f"{label} {_rule(len(rules) - 1)}" + ("?" if len(keys[lo]) == common else ""))
            lo = end
        rules[at] = f"{_rule(at)} ::= " + " | ".join(alts)
    item = _rule(0)
    head = f"root ::= {gbnf_literal(open)} {item} ({gbnf_literal(sep)} {item})* {gbnf_literal(close)}"
    return Grammar("\n".join([head, *rules]) + "\n")


def enum_schema(options: Sequence[str], key: str = "value") -> dict:
    """A JSON schema ``{key: one of options}`` (OpenAI structured outputs have no bare enum)."""
    return {"type": "object", "properties": {key: {"type": "string", "enum": list(options)}},
            "required": [key], "additionalProperties": False}


def fit_enum(options: Sequence[str], *, max_values: int = OPENAI_MAX_ENUM) -> list[str]:
    """The longest prefix of ``options`` (best first) that OpenAI accepts as an enum: at most
    ``max_values`` (≤ 1,000) values, and at most 15,000 characters in all when over 250 values."""
    out: list[str] = []
    total = 0
    for o in options:
        if len(out) >= min(max_values, OPENAI_MAX_ENUM) or (len(out) >= 250 and total + len(o) > OPENAI_ENUM_CHARS):
            break
        out.append(o)
        total += len(o)
    return out


def supports(kind: str, constraint: type | Constraint) -> bool:
    """Whether backend ``kind`` can enforce constraints of this type."""
    cls = constraint if isinstance(constraint, type) else type(constraint)
    table = {
        "local": (Choice, JsonSchema, Grammar, TokenTrie),
        "vllm": (Choice, JsonSchema, Grammar),
        "llamacpp": (Choice, JsonSchema, Grammar),
        "openai": (Choice, JsonSchema),
        "other": (),
    }
    return cls in table.get(kind, ())


def request_form(kind: str, constraint: Constraint) -> tuple[dict[str, Any], str | None]:
    """The keyword arguments that ask backend ``kind`` for ``constraint``, and the form's name
    (``({}, None)`` where the backend offers none)."""
    if not supports(kind, constraint):
        return {}, None
    if kind == "local":
        if isinstance(constraint, Choice):
            return {"choices": list(constraint.options)}, "local choices"
        if isinstance(constraint, JsonSchema):
            return {"json_schema": constraint.schema}, "local JSON-schema grammar"
        if isinstance(constraint, Grammar):
            extra = {"close_reserve": constraint.close_reserve} if constraint.close_reserve else {}
            return {"grammar": constraint.gbnf, **extra}, "local GBNF grammar"
        return ({"ngram_trie": constraint.trie, "beam_width": constraint.beam_width, "n_best": constraint.n_best,
                 "trie_open": constraint.open, "trie_close": constraint.close, "trie_sep": constraint.sep},
                "local trie beam search")
    if kind == "vllm":
        if isinstance(constraint, Choice):
            return {"extra_body": {"structured_outputs": {"choice": list(constraint.options)}}}, \
                "vllm structured_outputs.choice"
        if isinstance(constraint, JsonSchema):
            return {"extra_body": {"structured_outputs": {"json": constraint.schema}}}, "vllm structured_outputs.json"
        return {"extra_body": {"structured_outputs": {"grammar": constraint.gbnf}}}, "vllm structured_outputs.grammar"
    if kind == "llamacpp":
        if isinstance(constraint, Choice):
            return {"extra_body": {"grammar": choice_grammar(constraint.options)}}, "llama.cpp grammar"
        if isinstance(constraint, JsonSchema):
            # the form llama.cpp's server and llama-cpp-python's (``llama_cpp.server``) both take
            return {"extra_body": {"response_format": json_object_format(constraint.schema)}}, \
                "llama.cpp response_format json_object schema"
        return {"extra_body": {"grammar": constraint.gbnf}}, "llama.cpp grammar"
    # openai
    if isinstance(constraint, Choice):
        if len(fit_enum(constraint.options)) < len(constraint.options):
            return {}, None
        schema, name = enum_schema(constraint.options, constraint.key), "choice"
    else:
        schema, name = constraint.schema, constraint.name
    fmt = {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}
    return {"response_format": fmt}, "openai json_schema" + (" enum" if isinstance(constraint, Choice) else "")


def bound_kwargs(model: Any) -> dict[str, Any]:
    """Every keyword argument bound on ``model``'s ``.bind`` layers (outer layers win)."""
    layers = []
    while isinstance(model, RunnableBinding):
        layers.append(dict(model.kwargs or {}))
        model = model.bound
    out: dict[str, Any] = {}
    for kw in reversed(layers):
        out.update(kw)
    return out


def constrain(model: Runnable, constraint: Constraint | None, kind: str, reason: str = "") -> tuple[Runnable, Applied]:
    """``model`` with ``constraint``'s request form for backend ``kind`` bound (merged with what
    is bound already: ``extra_body`` dictionaries are merged, not replaced), and how it applies."""
    if constraint is None:
        return model, Applied(kind, None, "no constraint asked")
    kwargs, form = request_form(kind, constraint)
    if form is None:
        why = reason or f"{kind} backend"
        if isinstance(constraint, Choice) and kind == "openai":
            why = (f"{len(constraint.options)} options exceed OpenAI's enum limits ({OPENAI_MAX_ENUM} values, "
                   f"{OPENAI_ENUM_CHARS} characters over 250 values)")
        return model, Applied(kind, None, f"{type(constraint).__name__} not supported: {why}")
    merged = bound_kwargs(model)
    base = unwrap(model)
    if "extra_body" in kwargs:
        extra = dict(getattr(base, "extra_body", None) or {})
        extra.update(merged.get("extra_body") or {})
        extra.update(kwargs.pop("extra_body"))
        kwargs["extra_body"] = extra
    return base.bind(**{**merged, **kwargs}), Applied(kind, form)


def unwrap_reply(constraint: Constraint | None, applied: Applied, text: str) -> str:
    """The reply's text as the stage expects it: an OpenAI enum reply ``{"value": x}`` becomes ``x``."""
    if isinstance(constraint, Choice) and applied.form and applied.form.startswith("openai"):
        try:
            value = json.loads(text).get(constraint.key)
        except (ValueError, AttributeError, RecursionError):
            return text
        return value if isinstance(value, str) else text
    return text
