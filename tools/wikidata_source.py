"""Wikidata as a knowledge source: entity lookup, one-hop relations, attributes and filters
over SPARQL (a remote endpoint, or a Turtle file served in process by pyoxigraph).

Atomic operators run natively (``operate``) and return a short answer list, as the authors'
knowledge-base source does (its KoPL program's answers, at most 10): ``Search(name[,
descriptor])`` finds and describes entities, ``Relate(head, x)`` runs a typed
:class:`QueryProgram` (entity, relation path, constraint) compiled to SPARQL by the safe
builder of ``sparql_queries`` (or, when ``x`` names an entity, finds the relations between the
two), ``Filter(entities, condition)`` reads the condition ("born before 1960"), fetches each
entity's value of the attribute it names and marks whether it meets the condition. Nothing
found stays empty (so ATOMR's fallback can act): no dump of the entity's facts, unless the
source is built with ``fact_dump=True`` (a switch, off). Every answer is an
:class:`Evidence` whose text is a readable triple ``(head, relation, tail)`` and whose
metadata holds ids, labels and datatype.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Sequence

from pydantic import BaseModel, Field, field_validator

from atomgraph.errors import ConfigError
from atomgraph.settings import Settings
from atomgraph.state.run import Evidence
from atomgraph.text import STOPWORDS, content_words, listed_or_whole, ngrams, split_entities, words
from atomgraph.tools import sparql_queries as q
from atomgraph.tools.base import KnowledgeSource
from atomgraph.tools.kg_values import (
    OPERATORS,
    Condition,
    Fact,
    condition_met,
    fact_satisfies,
    format_number,
    format_quantity,
    format_time,
    literal_kind,
    parse_condition,
    qid_from_iri,
)
from atomgraph.tools.sparql_backends import OxigraphFileStore, SparqlBackend, SparqlEndpoint

# Condition words and the relation words they usually mean.
_ALIASES = {
    "born": "birth", "birthday": "birth", "died": "death", "dead": "death", "married": "spouse", "wife": "spouse",
    "husband": "spouse", "citizen": "citizenship", "nationality": "citizenship", "founded": "inception",
    "tall": "height", "located": "country", "lives": "residence", "wrote": "author", "written": "author",
}
# Condition words and the Wikidata properties they usually ask about (Filter conditions).
_CONDITION_PROPERTIES = {
    "born": ("date of birth", "place of birth"), "birth": ("date of birth", "place of birth"),
    "died": ("date of death", "place of death"), "death": ("date of death", "place of death"),
    "married": ("spouse",), "nationality": ("country of citizenship",), "citizen": ("country of citizenship",),
    "founded": ("inception", "founded by"), "established": ("inception",), "tall": ("height",),
    "wrote": ("author",), "written": ("author",), "directed": ("director",), "located": ("country",),
}
_MAX_CONDITION_GRAMS = 6  # n-grams of a condition tried as property names, at most
_PUBLIC_WDQS = "query.wikidata.org"
_MENTION_TOKEN = re.compile(r"[\w'.\-]+")


def _words(text: str) -> set[str]:
    """Content words for matching a question or condition against facts: relation words
    for common condition words, a plural's final s dropped."""
    out = set()
    for w in content_words(text):
        w = _ALIASES.get(w, w)
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.add(w)
    return out


def _wanted_datatype(question: str) -> str | None:
    """The kind of value a question asks for, from its wh-word: when → time, how many/much → quantity."""
    t = question.casefold()
    if re.search(r"\b(when|what year|which year|what date)\b", t):
        return "time"
    if re.search(r"\bhow (many|much|tall|high|long|big|large|old)\b", t):
        return "quantity"
    return None


def _case_variants(name: str) -> list[str]:
    n = " ".join(name.split())
    variants = [n, n.lower(), n.title(), n[:1].upper() + n[1:], n.upper()]
    return list(dict.fromkeys(v for v in variants if v))


def _relation_variants(relation: str) -> list[str]:
    r = " ".join(relation.replace("_", " ").split()).strip(" ?.!")
    r = re.sub(r"^(the|a|an|its|his|her|their)\s+", "", r, flags=re.I)
    r = re.sub(r"\s+of$", "", r, flags=re.I)
    forms = [r]
    low = r.lower()
    if low.endswith("ies"):
        forms.append(r[:-3] + "y")
    elif low.endswith("es") and low[-3:-2] in "sxz":
        forms.append(r[:-2])
    elif low.endswith("s") and not low.endswith("ss"):
        forms.append(r[:-1])
    out: list[str] = []
    for f in forms:
        out += _case_variants(f)
    return list(dict.fromkeys(out))


def _v(row: dict, name: str) -> str | None:
    cell = row.get(name)
    return cell.get("value") if cell else None


class QueryProgram(BaseModel):
    """A small typed knowledge-graph query for one sub-question: start at ``entity`` (a label
    or a QID), follow ``relations`` hop by hop (labels or PIDs, each resolved to properties),
    keep the final values meeting ``constraint`` (a condition such as "before 1960"). The
    source compiles it to SPARQL with the query builders of ``sparql_queries`` (literals
    escaped, ids checked); no SPARQL text ever comes from a model."""

    entity: str = Field(min_length=1, max_length=q.MAX_LITERAL_CHARS)
    relations: list[str] = Field(default_factory=list, max_length=3)
    constraint: str | None = None

    @field_validator("entity")
    @classmethod
    def _entity(cls, v: str) -> str:
        v = " ".join(v.split())
        if not v:
            raise ValueError("the entity is empty")
        return v

    @field_validator("relations")
    @classmethod
    def _relations(cls, v: list[str]) -> list[str]:
        return [r for r in (" ".join(x.split()) for x in v) if r]

    @field_validator("constraint")
    @classmethod
    def _constraint(cls, v: str | None) -> str | None:
        """No constraint however it is written: null, "", "none", "null", "n/a"."""
        v = " ".join((v or "").split())
        return None if v.lower().strip(".") in ("", "none", "null", "n/a", "no constraint") else v


MAX_ANSWERS = 10  # the authors keep the first 10 answers of a knowledge-base query


class ProgramError(ValueError):
    """A query program that cannot be compiled against the graph: its entity names no item,
    it follows no relation, or a relation names no property."""


class WikidataSource(KnowledgeSource):
    name = "wikidata"
    description = "Wikidata knowledge graph (SPARQL): entities, their relations and attributes such as dates and quantities."
    kind = "kg"

    def __init__(
        self,
        backend: SparqlBackend,
        *,
        language: str = "en",
        max_facts: int = 60,
        fuzzy: bool | None = None,
        max_heads: int = 3,
        max_answers: int = MAX_ANSWERS,
        fact_dump: bool = False,
    ):
        self.backend = backend
        self.max_answers = max_answers
        self.fact_dump = fact_dump  # ours: when nothing matches, give the entity's one-hop facts
        self.language = q.check_lang(language)
        self.max_facts = max_facts
        self.max_heads = max_heads
        if fuzzy is None:  # label scans cannot finish on the public service
            fuzzy = _PUBLIC_WDQS not in str(getattr(backend, "url", ""))
        self.fuzzy = fuzzy
        self.queries: deque[str] = deque(maxlen=50)  # the most recent query texts
        self._resolved: dict[tuple[str, int], list[dict]] = {}  # mention -> items, bounded

    # --- plumbing -----------------------------------------------------------------------
    def select(self, query: str) -> list[dict]:
        self.queries.append(query)
        return self.backend.select(query)

    def _entity_ev(self, hit: dict) -> Evidence:
        qid = hit["qid"]
        text = f"{qid}: {hit.get('description') or 'no description'}"
        if hit.get("aliases"):
            text += f" (also known as {', '.join(hit['aliases'][:5])})"
        return Evidence(
            title=hit.get("label") or qid,
            text=text,
            source=self.name,
            url=f"https://www.wikidata.org/wiki/{qid}",
            id=qid,
            metadata={"kind": "entity", **{k: v for k, v in hit.items() if k != "qid"}, "qid": qid},
        )

    def _fact_ev(self, fact: Fact) -> Evidence:
        meta = {
            "kind": "fact",
            "head_id": fact.head_id,
            "head_label": fact.head_label,
            "relation_id": fact.relation_id,
            "relation_label": fact.relation_label,
            "tail_id": fact.tail_id,
            "tail_label": fact.tail_label,
            "datatype": fact.datatype,
            "value": fact.value,
            "direction": fact.direction,
            **fact.extra,
        }
        return Evidence(
            title="",
            text=fact.triple,
            source=self.name,
            url=f"https://www.wikidata.org/wiki/{fact.head_id}",
            id=f"{fact.head_id}|{fact.relation_id}|{fact.tail_id or fact.value}",
            metadata=meta,
        )

    # --- entities -----------------------------------------------------------------------
    def _hits(self, rows: list[dict], match_of) -> list[dict]:
        hits: dict[str, dict] = {}
        for row in rows:
            qid = qid_from_iri(_v(row, "e") or "")
            if not qid:
                continue
            hit = hits.setdefault(qid, {"qid": qid, "label": None, "description": None, "matched": _v(row, "name"),
                                         "match": match_of(row), "sitelinks": 0})
            hit["label"] = hit["label"] or _v(row, "eLabel")
            hit["description"] = hit["description"] or _v(row, "eDesc")
            links = _v(row, "links")
            if links and links.isdigit():
                hit["sitelinks"] = max(hit["sitelinks"], int(links))
        return list(hits.values())

    def find_entities(self, label: str, limit: int = 5) -> list[Evidence]:
        """Items whose label or alias matches ``label``: exact (any common casing) first, then
        names starting with it, then names containing it; the most linked first within each."""
        return [self._entity_ev(h) for h in self._find(label, limit)]

    def _find(self, label: str, limit: int = 5, *, fuzzy: bool | None = None) -> list[dict]:
        raw = (label or "").strip()
        name = " ".join(raw.split()).strip(" '\"") or raw
        if not name or len(raw) > q.MAX_LITERAL_CHARS:
            return []
        qid = q.as_qid(name)
        if qid:
            return self._details([qid])
        names = list(dict.fromkeys([raw, *_case_variants(name)]))
        rows = self.select(q.entities_by_exact_name(names, self.language, max(limit * 4, 20)))
        hits = self._hits(rows, lambda r: "exact" if _v(r, "kind") == "0" else "alias")
        hits.sort(key=lambda h: (h["match"] != "exact", h["matched"] not in (raw, name), -h["sitelinks"], int(h["qid"][1:])))
        if len(hits) < limit and (self.fuzzy if fuzzy is None else fuzzy):
            rows = self.select(q.entities_by_name_scan(name, self.language, limit * 4))
            rank = {"0": "exact", "1": "prefix", "2": "contains"}
            more = self._hits(rows, lambda r: rank.get(_v(r, "rank") or "2", "contains"))
            order = {"exact": 0, "prefix": 1, "contains": 2}
            more.sort(key=lambda h: (order[h["match"]], -h["sitelinks"], int(h["qid"][1:])))
            seen = {h["qid"] for h in hits}
            hits += [h for h in more if h["qid"] not in seen]
        hits = hits[:limit]
        self._add_aliases(hits)
        return hits

    def _details(self, qids: list[str]) -> list[dict]:
        rows = self.select(q.entity_details(qids, self.language))
        hits = self._hits(rows, lambda r: "id")
        by = {h["qid"]: h for h in hits}
        for row in rows:
            qid = qid_from_iri(_v(row, "e") or "")
            alias = _v(row, "alias")
            if qid in by and alias:
                by[qid].setdefault("aliases", [])
                if alias not in by[qid]["aliases"]:
                    by[qid]["aliases"].append(alias)
        # an id with no data at all is still an id the caller gave
        return [by.get(x) or {"qid": x, "label": None, "description": None, "match": "id", "sitelinks": 0} for x in qids]

    def _add_aliases(self, hits: list[dict]) -> None:
        if not hits:
            return
        details = {h["qid"]: h for h in self._details([h["qid"] for h in hits])}
        for h in hits:
            d = details.get(h["qid"], {})
            h["aliases"] = d.get("aliases", [])
            h["label"] = h["label"] or d.get("label")
            h["description"] = h["description"] or d.get("description")

    def _resolve(self, entity: str, n: int | None = None) -> list[dict]:
        """The items an entity mention most likely means: exact matches (most linked first),
        else the best prefix/contains match."""
        n = n or self.max_heads
        key = (entity or "", n)
        if key in self._resolved:
            return [dict(h) for h in self._resolved[key]]
        qid = q.as_qid(entity or "")
        if qid:
            hits = self._details([qid])
        else:
            hits = self._find(entity, n, fuzzy=False)
            if not hits and self.fuzzy:
                hits = self._find(entity, 1)
        if len(self._resolved) >= 512:
            self._resolved.pop(next(iter(self._resolved)))
        self._resolved[key] = hits[:n]
        return [dict(h) for h in hits[:n]]

    # --- properties ---------------------------------------------------------------------
    def resolve_relation(self, relation: str, limit: int = 4) -> list[tuple[str, str]]:
        """``(pid, label)`` of properties whose label or alias matches ``relation``."""
        rel = (relation or "").strip()
        pid = q.as_pid(rel)
        if pid:
            return [(pid, self._property_label(pid))]
        if not rel or len(rel) > q.MAX_LITERAL_CHARS:
            return []
        variants = _relation_variants(rel)
        rows = self.select(q.properties_by_exact_name(variants, self.language))
        found: dict[str, tuple[int, str]] = {}
        for row in rows:
            p = qid_from_iri(_v(row, "p") or "")
            if not p:
                continue
            score = int(_v(row, "kind") or 1) + (0 if _v(row, "name") == variants[0] else 2)
            label = _v(row, "pLabel") or p
            if p not in found or score < found[p][0]:
                found[p] = (score, label)
        if not found:  # property labels are few enough to scan anywhere
            for needle in dict.fromkeys(v.lower() for v in variants[:1] + variants[-1:]):
                rows = self.select(q.properties_by_name_scan(needle, self.language, limit))
                for i, row in enumerate(rows):
                    p = qid_from_iri(_v(row, "p") or "")
                    if p and p not in found:
                        found[p] = (10 + i, _v(row, "pLabel") or p)
                if found:
                    break
        ranked = sorted(found.items(), key=lambda kv: (kv[1][0], int(kv[0][1:])))
        return [(p, label) for p, (_, label) in ranked[:limit]]

    def _exact_properties(self, names: list[str]) -> list[tuple[str, str]]:
        """``(pid, label)`` of properties labelled exactly one of ``names`` (no variants)."""
        names = [n for n in names if n and len(n) <= q.MAX_LITERAL_CHARS]
        if not names:
            return []
        found: dict[str, str] = {}
        for row in self.select(q.properties_by_exact_name(names, self.language)):
            p = qid_from_iri(_v(row, "p") or "")
            if p and _v(row, "kind") == "0":
                found.setdefault(p, _v(row, "pLabel") or p)
        return list(found.items())

    def _property_label(self, pid: str) -> str:
        rows = self.select(
            q.PREFIXES
            + f"SELECT ?l WHERE {{ wd:{q.check_pid(pid)} rdfs:label ?l . "
            + f'FILTER(LANGMATCHES(LANG(?l), "{self.language}")) }} LIMIT 1'
        )
        return _v(rows[0], "l") if rows else pid

    # --- facts --------------------------------------------------------------------------
    def _statement_details(self, heads: list[str], pids: list[str] | None) -> dict:
        """(head, pid) → {"quantities": [...], "precision": {iso time: precision}}."""
        out: dict[tuple[str, str], dict] = {}
        for row in self.select(q.statement_values(heads, pids, self.language)):
            h = qid_from_iri(_v(row, "h") or "")
            pp = _v(row, "pp") or ""
            pid = pp.rsplit("/", 1)[-1]
            if not h or not pid.startswith("P"):
                continue
            slot = out.setdefault((h, pid), {"quantities": [], "precision": {}})
            amount = _v(row, "amount")
            if amount is not None:
                unit = _v(row, "unit")
                slot["quantities"].append(
                    {"amount": amount, "unit_id": qid_from_iri(unit or ""), "unit_label": _v(row, "unitLabel"),
                     "text": format_quantity(amount, unit, _v(row, "unitLabel"))}
                )
            time_ = _v(row, "time")
            prec = _v(row, "prec")
            if time_ and prec and prec.lstrip("-").isdigit():
                slot["precision"][time_] = int(prec)
        return out

    def _facts_from_rows(
        self, rows: list[dict], heads: dict[str, str], prop_labels: dict[str, str], direction: str, details: dict
    ) -> list[Fact]:
        facts: list[Fact] = []
        done_quantities: set[tuple[str, str]] = set()
        for row in rows:
            h = qid_from_iri(_v(row, "h") or "")
            pid = qid_from_iri(_v(row, "p") or "")
            cell = row.get("v")
            if not h or not pid or not cell:
                continue
            rel_label = prop_labels.get(pid) or _v(row, "pLabel") or pid
            base = dict(head_id=h, head_label=heads.get(h) or h, relation_id=pid, relation_label=rel_label,
                        direction=direction)
            if cell.get("type") == "uri":
                tail = qid_from_iri(cell["value"])
                label = _v(row, "vLabel") or tail or cell["value"]
                extra = {"tail_description": _v(row, "vDesc")} if _v(row, "vDesc") else {}
                facts.append(Fact(**base, tail_label=label, tail_id=tail, datatype="item" if tail else "url",
                                  value=tail or cell["value"], extra=extra))
                continue
            if cell.get("type") != "literal":
                continue
            kind = literal_kind(cell.get("datatype"))
            slot = details.get((h, pid), {})
            if kind == "quantity" and slot.get("quantities"):
                if (h, pid) in done_quantities:
                    continue
                done_quantities.add((h, pid))
                for qv in slot["quantities"]:
                    facts.append(Fact(**base, tail_label=qv["text"], datatype="quantity",
                                      value=qv["amount"].lstrip("+"),
                                      extra={"unit_id": qv["unit_id"], "unit_label": qv["unit_label"]}))
                continue
            raw = cell["value"]
            if kind == "time":
                label = format_time(raw, slot.get("precision", {}).get(raw))
            elif kind == "quantity":
                label = format_number(raw)
            else:
                label = " ".join(raw.split())
            facts.append(Fact(**base, tail_label=label, datatype=kind, value=raw))
        return facts

    def _labels_of(self, hits: list[dict]) -> dict[str, str]:
        return {h["qid"]: h.get("label") or h["qid"] for h in hits}

    def relate(self, head: str, relation: str, *, limit: int | None = None) -> list[Evidence]:
        """Facts ``head --relation--> ?`` and ``? --relation--> head`` (attribute values
        included), for the items ``head`` names (a label or a QID)."""
        limit = limit or self.max_facts
        heads = self._resolve(head)
        props = self.resolve_relation(relation)
        if not heads or not props:
            return []
        return [self._fact_ev(f) for f in self._relate(heads, props, limit, reverse=True)]

    def _relate(self, heads: list[dict], props: list[tuple[str, str]], limit: int, reverse: bool) -> list[Fact]:
        qids = [h["qid"] for h in heads]
        pids = [p for p, _ in props]
        labels = self._labels_of(heads)
        prop_labels = dict(props)
        rows = self.select(q.forward_values(qids, pids, self.language, limit))
        details = self._statement_details(qids, pids) if rows else {}
        facts = self._facts_from_rows(rows, labels, prop_labels, "forward", details)
        if reverse and len(facts) < limit:
            rows = self.select(q.reverse_values(qids, pids, self.language, limit - len(facts)))
            facts += self._facts_from_rows(rows, labels, prop_labels, "reverse", {})
        return facts[:limit]

    def attribute(self, entity: str, name: str) -> list[Evidence]:
        """Values of attribute ``name`` of ``entity``: dates readable at their precision,
        quantities with their units."""
        heads = self._resolve(entity)
        props = self.resolve_relation(name)
        if not heads or not props:
            return []
        return [self._fact_ev(f) for f in self._relate(heads, props, self.max_facts, reverse=False)]

    def relations_between(self, head: str, tail: str) -> list[Evidence]:
        """The relations that link ``head`` and ``tail`` directly, either way round."""
        heads, tails = self._resolve(head), self._resolve(tail)
        if not heads or not tails:
            return []
        rows = self.select(q.relations_between([h["qid"] for h in heads], [t["qid"] for t in tails], self.language))
        hl, tl = self._labels_of(heads), self._labels_of(tails)
        out = []
        for row in rows:
            h, t, p = (qid_from_iri(_v(row, x) or "") for x in ("h", "t", "p"))
            if not (h and t and p):
                continue
            fact = Fact(head_id=h, head_label=hl.get(h, h), relation_id=p, relation_label=_v(row, "pLabel") or p,
                        tail_label=tl.get(t, t), tail_id=t, value=t, direction=_v(row, "dir") or "forward")
            out.append(self._fact_ev(fact))
        return out

    def _facts(self, heads: list[dict], limit: int) -> list[Fact]:
        if not heads:
            return []
        qids = [h["qid"] for h in heads]
        rows = self.select(q.one_hop_facts(qids, self.language, limit))
        details = self._statement_details(qids, None) if rows else {}
        return self._facts_from_rows(rows, self._labels_of(heads), {}, "forward", details)

    def condition_properties(self, attribute: str) -> list[tuple[str, str]]:
        """``(pid, label)`` of the properties a Filter condition's attribute phrase names: the
        phrase as a property name, the properties its words usually mean ("born" → date and
        place of birth), else the longest n-gram of its words that is a property name."""
        found = dict(self.resolve_relation(attribute)) if attribute else {}
        for w in words(attribute):
            for name in _CONDITION_PROPERTIES.get(w, ()):
                for pid, label in self.resolve_relation(name, limit=1):
                    found.setdefault(pid, label)
        if not found:
            toks = [w for w in words(attribute) if w not in STOPWORDS]
            for gram in ngrams(toks, 3)[:_MAX_CONDITION_GRAMS]:
                found.update(self.resolve_relation(" ".join(gram)))
                if found:
                    break
        return list(found.items())

    def _filter_facts(self, entity: str, props: list[tuple[str, str]], cond: Condition) -> list[tuple[Fact, bool | None]]:
        """The values of ``props`` for ``entity`` with whether each meets ``cond``, met first."""
        heads = self._resolve(entity, 1)
        if not heads or not props:
            return []
        judged = [(f, condition_met(f, cond)) for f in self._relate(heads, props, self.max_facts, reverse=False)]
        return sorted(judged, key=lambda fm: {True: 0, None: 1, False: 2}[fm[1]])

    def _filter_ev(self, fact: Fact, entity: str, cond: Condition, met: bool | None) -> Evidence:
        ev = self._fact_ev(fact)
        ev.metadata.update({"entity": entity, "filter": cond.text, "satisfies": met})
        return ev

    def filter_entities(self, entities: Sequence[str], relation: str, op: str, value: str) -> list[Evidence]:
        """Of ``entities`` (labels or QIDs), the facts showing those whose ``relation`` value
        satisfies ``op value`` (op: = != < <= > >= contains)."""
        if op not in OPERATORS:
            raise ValueError(f"unknown filter operator {op!r}; use one of {', '.join(OPERATORS)}")
        props = self.resolve_relation(relation)
        cond = Condition(f"{relation} {op} {value}", relation, op, value)
        out: list[Evidence] = []
        for entity in entities:
            for fact, _ in self._filter_facts(entity, props, cond):
                if fact_satisfies(fact, op, value):
                    out.append(self._filter_ev(fact, entity, cond, True))
        return out

    # --- the KnowledgeSource interface --------------------------------------------------
    def search(self, query: str, k: int = 3) -> list[Evidence]:
        """The entities a free-text query mentions (longest names first) and their one-hop
        facts, most relevant to the query first: a short list of at most ``max_answers`` (the
        KG answer is not cut to ``k``)."""
        heads = self._mentions(query)
        if not heads:
            return []
        qwords = _words(query) - set().union(*(_words(h.get("label") or "") for h in heads[:2]))
        facts = self._facts(heads[:2], self.max_facts)
        wants = _wanted_datatype(query)
        facts.sort(key=lambda f: (-len(qwords & _words(f"{f.relation_label} {f.tail_label}")), f.datatype != wants))
        return ([self._entity_ev(h) for h in heads[:2]] + [self._fact_ev(f) for f in facts])[: self.max_answers]

    def _mentions(self, text: str, max_words: int = 16, max_n: int = 5) -> list[dict]:
        whole = self._resolve(text, 2) if len(text.split()) <= max_n else []
        if whole:
            return whole
        tokens = _MENTION_TOKEN.findall(text)[:max_words]  # names keep their case, dots, hyphens
        grams = [
            " ".join(gram) for gram in ngrams(tokens, max_n)
            if not all(t.casefold() in STOPWORDS for t in gram) and not (len(gram) == 1 and len(gram[0]) < 3)
        ]
        if not grams:
            return []
        names = list(dict.fromkeys(v for g in grams for v in _case_variants(g)[:3]))
        rows = self.select(q.entities_by_exact_name(names, self.language, 100))
        hits = self._hits(rows, lambda r: "exact" if _v(r, "kind") == "0" else "alias")
        length = {g.casefold(): len(g.split()) for g in grams}
        hits.sort(key=lambda h: (-length.get((h["matched"] or "").casefold(), 0), h["match"] != "exact",
                                 -h["sitelinks"], int(h["qid"][1:])))
        hits = hits[:2]
        self._add_aliases(hits)
        return hits

    def compile_program(self, program: QueryProgram) -> tuple[list[dict], list[list[tuple[str, str]]]]:
        """The items ``program`` starts from and the properties of each hop; ProgramError when
        its entity names no item, it follows no relation, or a relation names no property."""
        heads = self._resolve(program.entity)
        if not heads:
            raise ProgramError(f"no item of the graph is named {program.entity!r}")
        if not program.relations:
            raise ProgramError("the program follows no relation")
        hops = []
        for relation in program.relations:
            props = self.resolve_relation(relation)
            if not props:
                raise ProgramError(f"no property of the graph is named {relation!r}")
            hops.append(props)
        return heads, hops

    def run_program(self, program: QueryProgram, limit: int | None = None, *, strict: bool = False) -> list[Fact]:
        """The answers of ``program``: the values reached from its entity along its relation
        path (forward, or reverse where a hop has no forward value), meeting its constraint;
        at most ``limit`` (``max_answers``). A program that cannot be compiled answers nothing
        (``strict``: raises ProgramError); a compiled one that finds nothing answers nothing."""
        limit = limit or self.max_answers
        try:
            heads, hops = self.compile_program(program)
        except ProgramError:
            if strict:
                raise
            return []
        facts: list[Fact] = []
        for i, props in enumerate(hops):
            if not heads:
                return []
            facts = self._relate(heads, props, self.max_facts, reverse=True)
            if i < len(hops) - 1:
                qids = list(dict.fromkeys(f.tail_id for f in facts if f.tail_id))
                heads = self._details(qids[: self.max_heads * 3]) if qids else []
        if program.constraint:
            cond = parse_condition(f"value {program.constraint}")  # the constraint is on the values themselves
            facts = [f for f in facts if condition_met(f, cond) is not False]
        return facts[:limit]

    def answer_program(self, program: QueryProgram) -> list[Evidence]:
        """The answers of a model-written ``program`` as evidence (at most ``max_answers``);
        ProgramError when it cannot be compiled, an empty list when it finds nothing."""
        return [self._fact_ev(f) for f in self.run_program(program, strict=True)]

    def operate(self, operator: str, args: list[str], question: str, k: int = 3) -> list[Evidence]:
        """A short answer list (at most ``max_answers``) for one atomic operator call; empty
        when nothing matches (``fact_dump=True``: the mentioned entities' facts instead)."""
        op = (operator or "").strip().lower()
        args = [str(a).strip() for a in args if a is not None and str(a).strip()]
        out: list[Evidence] = []
        if op == "search" and args:
            out = self._op_search(args[0], args[1] if len(args) > 1 else "", k)
        elif op == "relate" and len(args) >= 2:
            out = self._op_relate(args[0], args[1])
        elif op == "filter" and len(args) >= 2:
            out = self.filter_candidates(listed_or_whole(args[0]), " ".join(args[1:]))
        if not out and self.fact_dump:
            return self.search(" ".join(args) or question, k)
        return out[: self.max_answers]

    def _op_search(self, name: str, descriptor: str, k: int) -> list[Evidence]:
        hits = self._find(name, max(k, 5))
        if descriptor:
            words = _words(descriptor)
            hits.sort(key=lambda h: -len(words & _words(f"{h.get('description') or ''} {' '.join(h.get('aliases', []))}")))
        return [self._entity_ev(h) for h in hits]

    def _op_relate(self, head: str, x: str) -> list[Evidence]:
        names = [head] if self._resolve(head) else split_entities(head)
        props = self.resolve_relation(x)
        out: list[Evidence] = []
        if props:
            for name in names[: self.max_heads * 3]:
                out += [self._fact_ev(f) for f in self.run_program(QueryProgram(entity=name, relations=[x]))]
        if not out and self._resolve(x):
            for name in names[: self.max_heads * 3]:
                out += self.relations_between(name, x)
        return out[: self.max_facts]

    def filter_candidates(self, candidates: Sequence[str], condition: str) -> list[Evidence]:
        """Filter(candidates, condition) on the KG: for each candidate, taken whole (an answer
        such as "Wapakoneta, Ohio" or "Pride and Prejudice" is one name, never split again), the
        values of the attribute the condition names, each marked with whether it meets the
        condition (``metadata["satisfies"]``: True, False, or None where it cannot be judged);
        the executor reasons over them. A candidate without that attribute gives nothing, or with
        ``fact_dump`` its one-hop facts that share words with the condition."""
        cond = parse_condition(condition)
        props = self.condition_properties(cond.attribute)
        if cond.op == "=" and f"{cond.attribute} of".lower() in condition.lower():
            # "capital of a country": the property "capital of" itself, when there is one
            props = self._exact_properties([f"{cond.attribute} of"]) + props
        names = list(dict.fromkeys(" ".join(str(c).split()) for c in candidates if str(c).strip()))
        cwords = _words(condition)
        out: list[Evidence] = []
        for name in names[:20]:
            judged = self._filter_facts(name, props, cond)
            if judged:
                out += [self._filter_ev(fact, name, cond, met) for fact, met in judged]
                continue
            if not self.fact_dump:  # no attribute the condition names: nothing (the authors' KB)
                continue
            for fact in self._facts(self._resolve(name, 1), self.max_facts):
                if cwords & _words(f"{fact.relation_label} {fact.tail_label}"):
                    out.append(self._filter_ev(fact, name, cond, None))
        return out[: self.max_facts * 2]


def wikidata_from_settings(settings: Settings) -> WikidataSource:
    try:
        q.check_lang(settings.wikidata_language)
    except q.QueryInputError as exc:
        raise ConfigError(f"setting 'wikidata_language' is invalid: {exc}") from None
    if settings.wikidata_file:
        backend: SparqlBackend = OxigraphFileStore(settings.wikidata_file)
    else:
        backend = SparqlEndpoint(
            settings.wikidata_endpoint,
            user_agent=settings.user_agent,
            timeout=settings.source_timeout,
            retries=settings.source_retries,
        )
    return WikidataSource(backend, language=settings.wikidata_language)
