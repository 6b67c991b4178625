"""Parse one leaf value of a planner tree: an operator call, a ``[DR]``/``[END]`` mark, or prose.

Operator calls are read with a small tolerant scanner rather than a regex, because real
planner output has nested and mismatched quotes (``"Poznań "56"``), escaped quotes,
single quotes, unquoted arguments, ``"text " + [1]`` concatenations, list references
(``[5, 7]``), operator calls nested as arguments and stray characters after the call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from atomgraph.state.tree import OperatorCall

OPERATORS = {"search": "Search", "relate": "Relate", "filter": "Filter"}
ARITY = {"Search": (1, 2), "Relate": (2, 2), "Filter": (2, 2)}
CALL_RE = re.compile(r"\s*(search|relate|filter)\s*\(", re.I)
NESTED_CALL_RE = re.compile(r"[A-Za-z_]\w*\s*\(")
DR_TOKEN_RE = re.compile(r"\[\s*(?:END|DR)\s*\]", re.I)
DR_ONLY_RE = re.compile(r"\s*\[?\s*(?:END|DR)\s*\]?\s*\.?\s*", re.I)
LIST_REF_RE = re.compile(r"\[\s*(\d+(?:\.\d+)*)((?:\s*,\s*\d+(?:\.\d+)*)+)\s*\]")


@dataclass
class Leaf:
    kind: str  # "operator" | "direct" | "open"
    operator: OperatorCall | None = None
    note: str = ""  # prose the planner wrote instead of (or around) a mark
    repairs: list[str] = field(default_factory=list)


class _Scanner:
    def __init__(self, text: str, pos: int):
        self.s, self.i = text, pos
        self.notes: list[str] = []

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def quoted(self) -> str:
        q, out = self.s[self.i], []
        self.i += 1
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "\\" and self.i + 1 < len(self.s):
                out.append(self.s[self.i + 1])
                self.i += 2
                continue
            if c == q:
                rest = self.s[self.i + 1:].lstrip()
                # a quote closes the string only where an argument may end; otherwise it is
                # a quote nested inside the argument ("Hamilton Evans "Tony" James")
                if not rest or rest[0] in ",)+":
                    self.i += 1
                    return "".join(out)
            out.append(c)
            self.i += 1
        self.notes.append("closed an unterminated quoted argument")
        text = "".join(out).rstrip()
        return text[:-1].rstrip() if text.endswith(")") else text

    def balanced(self, open_: str, close: str) -> str:
        """Text from an opening bracket to its match, quotes respected."""
        start, depth, quote = self.i, 0, ""
        while self.i < len(self.s):
            c = self.s[self.i]
            if quote:
                if c == "\\":
                    self.i += 1
                elif c == quote:
                    quote = ""
            elif c == '"':
                quote = c
            elif c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return self.s[start:self.i]
            self.i += 1
        self.notes.append(f"closed an unterminated '{open_}'")
        return self.s[start:] + close

    def bare(self) -> str:
        start, depth = self.i, 0
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    break
                depth -= 1
            elif c in ",+" and depth == 0:
                break
            self.i += 1
        return self.s[start:self.i].strip()

    def term(self) -> str:
        c = self.peek()
        if c in "\"'":
            return self.quoted()
        if c == "[":
            return self.balanced("[", "]")
        m = NESTED_CALL_RE.match(self.s, self.i)
        if m:
            self.i = m.end() - 1
            call = self.s[m.start():m.end() - 1].strip() + self.balanced("(", ")")
            self.notes.append(f"kept the nested call {call} as argument text")
            return call
        value = self.bare()
        if value:
            self.notes.append(f"read the unquoted argument {value!r}")
        return value

    def arguments(self) -> tuple[list[str], bool]:
        """Arguments up to the call's closing parenthesis; the flag says it was found."""
        args: list[str] = []
        while True:
            self.ws()
            if self.peek() == ")":
                self.i += 1
                return args, True
            if not self.peek():
                return args, False
            parts = [self.term()]
            self.ws()
            while self.peek() == "+":
                self.i += 1
                self.ws()
                parts.append(self.term())
                self.ws()
            if len(parts) > 1:
                self.notes.append(f"joined the '+' concatenation into {''.join(parts)!r}")
            args.append("".join(parts))
            self.ws()
            if self.peek() == ",":
                self.i += 1
            elif self.peek() not in ")":
                # something odd between arguments: keep it as part of a bare argument
                extra = self.bare()
                if extra:
                    args[-1] = f"{args[-1]} {extra}".strip()
                    self.notes.append(f"kept the stray text {extra!r} in an argument")
                if self.peek() == ",":
                    self.i += 1


def _normalise_list_refs(arg: str, notes: list[str]) -> str:
    def repl(m: re.Match) -> str:
        ids = [m.group(1), *re.findall(r"\d+(?:\.\d+)*", m.group(2))]
        return ", ".join(f"[{i}]" for i in ids)

    new = LIST_REF_RE.sub(repl, arg)
    if new != arg:
        notes.append(f"wrote the list reference {arg!r} as {new!r}")
    return new


def parse_operator(value: str) -> tuple[OperatorCall | None, list[str]]:
    """The operator call at the start of ``value``, or None; plus notes on what was repaired.

    Raises ``ValueError`` for a value holding two operator calls (ambiguous)."""
    m = CALL_RE.match(value)
    if not m:
        return None, []
    name = OPERATORS[m.group(1).lower()]
    sc = _Scanner(value, m.end())
    notes = sc.notes
    if m.group(1) != name:
        notes.append(f"wrote the operator name {m.group(1)!r} as {name}")
    args, closed = sc.arguments()
    if not closed:
        notes.append(f"closed the unterminated {name}( call")
    args = [_normalise_list_refs(a.strip(), notes) for a in args]
    if "" in args:
        notes.append(f"dropped {args.count('')} empty argument(s)")
        args = [a for a in args if a]
    trailing = value[sc.i:].strip()
    if trailing:
        if CALL_RE.search(trailing):
            raise ValueError(f"holds more than one operator call: {value.strip()!r}")
        notes.append(f"ignored {trailing!r} after the {name}(...) call")
    lo, hi = ARITY[name]
    if args and not lo <= len(args) <= hi:
        want = f"{lo}" if lo == hi else f"{lo}-{hi}"
        notes.append(f"{name} takes {want} arguments but has {len(args)}; kept them as written")
    return OperatorCall(name=name, args=args, raw=value.strip()), notes


def parse_leaf(value: str | None) -> Leaf:
    """Classify a leaf value. Notes in ``Leaf.repairs`` are not yet prefixed with the node."""
    text = (value or "").strip()
    if not text:
        return Leaf("open", repairs=["has no operator or mark; treated as an open question"])
    if DR_ONLY_RE.fullmatch(text):
        return Leaf("direct")
    op, notes = parse_operator(text)  # ValueError: two calls in one leaf
    if op is not None:
        if not op.args:
            return Leaf("open", note=text, repairs=[f"{op.name}() has no arguments; treated as an open question"])
        return Leaf("operator", operator=op, repairs=notes)
    stripped = DR_TOKEN_RE.sub("", text).strip()
    if stripped != text and (DR_TOKEN_RE.match(text) or re.search(DR_TOKEN_RE.pattern + r"\W*$", text, re.I)):
        return Leaf("direct", note=stripped, repairs=["prose around the [END]/[DR] mark kept as a note"])
    return Leaf("open", note=text, repairs=["leaf has prose instead of an operator; treated as an open question"])
