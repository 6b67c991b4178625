"""Every SPARQL query is bounded (tools/sparql_backends.py): a total time, a byte and a row limit, the
reply streamed and cut, the cut recorded. A real loopback HTTP server streams result rows forever (each
test bounds it), as a flooding endpoint would."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import time
import tracemalloc

import pytest

from atomgraph.errors import SourceError
from atomgraph.tools.base import recorded_retrieval
from atomgraph.tools.sparql_backends import BindingsReader, SparqlEndpoint
from atomgraph.tools.wikidata_source import WikidataSource

SERVER_BOUND_S = 60.0  # the flood stops by itself at the latest then, whatever the client does


class Flood(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        mode = self.path.split("/")[1]
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(text: str) -> None:
            data = text.encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

        try:
            send('{"head": {"vars": ["item", "itemLabel"]}, "results": {"bindings": [')
            big = "x" * (100_000 if mode == "big" else 20)
            row = json.dumps({"item": {"type": "uri", "value": "http://www.wikidata.org/entity/Q64"},
                              "itemLabel": {"type": "literal", "value": 'Berlin " {[' + big, "xml:lang": "en"}})
            end = time.monotonic() + SERVER_BOUND_S
            n = 0
            while time.monotonic() < end:
                send(("," if n else "") + ",".join([row] * 50))
                n += 50
                if mode == "slow":
                    self.wfile.flush()
                    time.sleep(0.05)
            send("]}}")
            send("")
        except OSError:  # the client closed the connection: the flood is over
            pass


@pytest.fixture(scope="module")
def flood():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Flood)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _timed(endpoint: SparqlEndpoint) -> tuple[list, float, int]:
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        rows = endpoint.select("SELECT ?item ?itemLabel WHERE { ?item ?p ?o }")
    finally:
        wall = time.monotonic() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return rows, wall, peak


def test_a_flood_of_rows_is_cut_at_the_row_limit(flood):
    endpoint = SparqlEndpoint(f"{flood}/fast/query", user_agent="atomgraph-tests", timeout=10, retries=1,
                              max_rows=2_000)
    rows, wall, peak = _timed(endpoint)
    assert len(rows) == 2_000 and rows[0]["itemLabel"]["value"].startswith('Berlin " {[')
    assert wall < 10 and peak < 20 * 2**20, (wall, peak)
    assert endpoint.cuts and "row limit (2,000 rows)" in endpoint.cuts[-1]


def test_a_flood_of_bytes_is_cut_at_the_byte_limit(flood):
    endpoint = SparqlEndpoint(f"{flood}/big/query", user_agent="atomgraph-tests", timeout=10, retries=1,
                              max_bytes=4 * 2**20)
    rows, wall, peak = _timed(endpoint)
    assert 0 < len(rows) <= 41 and wall < 10 and peak < 40 * 2**20, (len(rows), wall, peak)
    assert "byte limit (4,194,304 bytes)" in endpoint.cuts[-1]


def test_an_endless_stream_ends_within_the_time_limit(flood):
    """The default bounds (10,000 rows, 16 MiB) are not reached in 2 s by this server: the total time is."""
    endpoint = SparqlEndpoint(f"{flood}/slow/query", user_agent="atomgraph-tests", timeout=10, retries=1, max_time=2)
    rows, wall, peak = _timed(endpoint)
    assert 0 < len(rows) < 10_000 and 2 <= wall < 2 + 3, (len(rows), wall)
    assert peak < 20 * 2**20 and "time limit (2 s)" in endpoint.cuts[-1]


def test_the_cut_is_on_the_question_s_retriever_call(flood):
    source = WikidataSource(SparqlEndpoint(f"{flood}/fast/query", user_agent="atomgraph-tests", timeout=10,
                                           retries=1, max_rows=500))
    hits, call = asyncio.run(recorded_retrieval(source, "Berlin", 3))
    assert call.error is None and call.cut and "row limit (500 rows)" in call.cut, call


def test_the_streamed_reader_reads_what_json_reads():
    doc = {"head": {"vars": ["a"]}, "results": {"bindings": [
        {"a": {"type": "literal", "value": v}} for v in ['x', 'a "quoted" }{ ][', "\\", "é東京", ""]]}}
    text = json.dumps(doc, ensure_ascii=False).encode()
    for size in (1, 2, 3, 7, len(text)):
        reader = BindingsReader(100)
        for i in range(0, len(text), size):
            reader.feed(text[i:i + size])
        assert reader.done and reader.rows == doc["results"]["bindings"], size


def test_a_reply_that_is_no_sparql_json_is_a_source_error(flood):
    endpoint = SparqlEndpoint(f"{flood}/fast/query", user_agent="atomgraph-tests", timeout=10, retries=1)
    endpoint.max_bytes = 30  # cut inside the head, before the bindings array: no results
    with pytest.raises(SourceError):
        endpoint.select("SELECT * WHERE {}")
