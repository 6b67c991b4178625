"""GoogleSource against recorded SerpAPI responses.

The real ``serpapi.Client`` runs; only its ``requests`` transport is replaced by an adapter
that replays recorded responses (status, headers, JSON body) and records the requests.
Nothing here touches the network.
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import serpapi
from requests.adapters import BaseAdapter

from atomgraph.errors import SourceError
from atomgraph.settings import Settings
from atomgraph.tools import build_sources
from atomgraph.tools.retry import acall_with_retries, call_with_retries, parse_retry_after
from atomgraph.tools.serpapi_source import GoogleSource, google_from_settings

FIXTURES = Path(__file__).parent / "fixtures" / "serpapi"


def recorded(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


class ReplayAdapter(BaseAdapter):
    """A requests transport that answers with recorded responses, in order."""

    def __init__(self, responses):
        super().__init__()
        self.responses = list(responses)
        self.requests: list[requests.PreparedRequest] = []

    def send(self, request, **kwargs):
        self.requests.append(request)
        if not self.responses:
            raise AssertionError("more requests than recorded responses")
        item = self.responses.pop(0)
        if isinstance(item, Exception):
            raise item
        status, headers, body = item
        resp = requests.Response()
        resp.status_code = status
        resp.reason = {200: "OK", 401: "Unauthorized", 429: "Too Many Requests", 503: "Service Unavailable"}.get(status, "")
        resp.headers.update({"Content-Type": "application/json; charset=utf-8", **headers})
        resp._content = body
        resp.url = request.url
        resp.request = request
        resp.encoding = "utf-8"
        return resp

    def close(self):
        pass

    def params(self, i: int = -1) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(urlsplit(self.requests[i].url).query).items()}


def make_source(responses, **kwargs) -> tuple[GoogleSource, ReplayAdapter, list[float]]:
    client = serpapi.Client(api_key="test-key", timeout=5)
    adapter = ReplayAdapter(responses)
    client.session.mount("https://", adapter)
    sleeps: list[float] = []

    async def asleep(s):
        sleeps.append(s)

    src = GoogleSource("test-key", client=client, sleep=sleeps.append, asleep=asleep, **kwargs)
    return src, adapter, sleeps


def test_answer_box_and_knowledge_graph_come_first_then_organic_by_position():
    src, adapter, _ = make_source([(200, {}, recorded("obama_birthday.json"))])
    ev = src.search("When was Barack Obama born?", k=10)
    assert [e.metadata["kind"] for e in ev[:2]] == ["answer_box", "knowledge_graph"]
    assert "August 4, 1961" in ev[0].text and ev[0].url == "https://en.wikipedia.org/wiki/Barack_Obama"
    assert ev[1].title == "Barack Obama" and "44th U.S. President" in ev[1].text
    assert "children: Malia Ann Obama, Sasha Obama" in ev[1].text
    organic = ev[2:]
    assert [e.metadata["position"] for e in organic] == [1, 2, 3, 4, 5]
    assert organic[0].title == "Barack Obama - Wikipedia"
    assert organic[0].url == "https://en.wikipedia.org/wiki/Barack_Obama"
    assert organic[-1].text == "Barack Obama Presidential Library"  # no snippet: title stands in
    assert all(e.source == "google" for e in ev)
    sent = adapter.params()
    assert sent["engine"] == "google" and sent["q"] == "When was Barack Obama born?"
    assert sent["api_key"] == "test-key" and sent["hl"] == "en"


def test_top_k_overall():
    src, _, _ = make_source([(200, {}, recorded("obama_birthday.json"))])
    ev = src.search("When was Barack Obama born?", k=3)
    assert [e.metadata["kind"] for e in ev] == ["answer_box", "knowledge_graph", "organic"]
    src, _, _ = make_source([(200, {}, recorded("organic_only.json"))])
    ev = src.search("Coke Kahani writers", k=3)
    assert len(ev) == 3 and ev[1].title == "Yasir Hussain - Wikipedia"
    assert "Islamabad" in ev[1].render()


def test_location_language_and_no_cache_are_passed_through():
    src, adapter, _ = make_source(
        [(200, {}, recorded("organic_only.json"))], location="Austin, Texas, United States", hl="fr", gl="us", no_cache=True
    )
    src.search("Coke Kahani writers", k=3)
    sent = adapter.params()
    assert sent["location"] == "Austin, Texas, United States"
    assert (sent["hl"], sent["gl"], sent["no_cache"]) == ("fr", "us", "true")


def test_no_results_payload_is_an_empty_answer_not_an_error():
    src, _, _ = make_source([(200, {}, recorded("no_results.json"))])
    assert src.search("qzxv wplk trnb grshk", k=3) == []


def test_invalid_key_fails_at_once_with_serpapis_message():
    src, adapter, sleeps = make_source([(401, {}, recorded("invalid_key.json"))])
    with pytest.raises(SourceError, match="Invalid API key"):
        src.search("anything", k=3)
    assert len(adapter.requests) == 1 and sleeps == []


def test_out_of_searches_is_not_retried():
    src, adapter, sleeps = make_source([(429, {}, recorded("out_of_searches.json"))])
    with pytest.raises(SourceError, match="run out of searches"):
        src.search("anything", k=3)
    assert len(adapter.requests) == 1 and sleeps == []


def test_error_payload_with_status_200_is_a_source_error():
    src, _, _ = make_source([(200, {}, b'{"search_metadata": {"status": "Error"}, "error": "Unsupported `xx` location."}')])
    with pytest.raises(SourceError, match="Unsupported"):
        src.search("anything", k=3)


def test_429_with_retry_after_then_success():
    src, adapter, sleeps = make_source(
        [(429, {"Retry-After": "2"}, recorded("throughput_limit.json")), (200, {}, recorded("organic_only.json"))]
    )
    ev = src.search("Coke Kahani writers", k=2)
    assert len(ev) == 2 and sleeps == [2.0] and len(adapter.requests) == 2


async def test_async_search_retries_without_blocking():
    src, adapter, sleeps = make_source(
        [(503, {}, b'{"error": "Internal error"}'), (200, {}, recorded("obama_birthday.json"))]
    )
    ev = await src.asearch("When was Barack Obama born?", k=1)
    assert ev[0].metadata["kind"] == "answer_box" and len(sleeps) == 1 and 0.5 <= sleeps[0] <= 0.75


def test_5xx_exhausted_is_a_source_error_after_bounded_attempts():
    src, adapter, sleeps = make_source([(503, {}, b"{}")] * 3, retries=3)
    with pytest.raises(SourceError, match=r"failed after 3 attempts: HTTP 503"):
        src.search("anything", k=3)
    assert len(adapter.requests) == 3 and len(sleeps) == 2
    assert 0.5 <= sleeps[0] <= 0.75 and 1.0 <= sleeps[1] <= 1.25  # exponential backoff, jittered


def test_connection_errors_are_retried():
    src, adapter, sleeps = make_source(
        [requests.exceptions.ConnectionError("connection reset"), (200, {}, recorded("organic_only.json"))]
    )
    assert src.search("Coke Kahani writers", k=1)[0].title == "Coke Kahani - Wikipedia"
    assert len(sleeps) == 1 and 0.5 <= sleeps[0] <= 0.75


def test_missing_key_makes_the_source_unavailable():
    src = GoogleSource(None)
    assert "SERPAPI_API_KEY" in src.unavailable_reason()
    with pytest.raises(SourceError, match="SERPAPI_API_KEY"):
        src.search("anything")
    sources = build_sources(Settings.load(), ["google"])
    assert "google" in sources.unavailable and len(sources) == 0


def test_from_settings_reads_key_and_options(monkeypatch):
    monkeypatch.setenv("SERPAPI_API_KEY", "k-123")
    monkeypatch.setenv("ATOMGRAPH_SERPAPI_GL", "uk")
    monkeypatch.setenv("ATOMGRAPH_SOURCE_RETRIES", "5")
    src = google_from_settings(Settings.load())
    assert src.unavailable_reason() is None
    assert (src.api_key, src.gl, src.hl, src.retries) == ("k-123", "uk", "en", 5)
    assert src.name == "google" and src.kind == "web" and src.description


def test_empty_query_makes_no_request():
    src, adapter, _ = make_source([])
    assert src.search("   ", k=3) == [] and adapter.requests == []


# --- the retry helper on its own -------------------------------------------------------
def test_retry_after_parses_seconds_and_http_dates():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    future = time.time() + 120
    from email.utils import formatdate

    assert 100 < parse_retry_after(formatdate(future, usegmt=True)) <= 121
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


def test_retry_after_is_capped():
    import urllib.error
    from email.message import Message

    headers = Message()
    headers["Retry-After"] = "3600"
    calls, sleeps = [], []

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise urllib.error.HTTPError("http://x", 429, "Too Many Requests", headers, None)
        return "ok"

    assert call_with_retries(flaky, what="x", attempts=3, sleep=sleeps.append, max_retry_after=30) == "ok"
    assert sleeps == [30]


def test_non_transient_errors_are_not_retried():
    sleeps = []

    def bad():
        raise ValueError("malformed")

    with pytest.raises(SourceError, match="x failed: ValueError: malformed"):
        call_with_retries(bad, what="x", attempts=3, sleep=sleeps.append)
    assert sleeps == []


def test_backoff_grows_exponentially_up_to_the_cap_with_bounded_jitter():
    sleeps, calls = [], []

    def down():
        calls.append(1)
        raise TimeoutError("read timed out")

    with pytest.raises(SourceError, match=r"x failed after 6 attempts: timed out"):
        call_with_retries(down, what="x", attempts=6, base_delay=1, max_delay=5, jitter=0.5, sleep=sleeps.append)
    assert len(calls) == 6 and len(sleeps) == 5
    for wait, low in zip(sleeps, [1, 2, 4, 5, 5]):
        assert low <= wait <= min(5, low + 0.5)
    exact = []
    with pytest.raises(SourceError):
        call_with_retries(down, what="x", attempts=4, base_delay=0.5, jitter=0, sleep=exact.append)
    assert exact == [0.5, 1.0, 2.0]


async def test_async_retries_honour_an_http_date_retry_after():
    from email.utils import formatdate

    class Throttled(Exception):
        def __init__(self, headers):
            super().__init__("throttled")
            self.response = type("R", (), {"status_code": 503, "headers": headers, "reason": "Service Unavailable"})()

    sleeps, calls = [], []

    async def asleep(s):
        sleeps.append(s)

    async def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise Throttled({"retry-after": formatdate(time.time() + 12, usegmt=True)})
        if len(calls) == 2:
            raise Throttled({})
        return "ok"

    assert await acall_with_retries(flaky, what="x", attempts=3, sleep=asleep) == "ok"
    assert 10 < sleeps[0] <= 12 and 1.0 <= sleeps[1] <= 1.25  # the date, then the second backoff step

    async def always():
        raise Throttled({"Retry-After": "1"})

    sleeps.clear()
    with pytest.raises(SourceError, match=r"x failed after 2 attempts: HTTP 503 \(Service Unavailable\)"):
        await acall_with_retries(always, what="x", attempts=2, sleep=asleep)
    assert sleeps == [1.0]
