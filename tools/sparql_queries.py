"""SPARQL 1.1 query text for the Wikidata source, built safely.

Only standard SPARQL with Wikidata's RDF vocabulary (``wd: wdt: p: psv: wikibase: rdfs:label
skos:altLabel schema:description``), so the same strings run on the public query service and
on any store holding Wikidata-shaped RDF. No WDQS-only extensions (no label service).

Nothing from a question or a model reaches a query unchecked: strings become literals via
:func:`literal` (SPARQL ECHAR escaping), ids must match ``Q\\d+`` / ``P\\d+`` and language
tags ``[a-z]{2,3}(-[A-Za-z0-9]+)*``; anything else raises :class:`QueryInputError`.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from atomgraph.errors import AtomgraphError

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
P = "http://www.wikidata.org/prop/"
PSV = "http://www.wikidata.org/prop/statement/value/"
WIKIBASE = "http://wikiba.se/ontology#"

PREFIXES = f"""PREFIX wd: <{WD}>
PREFIX wdt: <{WDT}>
PREFIX p: <{P}>
PREFIX psv: <{PSV}>
PREFIX wikibase: <{WIKIBASE}>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX skos: <http://www.w3.org/2004/02/skos/core#>
PREFIX schema: <http://schema.org/>
"""

_QID = re.compile(r"Q[1-9]\d{0,11}")
_PID = re.compile(r"P[1-9]\d{0,11}")
_LANG = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]+)*")
_ECHAR = {"\\": "\\\\", '"': '\\"', "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}

MAX_LITERAL_CHARS = 400  # longer "names" are not names; callers skip them


class QueryInputError(AtomgraphError, ValueError):
    """An id, language tag or value that cannot be put into a query."""


# --- checked pieces ----------------------------------------------------------------------
def literal(text: str) -> str:
    """``text`` as a SPARQL string literal: ECHARs escaped, other control characters as \\uXXXX."""
    if not isinstance(text, str):
        raise QueryInputError(f"expected text for a SPARQL literal, got {type(text).__name__}")
    out = []
    for ch in text:
        if ch in _ECHAR:
            out.append(_ECHAR[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def check_lang(lang: str) -> str:
    if not isinstance(lang, str) or not _LANG.fullmatch(lang):
        raise QueryInputError(f"invalid language tag {lang!r}: expected e.g. 'en' or 'pt-br'")
    return lang


def lang_literal(text: str, lang: str) -> str:
    return f"{literal(text)}@{check_lang(lang)}"


def check_qid(qid: str) -> str:
    if not isinstance(qid, str) or not _QID.fullmatch(qid):
        raise QueryInputError(f"invalid Wikidata item id {qid!r}: expected Q followed by digits, e.g. Q76")
    return qid


def check_pid(pid: str) -> str:
    if not isinstance(pid, str) or not _PID.fullmatch(pid):
        raise QueryInputError(f"invalid Wikidata property id {pid!r}: expected P followed by digits, e.g. P40")
    return pid


def as_qid(text: str) -> str | None:
    """``Q76``, ``wd:Q76`` or the entity IRI → ``Q76``; anything else → None."""
    t = (text or "").strip()
    for prefix in (WD, "wd:", "https://www.wikidata.org/wiki/"):
        if t.startswith(prefix):
            t = t[len(prefix):]
    return t if _QID.fullmatch(t) else None


def as_pid(text: str) -> str | None:
    t = (text or "").strip()
    for prefix in (WD, WDT, "wd:", "wdt:", "https://www.wikidata.org/wiki/Property:"):
        if t.startswith(prefix):
            t = t[len(prefix):]
    return t if _PID.fullmatch(t) else None


def _items(qids: Iterable[str]) -> str:
    return " ".join(f"wd:{check_qid(q)}" for q in qids)


def _lang_filter(var: str, lang: str) -> str:
    return f'FILTER(LANGMATCHES(LANG(?{var}), "{check_lang(lang)}"))'


def _limit(n: int) -> int:
    return max(1, min(int(n), 10_000))


def _labels(var: str, lang: str) -> str:
    return (
        f"  OPTIONAL {{ ?{var} rdfs:label ?{var}Label . {_lang_filter(var + 'Label', lang)} }}\n"
        f"  OPTIONAL {{ ?{var} schema:description ?{var}Desc . {_lang_filter(var + 'Desc', lang)} }}\n"
    )


# --- entity lookup -----------------------------------------------------------------------
def entities_by_exact_name(names: Sequence[str], lang: str, limit: int) -> str:
    """Items whose label or alias (in ``lang``) is exactly one of ``names``."""
    values = " ".join(lang_literal(n, lang) for n in names)
    return PREFIXES + f"""SELECT ?e ?name ?kind ?eLabel ?eDesc ?links WHERE {{
  VALUES ?name {{ {values} }}
  {{ ?e rdfs:label ?name . BIND(0 AS ?kind) }} UNION {{ ?e skos:altLabel ?name . BIND(1 AS ?kind) }}
  FILTER(STRSTARTS(STR(?e), "{WD}Q"))
{_labels("e", lang)}  OPTIONAL {{ ?e wikibase:sitelinks ?links }}
}} LIMIT {_limit(limit)}"""


def entities_by_name_scan(needle: str, lang: str, limit: int) -> str:
    """Items whose label or alias contains ``needle`` (lower case), exact first, then prefix, then
    contains. A scan of every label: fine for local stores, too slow for the public service."""
    lit = literal(needle.lower())
    return PREFIXES + f"""SELECT ?e ?name ?kind ?rank ?eLabel ?eDesc ?links WHERE {{
  {{ ?e rdfs:label ?name . BIND(0 AS ?kind) }} UNION {{ ?e skos:altLabel ?name . BIND(1 AS ?kind) }}
  {_lang_filter("name", lang)}
  FILTER(STRSTARTS(STR(?e), "{WD}Q"))
  BIND(LCASE(STR(?name)) AS ?lc)
  FILTER(CONTAINS(?lc, {lit}))
  BIND(IF(?lc = {lit}, 0, IF(STRSTARTS(?lc, {lit}), 1, 2)) AS ?rank)
{_labels("e", lang)}  OPTIONAL {{ ?e wikibase:sitelinks ?links }}
}} ORDER BY ?rank ?kind DESC(?links) LIMIT {_limit(limit)}"""


def entity_details(qids: Sequence[str], lang: str) -> str:
    """Label, description and aliases of known items."""
    return PREFIXES + f"""SELECT ?e ?eLabel ?eDesc ?alias ?links WHERE {{
  VALUES ?e {{ {_items(qids)} }}
{_labels("e", lang)}  OPTIONAL {{ ?e skos:altLabel ?alias . {_lang_filter("alias", lang)} }}
  OPTIONAL {{ ?e wikibase:sitelinks ?links }}
}} LIMIT 500"""


# --- properties --------------------------------------------------------------------------
def properties_by_exact_name(names: Sequence[str], lang: str) -> str:
    values = " ".join(lang_literal(n, lang) for n in names)
    return PREFIXES + f"""SELECT ?p ?name ?kind ?pLabel WHERE {{
  VALUES ?name {{ {values} }}
  {{ ?p rdfs:label ?name . BIND(0 AS ?kind) }} UNION {{ ?p skos:altLabel ?name . BIND(1 AS ?kind) }}
  FILTER(STRSTARTS(STR(?p), "{WD}P"))
  OPTIONAL {{ ?p rdfs:label ?pLabel . {_lang_filter("pLabel", lang)} }}
}} LIMIT 50"""


def properties_by_name_scan(needle: str, lang: str, limit: int = 10) -> str:
    lit = literal(needle.lower())
    return PREFIXES + f"""SELECT ?p ?name ?kind ?rank ?pLabel WHERE {{
  ?p a wikibase:Property .
  {{ ?p rdfs:label ?name . BIND(0 AS ?kind) }} UNION {{ ?p skos:altLabel ?name . BIND(1 AS ?kind) }}
  {_lang_filter("name", lang)}
  BIND(LCASE(STR(?name)) AS ?lc)
  FILTER(CONTAINS(?lc, {lit}))
  BIND(IF(?lc = {lit}, 0, IF(STRSTARTS(?lc, {lit}), 1, 2)) AS ?rank)
  OPTIONAL {{ ?p rdfs:label ?pLabel . {_lang_filter("pLabel", lang)} }}
}} ORDER BY ?rank ?kind STRLEN(?lc) LIMIT {_limit(limit)}"""


# --- facts -------------------------------------------------------------------------------
def _prop_pairs(pids: Sequence[str]) -> str:
    return " ".join(f"(wd:{check_pid(p)} wdt:{p})" for p in pids)


def _value_filter(var: str, lang: str) -> str:
    return f'FILTER(!isLiteral(?{var}) || LANG(?{var}) = "" || LANGMATCHES(LANG(?{var}), "{check_lang(lang)}"))'


def forward_values(heads: Sequence[str], pids: Sequence[str], lang: str, limit: int) -> str:
    """Truthy values ``head --pid--> ?v`` (items with labels, or literals)."""
    return PREFIXES + f"""SELECT ?h ?p ?v ?vLabel ?vDesc WHERE {{
  VALUES ?h {{ {_items(heads)} }}
  VALUES (?p ?wdt) {{ {_prop_pairs(pids)} }}
  ?h ?wdt ?v .
  {_value_filter("v", lang)}
{_labels("v", lang)}}} LIMIT {_limit(limit)}"""


def reverse_values(tails: Sequence[str], pids: Sequence[str], lang: str, limit: int) -> str:
    """Items ``?v --pid--> tail`` (the relation read backwards)."""
    return PREFIXES + f"""SELECT ?h ?p ?v ?vLabel ?vDesc WHERE {{
  VALUES ?h {{ {_items(tails)} }}
  VALUES (?p ?wdt) {{ {_prop_pairs(pids)} }}
  ?v ?wdt ?h .
  FILTER(STRSTARTS(STR(?v), "{WD}Q"))
{_labels("v", lang)}}} LIMIT {_limit(limit)}"""


def statement_values(heads: Sequence[str], pids: Sequence[str] | None, lang: str) -> str:
    """Full values of quantity and time statements (``p:``/``psv:``): amount with unit, time with
    precision. ``pids=None`` means every property of the heads."""
    if pids:
        pairs = " ".join(f"(p:{check_pid(x)} psv:{x})" for x in pids)
        props = f"VALUES (?pp ?psv) {{ {pairs} }}\n  ?h ?pp ?st .\n  ?st ?psv ?node ."
    else:
        props = (
            f'?h ?pp ?st .\n  FILTER(REGEX(STR(?pp), {literal("^" + re.escape(P) + "P[0-9]+$")}))\n'
            f'  ?st ?psv ?node .\n  FILTER(STR(?psv) = CONCAT("{PSV}", STRAFTER(STR(?pp), "{P}")))'
        )
    return PREFIXES + f"""SELECT ?h ?pp ?amount ?unit ?unitLabel ?time ?prec WHERE {{
  VALUES ?h {{ {_items(heads)} }}
  {props}
  FILTER NOT EXISTS {{ ?st wikibase:rank wikibase:DeprecatedRank }}
  {{ ?node wikibase:quantityAmount ?amount .
    OPTIONAL {{ ?node wikibase:quantityUnit ?unit .
      OPTIONAL {{ ?unit rdfs:label ?unitLabel . {_lang_filter("unitLabel", lang)} }} }} }}
  UNION
  {{ ?node wikibase:timeValue ?time . OPTIONAL {{ ?node wikibase:timePrecision ?prec }} }}
}} LIMIT 2000"""


def one_hop_facts(heads: Sequence[str], lang: str, limit: int) -> str:
    """Every truthy fact of the heads (external identifiers left out), with labels."""
    return PREFIXES + f"""SELECT ?h ?p ?pLabel ?v ?vLabel ?vDesc WHERE {{
  VALUES ?h {{ {_items(heads)} }}
  ?h ?wdt ?v .
  FILTER(STRSTARTS(STR(?wdt), "{WDT}"))
  {_value_filter("v", lang)}
  BIND(IRI(CONCAT("{WD}", STRAFTER(STR(?wdt), "{WDT}"))) AS ?p)
  FILTER NOT EXISTS {{ ?p wikibase:propertyType wikibase:ExternalId }}
  OPTIONAL {{ ?p rdfs:label ?pLabel . {_lang_filter("pLabel", lang)} }}
{_labels("v", lang)}}} LIMIT {_limit(limit)}"""


def relations_between(heads: Sequence[str], tails: Sequence[str], lang: str) -> str:
    """Properties linking heads and tails directly, in either direction."""
    return PREFIXES + f"""SELECT ?h ?t ?p ?pLabel ?dir WHERE {{
  VALUES ?h {{ {_items(heads)} }}
  VALUES ?t {{ {_items(tails)} }}
  {{ ?h ?wdt ?t . BIND("forward" AS ?dir) }} UNION {{ ?t ?wdt ?h . BIND("reverse" AS ?dir) }}
  FILTER(STRSTARTS(STR(?wdt), "{WDT}"))
  BIND(IRI(CONCAT("{WD}", STRAFTER(STR(?wdt), "{WDT}"))) AS ?p)
  OPTIONAL {{ ?p rdfs:label ?pLabel . {_lang_filter("pLabel", lang)} }}
}} LIMIT 200"""
