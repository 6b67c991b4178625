"""Readable values and comparisons for Wikidata facts (dates, quantities, items, text)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from atomgraph.tools.sparql_queries import WD

XSD = "http://www.w3.org/2001/XMLSchema#"
_NUMERIC = {XSD + t for t in ("decimal", "integer", "double", "float", "int", "long", "nonNegativeInteger")}
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_TIME = re.compile(r"^([+-]?\d{1,16})-(\d{2})-(\d{2})")
UNITLESS = WD + "Q199"

OPERATORS = ("=", "!=", "<", "<=", ">", ">=", "contains")


@dataclass
class Fact:
    """One KG fact: ``(head, relation, tail)`` with ids and the typed value."""

    head_id: str
    head_label: str
    relation_id: str
    relation_label: str
    tail_label: str
    tail_id: str | None = None  # QID when the tail is an item
    datatype: str = "item"  # item | time | quantity | string | url | ...
    value: Any = None  # raw: QID, ISO time, number, text
    direction: str = "forward"  # reverse: tail --relation--> head
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def triple(self) -> str:
        if self.direction == "reverse":
            return f"({self.tail_label}, {self.relation_label}, {self.head_label})"
        return f"({self.head_label}, {self.relation_label}, {self.tail_label})"


# --- formatting --------------------------------------------------------------------------
def parse_time(text: str) -> tuple[int, int, int] | None:
    m = _TIME.match(text or "")
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def format_time(text: str, precision: int | None = None) -> str:
    """``1961-08-04T00:00:00Z`` → ``4 August 1961`` (precision 9: year, 10: month, 11: day)."""
    parts = parse_time(text)
    if not parts:
        return text
    y, m, d = parts
    year = f"{-y + 1} BC" if y <= 0 else str(y)
    if precision is not None and precision <= 9 or m == 0:
        return year
    if precision == 10 or d == 0:
        return f"{_MONTHS[m - 1]} {year}" if 1 <= m <= 12 else year
    return f"{d} {_MONTHS[m - 1]} {year}" if 1 <= m <= 12 else year


def format_number(text: str) -> str:
    t = (text or "").strip().lstrip("+")
    try:
        n = float(t)
    except ValueError:
        return text
    if n.is_integer() and "e" not in t.lower() and abs(n) < 1e15:
        return str(int(n))
    return t


def format_quantity(amount: str, unit_iri: str | None, unit_label: str | None) -> str:
    number = format_number(amount)
    if not unit_iri or unit_iri == UNITLESS:
        return number
    unit = unit_label or unit_iri.rsplit("/", 1)[-1]
    return f"{number} {unit}"


def qid_from_iri(iri: str) -> str | None:
    if iri.startswith(WD):
        local = iri[len(WD):]
        if re.fullmatch(r"[QP]\d+", local):
            return local
    return None


def literal_kind(datatype: str | None) -> str:
    if not datatype:
        return "string"
    if datatype == XSD + "dateTime" or datatype == XSD + "date":
        return "time"
    if datatype in _NUMERIC:
        return "quantity"
    return "string"


# --- comparisons for Filter ----------------------------------------------------------------
_YEAR = re.compile(r"^\s*(\d{1,4})\s*$")
_ISO = re.compile(r"^\s*(\d{1,4})-(\d{1,2})(?:-(\d{1,2}))?")


def _parse_date_value(text: str) -> tuple[tuple[int, ...], int] | None:
    """A date the caller typed: '1955', '1955-10', '1955-10-28', '28 October 1955', 'October 1955'."""
    t = text.strip()
    if m := _YEAR.match(t):
        return (int(m.group(1)),), 1
    if m := _ISO.match(t):
        if m.group(3):
            return (int(m.group(1)), int(m.group(2)), int(m.group(3))), 3
        return (int(m.group(1)), int(m.group(2))), 2
    words = t.replace(",", " ").split()
    months = {name.lower(): i + 1 for i, name in enumerate(_MONTHS)}
    months.update({name[:3].lower(): i + 1 for i, name in enumerate(_MONTHS)})
    month = next((months[w.lower()] for w in words if w.lower() in months), None)
    nums = [int(w) for w in words if w.isdigit()]
    years = [n for n in nums if n > 31]
    days = [n for n in nums if n <= 31]
    if month and years:
        if days:
            return (years[0], month, days[0]), 3
        return (years[0], month), 2
    return None


def _number(text: Any) -> float | None:
    try:
        return float(str(text).strip().lstrip("+").replace(",", ""))
    except ValueError:
        return None


def _cmp(a, b, op: str) -> bool:
    return {
        "=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b,
    }[op]


def fact_satisfies(fact: Fact, op: str, value: str) -> bool:
    """Whether ``fact``'s tail satisfies ``<tail> op value`` (dates at the value's precision,
    numbers numerically, items and text by label, case-insensitively)."""
    if op not in OPERATORS:
        raise ValueError(f"unknown filter operator {op!r}; use one of {', '.join(OPERATORS)}")
    value = str(value)
    if fact.datatype == "time":
        mine = parse_time(str(fact.value))
        theirs = _parse_date_value(value)
        if mine and theirs:
            wanted, n = theirs
            if op == "contains":
                return mine[:n] == wanted
            return _cmp(mine[:n], wanted, op)
    if fact.datatype == "quantity":
        a, b = _number(fact.value), _number(value.split()[0] if value.split() else value)
        if a is not None and b is not None and op != "contains":
            return _cmp(a, b, op)
    label = fact.tail_label.casefold()
    wanted = value.strip().casefold()
    if op == "contains":
        return wanted in label
    if op in ("=", "!="):
        same = label == wanted or (fact.tail_id is not None and fact.tail_id.casefold() == wanted)
        return same if op == "=" else not same
    return False  # ordering text is not meaningful


# --- Filter conditions written as text ------------------------------------------------------
@dataclass(frozen=True)
class Condition:
    """A Filter condition read as ``<attribute> <op> <value>`` ("born before 1960" →
    attribute "born", op "<", value "1960"); op and value are None where the text holds no
    comparison ("was a president")."""

    text: str
    attribute: str
    op: str | None = None
    value: str | None = None


# comparison words → operator (the longest phrase wins: "no more than" over "more than")
_COMPARATORS = {
    ">=": ["at least", "no less than", "not before", "not earlier than", "no earlier than", ">="],
    "<=": ["at most", "no more than", "not after", "not later than", "no later than", "<="],
    ">": ["more than", "greater than", "larger than", "higher than", "taller than", "older than", "over", "above",
          "exceeding", "after", "later than", "since", ">"],
    "<": ["less than", "fewer than", "smaller than", "lower than", "shorter than", "under", "below", "before",
          "earlier than", "prior to", "<"],
    "!=": ["not in", "not on", "is not", "was not", "other than", "!="],
    "=": ["in", "on", "is", "was", "are", "were", "equals", "equal to", "as", "="],
}.items()
_NEGATED = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
_SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_COMPARATOR_RE = re.compile(
    r"\s(" + "|".join(sorted((re.escape(w) for _, ws in _COMPARATORS for w in ws), key=len, reverse=True)) + r")\s",
    re.I,
)
_OP_OF = {w.lower(): op for op, ws in _COMPARATORS for w in ws}
_LEADING = re.compile(
    r"^(?:(?:who|whose|which|that|is|was|are|were|has|had|have|the|a|an|its|their|his|her)\s+)+", re.I
)
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.I)


def parse_condition(text: str) -> Condition:
    """Read a Filter condition: the attribute phrase before the first comparison word, the
    value after it; without one, "X of Y" reads as X = Y. A condition with neither ("is a
    president") is all attribute, with no op or value."""
    t = " ".join((text or "").split()).strip(" .?!")
    body = _LEADING.sub("", t)
    m = _COMPARATOR_RE.search(f" {body} ")
    if m and m.start() > 0:
        attribute = body[: m.start()].strip()
        value = _ARTICLE.sub("", body[m.end() - 1 :].strip()).strip(" '\"")
        op = _OP_OF[m.group(1).lower()]
        if attribute.lower().startswith("not "):  # "not born in 1955"
            attribute, op = attribute[4:].strip(), _NEGATED[op]
        if attribute and value:
            return Condition(t, attribute, op, value)
    attribute, of, value = body.rpartition(" of ")  # "citizen of Spain"
    if of and attribute.strip() and value.strip():
        return Condition(t, attribute.strip(), "=", _ARTICLE.sub("", value.strip()).strip(" '\""))
    return Condition(t, body or t)


def value_kind(value: str) -> str:
    """What a condition's value is: 'time' (a year or date), 'quantity' (a number) or 'text'."""
    if _parse_date_value(value) is not None:
        return "time"
    first = value.split()[0] if value.split() else value
    return "quantity" if _number(first) is not None else "text"


def condition_met(fact: Fact, cond: Condition) -> bool | None:
    """Whether ``fact`` meets ``cond``; None where the condition has no comparison or its value
    is not of the fact's kind (a year against a place)."""
    if cond.op is None or cond.value is None:
        return None
    kind = value_kind(cond.value)
    if kind == "time" and fact.datatype == "time":
        return fact_satisfies(fact, cond.op, cond.value)
    if kind == "quantity" and fact.datatype == "quantity":
        number, *rest = cond.value.split()
        scale = _SCALE.get(rest[0].lower(), 1.0) if rest else 1.0
        return fact_satisfies(fact, cond.op, str(_number(number) * scale))
    if kind == "text" and fact.datatype not in ("time", "quantity"):
        label, wanted = fact.tail_label.casefold(), cond.value.casefold()
        same = wanted in label or label in wanted or (fact.tail_id or "").casefold() == wanted
        return {"=": same, "!=": not same}.get(cond.op)
    return None
