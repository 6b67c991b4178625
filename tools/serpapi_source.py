"""Google web search through SerpAPI (the ATOMR paper's web source).

One call to SerpAPI's Google engine; the answer box and knowledge graph (Google's own
direct answers) come first, then organic results (title, snippet, link), top ``k`` overall.

The HTTP layer is the official ``serpapi`` client; pass your own ``client`` (for instance a
``serpapi.Client`` whose ``requests`` session replays recorded responses) to replace it.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, Mapping

from atomgraph.errors import SourceError
from atomgraph.settings import Settings
from atomgraph.state.run import Evidence
from atomgraph.tools.base import KnowledgeSource
from atomgraph.tools.retry import Failure, acall_with_retries, call_with_retries, classify

# SerpAPI reports "no results" as an error payload; it is an empty answer, not a failure.
NO_RESULTS_MARKERS = ("hasn't returned any results", "has not returned any results", "no results found")
# Errors that stay errors however often one asks.
_FINAL_429_MARKERS = ("run out of searches", "out of searches")


class GoogleSource(KnowledgeSource):
    name = "google"
    description = "Google web search (via SerpAPI): current events, news and facts from the open web."
    kind = "web"

    def __init__(
        self,
        api_key: str | None = None,
        *,
        location: str | None = None,
        hl: str | None = "en",
        gl: str | None = None,
        no_cache: bool = False,
        timeout: float = 20.0,
        retries: int = 3,
        client: Any = None,
        sleep: Callable[[float], Any] = time.sleep,
        asleep: Callable[[float], Any] = asyncio.sleep,
    ):
        self.api_key = api_key
        self.location = location
        self.hl = hl
        self.gl = gl
        self.no_cache = no_cache
        self.timeout = timeout
        self.retries = retries
        self._client = client
        self._sleep = sleep
        self._asleep = asleep

    # ------------------------------------------------------------------------------------
    def unavailable_reason(self) -> str | None:
        if not self.api_key:
            return "no SerpAPI key: set SERPAPI_API_KEY (or serpapi_api_key in atomgraph.toml) to search Google"
        return None

    @property
    def client(self):
        if self._client is None:
            import serpapi

            self._client = serpapi.Client(api_key=self.api_key, timeout=self.timeout)
        return self._client

    def params(self, query: str, k: int) -> dict[str, Any]:
        """The SerpAPI request parameters for ``query`` (the key is added by the client)."""
        params: dict[str, Any] = {"engine": "google", "q": query, "num": max(10, k)}
        if self.location:
            params["location"] = self.location
        if self.hl:
            params["hl"] = self.hl
        if self.gl:
            params["gl"] = self.gl
        if self.no_cache:
            params["no_cache"] = "true"
        return params

    def _fetch(self, params: dict[str, Any]) -> Mapping[str, Any]:
        try:
            result = self.client.search(dict(params))
        except Exception as exc:
            message = _serpapi_message(exc)
            if message and _means_no_results(message):
                return {"error": message}  # an empty answer, whatever the HTTP status
            raise
        if isinstance(result, str):
            raise SourceError("google search failed: SerpAPI returned text, not JSON")
        return result.as_dict() if hasattr(result, "as_dict") else dict(result)

    def _check_usable(self, query: str) -> str | None:
        reason = self.unavailable_reason()
        if reason:
            raise SourceError(f"google: {reason}")
        query = (query or "").strip()
        return query or None

    # ------------------------------------------------------------------------------------
    def search(self, query: str, k: int = 3) -> list[Evidence]:
        q = self._check_usable(query)
        if q is None:
            return []
        params = self.params(q, k)
        payload = call_with_retries(
            lambda: self._fetch(params), what="google search", attempts=self.retries, judge=_judge, sleep=self._sleep
        )
        return results_to_evidence(payload, k)

    async def asearch(self, query: str, k: int = 3) -> list[Evidence]:
        q = self._check_usable(query)
        if q is None:
            return []
        params = self.params(q, k)
        payload = await acall_with_retries(
            lambda: asyncio.to_thread(self._fetch, params),
            what="google search",
            attempts=self.retries,
            judge=_judge,
            sleep=self._asleep,
        )
        return results_to_evidence(payload, k)


def _serpapi_message(exc: BaseException) -> str | None:
    msg = getattr(exc, "error", None)
    if msg:
        return str(msg)
    response = getattr(exc, "response", None)
    if response is not None:
        try:
            body = response.json()
        except Exception:  # noqa: BLE001 - body is not JSON
            return None
        if isinstance(body, Mapping) and body.get("error"):
            return str(body["error"])
    return None


def _means_no_results(message: str) -> bool:
    return any(m in message.lower() for m in NO_RESULTS_MARKERS)


def _judge(exc: BaseException) -> Failure:
    """The generic judgement, with SerpAPI's own error message and its final 429s."""
    base = classify(exc)
    message = _serpapi_message(exc)
    if message is None:
        return base
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status == 429 and any(m in message.lower() for m in _FINAL_429_MARKERS):
        return Failure(False, f"HTTP 429: {message}")
    return Failure(base.retryable, f"{base.reason}: {message}", base.retry_after)


def results_to_evidence(payload: Mapping[str, Any], k: int) -> list[Evidence]:
    """Evidence from one SerpAPI Google response: answer box, knowledge graph, organic; top ``k``."""
    if not isinstance(payload, Mapping):
        raise SourceError("google search failed: SerpAPI returned something that is not a JSON object")
    error = payload.get("error")
    if error:
        if _means_no_results(str(error)):
            return []
        raise SourceError(f"google search failed: SerpAPI said: {error}")
    status = (payload.get("search_metadata") or {}).get("status")
    if status and str(status).lower() == "error":
        raise SourceError("google search failed: SerpAPI reported status 'Error' without a message")

    out: list[Evidence] = []
    ab = payload.get("answer_box")
    if isinstance(ab, Mapping):
        ev = _answer_box(ab)
        if ev:
            out.append(ev)
    kg = payload.get("knowledge_graph")
    if isinstance(kg, Mapping):
        ev = _knowledge_graph(kg)
        if ev:
            out.append(ev)
    organic = payload.get("organic_results") or []
    organic = sorted(
        (r for r in organic if isinstance(r, Mapping)),
        key=lambda r: r.get("position") if isinstance(r.get("position"), (int, float)) else 1e9,
    )
    for r in organic:
        snippet = _text(r.get("snippet"))
        title = _text(r.get("title"))
        if not (snippet or title):
            continue
        out.append(
            Evidence(
                title=title,
                text=snippet or title,
                source="google",
                url=r.get("link"),
                id=r.get("link"),
                metadata={"kind": "organic", "position": r.get("position"), "date": r.get("date")},
            )
        )
    return out[: max(0, k)]


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(_text(v) for v in value).strip()
    return " ".join(str(value).split())


def _answer_box(ab: Mapping[str, Any]) -> Evidence | None:
    parts = []
    for key in ("answer", "result", "snippet"):
        if ab.get(key):
            parts.append(_text(ab[key]))
    if ab.get("snippet_highlighted_words"):
        words = _text(ab["snippet_highlighted_words"])
        if words and all(words not in p for p in parts):
            parts.insert(0, words)
    if ab.get("list"):
        parts.append("; ".join(_text(x) for x in ab["list"]))
    if not parts:
        return None
    title = _text(ab.get("title")) or "Google answer"
    return Evidence(
        title=title,
        text=" — ".join(dict.fromkeys(p for p in parts if p)),
        source="google",
        url=ab.get("link"),
        id=ab.get("link") or "answer_box",
        metadata={"kind": "answer_box", "type": ab.get("type")},
    )


_KG_SKIP = {
    "title", "type", "description", "source", "kgmid", "knowledge_graph_search_link", "serpapi_knowledge_graph_search_link",
    "header_images", "thumbnail", "image", "website", "profiles", "people_also_search_for", "see_results_about",
}


def _knowledge_graph(kg: Mapping[str, Any]) -> Evidence | None:
    title = _text(kg.get("title"))
    parts = []
    if kg.get("type"):
        parts.append(_text(kg["type"]))
    if kg.get("description"):
        parts.append(_text(kg["description"]))
    facts = []
    for key, value in kg.items():
        if key in _KG_SKIP or key.endswith("_links") or key.endswith("_link"):
            continue
        if isinstance(value, (str, int, float)):
            facts.append(f"{key.replace('_', ' ')}: {_text(value)}")
    if facts:
        parts.append("; ".join(facts))
    if not (title or parts):
        return None
    source = kg.get("source") if isinstance(kg.get("source"), Mapping) else {}
    return Evidence(
        title=title or "Google knowledge graph",
        text=". ".join(p for p in parts if p) or title,
        source="google",
        url=source.get("link") or kg.get("website"),
        id=kg.get("kgmid") or title,
        metadata={"kind": "knowledge_graph"},
    )


def google_from_settings(settings: Settings) -> GoogleSource:
    return GoogleSource(
        settings.serpapi_api_key,
        location=settings.serpapi_location,
        hl=settings.serpapi_hl,
        gl=settings.serpapi_gl,
        no_cache=settings.serpapi_no_cache,
        timeout=settings.source_timeout,
        retries=settings.source_retries,
    )
