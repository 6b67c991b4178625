"""Where the Wikidata source sends its SPARQL: a remote endpoint or an in-process store.

Both answer ``select(query)`` with rows in the SPARQL 1.1 JSON results shape
(``{"var": {"type": "uri"|"literal"|"bnode", "value": ..., "datatype": ..., "xml:lang": ...}}``),
so the source cannot tell them apart.
"""

from __future__ import annotations

import codecs
import json
import logging
import os
import re
import time
from collections import deque
from typing import Any, Callable, Protocol

from atomgraph.errors import SourceError, SourceUnavailable
from atomgraph.extras import require
from atomgraph.tools.base import note_cut
from atomgraph.tools.retry import call_with_retries

log = logging.getLogger(__name__)

Row = dict[str, dict[str, str]]


class SparqlBackend(Protocol):
    def select(self, query: str) -> list[Row]: ...


class SparqlEndpoint:
    """A SPARQL endpoint over HTTP (httpx, streamed), with a descriptive User-Agent, a timeout,
    bounded retries (429/5xx/timeouts; ``Retry-After`` honoured) and bounds per query.

    Every query is bounded three ways, its reply read as it arrives and never held whole:
    ``max_time`` seconds in all (default ``timeout``; checked after every read, and each read waits
    at most ``timeout``), ``max_bytes`` of reply (default 16 MiB) and ``max_rows`` result rows
    (default 10,000). Past a bound the connection is closed and the rows read so far are the
    answer; the cut is recorded — a warning, :attr:`cuts`, and the question's retriever call
    (``RetrieverCall.cut``, :func:`atomgraph.tools.base.note_cut`). An endpoint streaming rows
    forever ends within ``max_time`` with at most ``max_rows`` rows in memory."""

    # Long queries go as POST (form-encoded): GET URLs have length limits.
    MAX_GET_CHARS = 1800
    MAX_BYTES = 16 * 1024 * 1024
    MAX_ROWS = 10_000
    CHUNK = 64 * 1024

    def __init__(
        self,
        url: str,
        *,
        user_agent: str,
        timeout: float = 20.0,
        retries: int = 3,
        sleep: Callable[[float], Any] = time.sleep,
        base_delay: float = 0.5,
        max_time: float | None = None,
        max_bytes: int = MAX_BYTES,
        max_rows: int = MAX_ROWS,
    ):
        self.url = url
        self.user_agent = user_agent
        self.timeout = timeout
        self.retries = retries
        self._sleep = sleep
        self._base_delay = base_delay
        self.max_time = float(max_time if max_time is not None else timeout)
        self.max_bytes = int(max_bytes)
        self.max_rows = int(max_rows)
        self.cuts: deque[str] = deque(maxlen=50)  # the most recent cuts, as recorded

    def __repr__(self) -> str:
        return f"<SparqlEndpoint {self.url}>"

    def _once(self, query: str) -> dict:
        """One query: ``{"results": {"bindings": rows}}`` plus ``"cut"`` (why the reply was cut) when a bound ended it."""
        import httpx

        start = time.monotonic()
        headers = {"User-Agent": self.user_agent, "Accept": "application/sparql-results+json"}
        wait = max(0.1, min(self.timeout, self.max_time))
        with httpx.Client(timeout=httpx.Timeout(wait), follow_redirects=True, max_redirects=3) as client:
            if len(query) > self.MAX_GET_CHARS:
                request = client.build_request("POST", self.url, data={"query": query}, headers=headers)
            else:
                request = client.build_request("GET", self.url, params={"query": query}, headers=headers)
            response = client.send(request, stream=True)
            try:
                response.raise_for_status()
                reader = BindingsReader(self.max_rows)
                read, cut = 0, None
                for chunk in response.iter_bytes(self.CHUNK):
                    read += len(chunk)
                    if read > self.max_bytes:
                        cut = f"byte limit ({self.max_bytes:,} bytes)"
                        reader.feed(chunk[: len(chunk) - (read - self.max_bytes)])
                        break
                    reader.feed(chunk)
                    if reader.full:
                        cut = f"row limit ({self.max_rows:,} rows)"
                        break
                    if reader.done:
                        break
                    if time.monotonic() - start > self.max_time:
                        cut = f"time limit ({self.max_time:g} s)"
                        break
            finally:
                response.close()
        if not reader.started:
            if cut is not None:
                raise SourceError(f"wikidata: {self.url} sent no results before its reply was cut at the {cut}")
            raise SourceError(f"wikidata: {self.url} did not answer with SPARQL JSON results")
        if cut is None and not reader.done:
            if not reader.started:
                raise SourceError(f"wikidata: {self.url} did not answer with SPARQL JSON results")
            raise SourceError(f"wikidata: {self.url} ended its reply before its results were complete")
        out: dict = {"results": {"bindings": reader.rows}}
        if cut is not None:
            out["cut"] = (f"reply cut at the {cut}: {len(reader.rows):,} rows, {min(read, self.max_bytes):,} bytes "
                          f"read in {time.monotonic() - start:.1f} s")
        return out

    def select(self, query: str) -> list[Row]:
        result = call_with_retries(
            lambda: self._once(query),
            what=f"wikidata query to {self.url}",
            attempts=self.retries,
            base_delay=self._base_delay,
            sleep=self._sleep,
        )
        try:
            rows = list(result["results"]["bindings"])
        except (KeyError, TypeError):
            raise SourceError(f"wikidata: {self.url} answered without SELECT results") from None
        if result.get("cut"):
            why = f"wikidata: {result['cut']}"
            self.cuts.append(why)
            note_cut(why)
            log.warning("%s (%s)", why, self.url)
        return rows


_SCAN = re.compile(r'["{}\[\]]')
_IN_STRING = re.compile(r'["\\]')
_BINDINGS = re.compile(r'"bindings"\s*:\s*\[')


class BindingsReader:
    """The rows of a SPARQL JSON result (``results.bindings``), read as its bytes arrive: each row is
    parsed once it is complete and its text dropped, so memory holds the rows read and one partial
    row. ``full``: ``max_rows`` rows read; ``done``: the bindings array closed."""

    def __init__(self, max_rows: int):
        self.max_rows = max_rows
        self.rows: list[Row] = []
        self.started = self.done = False
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._buf = ""
        self._i = 0  # where scanning resumes in _buf
        self._start: int | None = None  # where the row being read starts in _buf
        self._depth = 0
        self._in_string = False

    @property
    def full(self) -> bool:
        return len(self.rows) >= self.max_rows

    def feed(self, data: bytes) -> None:
        if self.done or self.full:
            return
        self._buf += self._decoder.decode(data)
        if not self.started:
            m = _BINDINGS.search(self._buf)
            if m is None:
                return
            self.started, self._buf, self._i = True, self._buf[m.end():], 0
        buf, i = self._buf, self._i
        while not self.done and not self.full:
            m = (_IN_STRING if self._in_string else _SCAN).search(buf, i)
            if m is None:
                i = len(buf)
                break
            ch, i = m.group(), m.end()
            if self._in_string:
                if ch == "\\":
                    if i >= len(buf):  # the escaped character has not arrived yet
                        i -= 1
                        break
                    i += 1
                else:
                    self._in_string = False
            elif ch == '"':
                self._in_string = True
            elif ch in "{[":
                if self._depth == 0:
                    self._start = i - 1
                self._depth += 1
            elif self._depth == 0:  # the bindings array closes
                self.done = True
            else:
                self._depth -= 1
                if self._depth == 0 and self._start is not None:
                    row = json.loads(buf[self._start:i])
                    if isinstance(row, dict):
                        self.rows.append(row)
                    self._start = None
        keep = self._start if self._start is not None else i
        self._buf, self._i = buf[keep:], i - keep
        if self._start is not None:
            self._start = 0


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
