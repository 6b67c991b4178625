"""Where the Wikidata source sends its SPARQL: a remote endpoint or an in-process store.

Both answer ``select(query)`` with rows in the SPARQL 1.1 JSON results shape
(``{"var": {"type": "uri"|"literal"|"bnode", "value": ..., "datatype": ..., "xml:lang": ...}}``),
so the source cannot tell them apart.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Protocol

from atomgraph.errors import SourceError, SourceUnavailable
from atomgraph.extras import require
from atomgraph.tools.retry import call_with_retries

Row = dict[str, dict[str, str]]


class SparqlBackend(Protocol):
    def select(self, query: str) -> list[Row]: ...


class SparqlEndpoint:
    """A SPARQL endpoint over HTTP (SPARQLWrapper), with a descriptive User-Agent, a timeout
    and bounded retries (429/5xx/timeouts; ``Retry-After`` honoured)."""

    # Long queries go as POST (form-encoded): GET URLs have length limits.
    MAX_GET_CHARS = 1800

    def __init__(
        self,
        url: str,
        *,
        user_agent: str,
        timeout: float = 20.0,
        retries: int = 3,
        sleep: Callable[[float], Any] = time.sleep,
        base_delay: float = 0.5,
    ):
        self.url = url
        self.user_agent = user_agent
        self.timeout = timeout
        self.retries = retries
        self._sleep = sleep
        self._base_delay = base_delay

    def __repr__(self) -> str:
        return f"<SparqlEndpoint {self.url}>"

    def _once(self, query: str) -> dict:
        from SPARQLWrapper import JSON, POST, SPARQLWrapper

        wrapper = SPARQLWrapper(self.url, agent=self.user_agent)
        wrapper.setQuery(query)
        wrapper.setReturnFormat(JSON)
        wrapper.setTimeout(max(1, int(round(self.timeout))))
        if len(query) > self.MAX_GET_CHARS:
            wrapper.setMethod(POST)
        result = wrapper.query().convert()
        if not isinstance(result, dict):
            raise SourceError(f"wikidata: {self.url} did not answer with SPARQL JSON results")
        return result

    def select(self, query: str) -> list[Row]:
        result = call_with_retries(
            lambda: self._once(query),
            what=f"wikidata query to {self.url}",
            attempts=self.retries,
            base_delay=self._base_delay,
            sleep=self._sleep,
        )
        try:
            return list(result["results"]["bindings"])
        except (KeyError, TypeError):
            raise SourceError(f"wikidata: {self.url} answered without SELECT results") from None


class OxigraphFileStore:
    """A Turtle file loaded into an in-memory ``pyoxigraph.Store``, queried in process."""

    def __init__(self, path: str | os.PathLike):
        pyoxigraph = require("pyoxigraph", "kg", "local RDF files (wikidata_file)")

        self.path = str(path)
        if not os.path.isfile(self.path):
            raise SourceUnavailable(f"wikidata_file {self.path} does not exist")
        self._store = pyoxigraph.Store()
        try:
            self._store.load(path=self.path, format=pyoxigraph.RdfFormat.TURTLE)
        except (SyntaxError, ValueError, OSError) as exc:
            raise SourceUnavailable(f"wikidata_file {self.path} could not be loaded as Turtle: {exc}") from exc

    def __repr__(self) -> str:
        return f"<OxigraphFileStore {self.path}>"

    def __len__(self) -> int:
        return len(self._store)

    def select(self, query: str) -> list[Row]:
        try:
            solutions = self._store.query(query)
        except SyntaxError as exc:
            raise SourceError(f"wikidata: the query was rejected: {exc}") from exc
        names = [v.value for v in solutions.variables]
        rows: list[Row] = []
        for sol in solutions:
            row: Row = {}
            for name in names:
                term = sol[name]
                if term is not None:
                    row[name] = _term_json(term)
            rows.append(row)
        return rows


def _term_json(term) -> dict[str, str]:
    import pyoxigraph

    if isinstance(term, pyoxigraph.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, pyoxigraph.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, pyoxigraph.Literal):
        out = {"type": "literal", "value": term.value}
        if term.language:
            out["xml:lang"] = term.language
        elif term.datatype is not None and term.datatype.value != "http://www.w3.org/2001/XMLSchema#string":
            out["datatype"] = term.datatype.value
        return out
    return {"type": "literal", "value": str(term)}
