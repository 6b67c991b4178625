"""The Atomic Reasoning Tree planner prompt (ATOMR §3.2, KDD'25 Figure 7), in our words.

The planner writes one JSON object: the root question maps to its numbered sub-questions;
each numbered question maps to its own sub-questions, to one atomic operator call
(``Search`` / ``Relate`` / ``Filter``), or to ``"[DR]"`` (direct reasoning over the answers of
the earlier siblings it references). ``prompts/atomr/tree_parser.py`` reads it.
"""

from __future__ import annotations

import json

from atomgraph.prompts.atomr.packs import GENERAL_PLAN
from atomgraph.prompts.atomr.templating import chat_prompt

PLAN_MARKER = "Task: plan an atomic reasoning tree"

# The general pack's planner demonstrations (every pack: ``prompts/atomr/packs/``).
PLAN_EXAMPLES = GENERAL_PLAN

_INSTRUCTIONS = f"""{PLAN_MARKER}.

You break a complex question into an Atomic Reasoning Tree. Three atomic functions can fetch and manipulate knowledge from an encyclopedia, a web search engine or a knowledge graph:

- Search(name, [descriptor]) returns a list of entities. It finds which entity a name means; the optional descriptor (a type or a few words of description) tells apart entities that share the name. Without a descriptor the best-known entity is meant.
- Relate(head, relation) or Relate(head, tail) returns a list of entities or values. It makes one hop from an entity: the entities linked to it by a relation (e.g. "director"), the value of one of its attributes (e.g. "date of birth"), or, given two entities, the relation between them.
- Filter([i], condition) returns a list of entities: those in the answer of question [i] that satisfy a factual condition.

How to build the tree:
1. The root is the question exactly as given, without a number.
2. Split a question into the sub-questions needed to answer it, and split those again, until every leaf question is atomic: it can be answered either
   (a) by exactly one function call: the question's value is then that call, written as a string, e.g. "Relate([3], \\"director\\")"; or
   (b) only by reasoning over the answers of earlier sibling questions (comparing, counting, intersecting, judging yes or no, calculating): its value is then "[DR]".
   A question that is not atomic has as value the list of its sub-questions.
3. Number the sub-questions "N. question" in breadth-first order: the root's sub-questions are 1, 2, 3, ..., then come the sub-questions of 1, then those of 2, and so on. Every number is used once.
4. Write [i] wherever a question or a function argument needs the answer of question i. A question may only use the answers of earlier siblings of itself or of one of its ancestors.
5. Function arguments are double-quoted strings or [i] references; the first argument of Filter is always a reference.
6. If the question itself can be answered by one function call, the root's value is that call.

Reply with the JSON object only: the root question first, then every numbered question as a key. No explanation, no markdown.{{rules}}

Examples.

{{examples}}"""


PLAN_SYSTEM = _INSTRUCTIONS

PLAN_PROMPT = chat_prompt(PLAN_SYSTEM, "Question: {question}\nDecomposition Tree:")


# --- plans a small model cannot break -----------------------------------------------------------
# Under a grammar (in-process llama.cpp, vLLM, a llama.cpp server) the planner writes the flat JSON
# of its demonstrations, and the grammar starts with the question asked as the root key: the
# plan has a root, the root is this question (a copied demonstration cannot be the plan), and
# every leaf is one operator call in ATOMR's syntax or "[DR]". Numbered questions carry labels 1 to
# PLAN_MAX_LABEL, and a question numbered k references only [1] to [k-1], in its text and in its
# call: the instructions' rules 3 and 4 (breadth-first numbers; only earlier siblings of the
# question or of its ancestors), so no node can use its own answer. Under a JSON schema (OpenAI
# structured outputs) the same holds through a required ``root`` whose question is a one-value
# enum. A plan near the output cap is steered to close (``PLAN_CLOSE_RESERVE`` tokens).

PLAN_CLOSE_RESERVE = 24

# Rule 3 numbers every question once, so a plan within ``max_nodes`` (40) needs no larger label.
PLAN_MAX_LABEL = 40

_PLAN_GRAMMAR_BODY = r'''
children ::= "[" sub (", " sub){0,5} "]"
tchar ::= [^"\\\x00-\x1f\[\]{}]
root-call ::= "\"" ("Search(" quoted (", " quoted)? ")" | "Relate(" quoted ", " quoted ")") "\""
quoted ::= "\\\"" afirst achar* "\\\""
afirst ::= [^"\\\x00-\x20\[\]{}()]
achar ::= [^"\\\x00-\x1f\[\]{}()]
'''


def _earlier(k: int) -> str:
    """GBNF for the numbers 1 to ``k - 1`` (``k`` ≥ 2)."""
    if k <= 10:
        return f"[1-{k - 1}]"
    tens, units = divmod(k, 10)
    alternatives = ["[1-9]"]
    if tens >= 2:
        alternatives.append(f"[1-{tens - 1}] [0-9]")
    if units >= 1:
        alternatives.append(f'"{tens}" [0-{units - 1}]')
    return " | ".join(alternatives)


def _numbered_rules(max_label: int = PLAN_MAX_LABEL) -> str:
    """The rules of numbered questions: ``sub`` (a question in a list of sub-questions) and
    ``entry`` (a numbered question with its value), through one rule set per label k: its text
    (``text-k``), its references (``ref-k``: [1] to [k-1]) and its call (``call-k``; question 1
    has no earlier answer, so its arguments are quoted names and it has no ``Filter``). Labels
    are matched digit by digit (``sub-d`` / ``entry-d`` for the labels starting with digit d), so
    the grammar holds a few alternatives at a time."""
    rules = []
    for k in range(1, max_label + 1):
        if k == 1:
            rules += ['text-1 ::= tchar+', 'arg-1 ::= quoted',
                      'call-1 ::= "\\"" ("Search(" arg-1 (", " arg-1)? ")" | "Relate(" arg-1 ", " arg-1 ")") "\\""']
        else:
            rules += [f'ref-{k} ::= "[" ({_earlier(k)}) "]"', f'text-{k} ::= (tchar | ref-{k})+',
                      f'arg-{k} ::= ref-{k} | quoted',
                      f'call-{k} ::= "\\"" ("Search(" arg-{k} (", " arg-{k})? ")" | "Relate(" arg-{k} ", " arg-{k} ")"'
                      f' | "Filter(" ref-{k} ", " arg-{k} ")") "\\""']
        rules += [f'q-{k} ::= ". " text-{k} "\\""', f'value-{k} ::= children | call-{k} | "\\"[DR]\\""']
    sub, entry = [], []
    for d in range(1, 10):
        labels = [k for k in [d] + list(range(10 * d, 10 * d + 10)) if k <= max_label]
        if not labels:
            continue
        # each label as the digits after its first, then its question
        rest = [((f'"{str(k)[1:]}" ' if k >= 10 else "") + f"q-{k}", k) for k in labels]
        rules.append(f"sub-{d} ::= " + " | ".join(r for r, _ in rest))
        rules.append(f"entry-{d} ::= " + " | ".join(f'{r} ": " value-{k}' for r, k in rest))
        sub.append(f'"{d}" sub-{d}')
        entry.append(f'"{d}" entry-{d}')
    rules.append('sub ::= "\\"" (' + " | ".join(sub) + ")")
    rules.append('entry ::= "\\"" (' + " | ".join(entry) + ")")
    return "\n".join(rules)


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal (quotes, backslashes and control characters escaped)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


_NUMBERED_RULES = _numbered_rules()


def plan_grammar(question: str) -> str:
    """The GBNF grammar of a plan for ``question``: the planner's flat JSON object (as its
    demonstrations write it, ``json.dumps`` spacing), whose first key is ``question`` itself (JSON-
    escaped), valued by one operator call (on quoted names only: the root has no siblings to
    reference), or by its numbered sub-questions followed by at least
    one numbered question, each valued by sub-questions, one ``Search``/``Relate``/``Filter`` call
    or ``"[DR]"``. Labels run from 1 to :data:`PLAN_MAX_LABEL`; question k's references, in its
    text and its call, are [1] to [k-1]. An argument is a reference or a quoted name that does
    not start with a space. Every string closes before a control character; ``[``, ``]``, ``{``,
    ``}`` appear in a question only as a reference (so a reply near its cap closes on ``"]}``)."""
    key = json.dumps(" ".join(str(question).split()), ensure_ascii=False)
    return (f'root ::= " "? "{{" {gbnf_literal(key)} ": " (root-call | children (", " entry)+) "}}"\n'
            + _PLAN_GRAMMAR_BODY.strip() + "\n" + _NUMBERED_RULES + "\n")


OPERATOR_PATTERN = r'^(Search|Relate|Filter)\(.+\)$|^\[DR\]$'


def plan_schema(question: str) -> dict:
    """A JSON schema of a plan for ``question`` (OpenAI structured outputs: strict, no
    ``minItems``): a required ``root`` node whose question is the one-value enum ``[question]``,
    with its children or one operator call, then the other ``nodes``; leaves match
    :data:`OPERATOR_PATTERN`. :func:`~atomgraph.prompts.atomr.stages.read_plans` reads it."""
    q = " ".join(str(question).split())

    def node(question_schema: dict) -> dict:
        return {"type": "object", "additionalProperties": False,
                "required": ["question", "children", "operator"],
                "properties": {"question": question_schema,
                               "children": {"type": "array", "items": {"type": "string"}},
                               "operator": {"anyOf": [{"type": "string", "pattern": OPERATOR_PATTERN},
                                                      {"type": "null"}]}}}

    return {"type": "object", "additionalProperties": False, "required": ["root", "nodes"],
            "properties": {"root": node({"type": "string", "enum": [q]}),
                           "nodes": {"type": "array", "items": node({"type": "string"})}}}
