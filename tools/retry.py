"""Bounded retries with exponential backoff for calls to knowledge sources.

Transient failures are retried: timeouts, connection errors, HTTP 429 (waiting as long as
the server's ``Retry-After`` asks, seconds or an HTTP-date, up to a cap) and HTTP 5xx.
Anything else fails at once. After ``attempts`` tries the last failure becomes a
:class:`~atomgraph.errors.SourceError` whose message says what went wrong.

>>> call_with_retries(lambda: fetch(url), what="google search", attempts=3)

``sleep`` is injectable so tests can record the waits instead of sleeping.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import socket
import time
import urllib.error
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable, Mapping, TypeVar

from atomgraph.errors import SourceError

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_BASE_DELAY = 0.5
DEFAULT_MAX_DELAY = 8.0
DEFAULT_MAX_RETRY_AFTER = 30.0


class TransientError(Exception):
    """Raise from a source call to ask for a retry (e.g. a payload that says "try later")."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True)
class Failure:
    """How a failed attempt is judged: retry or not, how long the server asked us to wait."""

    retryable: bool
    reason: str
    retry_after: float | None = None


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP-date), or None."""
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


def _header(headers: Any, name: str) -> str | None:
    if headers is None:
        return None
    try:
        value = headers.get(name)
    except AttributeError:
        return None
    if value is None and isinstance(headers, Mapping):
        lowered = {str(k).lower(): v for k, v in headers.items()}
        value = lowered.get(name.lower())
    return value


def _judge_status(status: int, headers: Any, detail: str = "") -> Failure:
    reason = f"HTTP {status}" + (f" ({detail})" if detail else "")
    if status == 429:
        return Failure(True, reason, parse_retry_after(_header(headers, "Retry-After")))
    if 500 <= status <= 599:
        return Failure(True, reason, parse_retry_after(_header(headers, "Retry-After")))
    return Failure(False, reason)


def classify(exc: BaseException) -> Failure:
    """Judge one exception: retryable (and Retry-After) or final."""
    if isinstance(exc, TransientError):
        return Failure(True, str(exc), exc.retry_after)
    # HTTP errors first: several libraries' HTTP errors are also OSErrors.
    if isinstance(exc, urllib.error.HTTPError):
        return _judge_status(exc.code, exc.headers, str(exc.reason or ""))
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and status > 0:
        return _judge_status(status, getattr(response, "headers", None), getattr(response, "reason", "") or "")
    name = type(exc).__name__
    module = type(exc).__module__ or ""
    if module.startswith("SPARQLWrapper") and name == "EndPointInternalError":
        return Failure(True, "HTTP 500 (endpoint internal error)")
    if isinstance(exc, (TimeoutError, socket.timeout, asyncio.TimeoutError)) or "Timeout" in name:
        return Failure(True, f"timed out ({exc})")
    if isinstance(exc, urllib.error.URLError):
        inner = exc.reason
        if isinstance(inner, (TimeoutError, socket.timeout)):
            return Failure(True, f"timed out ({inner})")
        return Failure(True, f"connection failed ({inner})")
    if isinstance(exc, ConnectionError) or "ConnectionError" in name or "ConnectError" in name:
        return Failure(True, f"connection failed ({exc})")
    if isinstance(exc, OSError):
        return Failure(True, f"network error ({exc})")
    return Failure(False, f"{name}: {exc}")


def backoff_delay(attempt: int, base_delay: float, max_delay: float) -> float:
    """Delay before retry number ``attempt`` (1-based): base * 2**(attempt-1), capped."""
    return min(max_delay, base_delay * (2 ** (attempt - 1)))


def _next_wait(failure: Failure, attempt: int, base_delay: float, max_delay: float, max_retry_after: float) -> float:
    if failure.retry_after is not None:
        return min(max_retry_after, failure.retry_after)
    return backoff_delay(attempt, base_delay, max_delay)


def _give_up(what: str, attempt: int, failure: Failure, exc: BaseException) -> SourceError:
    if failure.retryable:
        msg = f"{what} failed after {attempt} attempt{'s' if attempt != 1 else ''}: {failure.reason}"
    else:
        msg = f"{what} failed: {failure.reason}"
    err = SourceError(msg)
    err.__cause__ = exc
    return err


def call_with_retries(
    fn: Callable[[], T],
    *,
    what: str,
    attempts: int = 3,
    base_delay: float = DEFAULT_BASE_DELAY,
    max_delay: float = DEFAULT_MAX_DELAY,
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
    judge: Callable[[BaseException], Failure] = classify,
    sleep: Callable[[float], Any] = time.sleep,
) -> T:
    """Run ``fn`` up to ``attempts`` times; raise SourceError naming ``what`` when it keeps failing."""
    attempts = max(1, int(attempts))
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except SourceError:
            raise
        except Exception as exc:  # noqa: BLE001 - judged below
            failure = judge(exc)
            if not failure.retryable or attempt >= attempts:
                raise _give_up(what, attempt, failure, exc) from exc
            wait = _next_wait(failure, attempt, base_delay, max_delay, max_retry_after)
            log.info("%s: %s; retrying in %.2fs (attempt %d of %d)", what, failure.reason, wait, attempt + 1, attempts)
            sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


async def acall_with_retries(
    fn: Callable[[], Awaitable[T]],
    *,
    what: str,
    attempts: int = 3,
    base_delay: float = DEFAULT_BASE_DELAY,
    max_delay: float = DEFAULT_MAX_DELAY,
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
    judge: Callable[[BaseException], Failure] = classify,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> T:
    """Async twin of :func:`call_with_retries`: ``fn`` returns an awaitable, waits do not block."""
    attempts = max(1, int(attempts))
    for attempt in range(1, attempts + 1):
        try:
            return await fn()
        except SourceError:
            raise
        except Exception as exc:  # noqa: BLE001 - judged below
            failure = judge(exc)
            if not failure.retryable or attempt >= attempts:
                raise _give_up(what, attempt, failure, exc) from exc
            wait = _next_wait(failure, attempt, base_delay, max_delay, max_retry_after)
            log.info("%s: %s; retrying in %.2fs (attempt %d of %d)", what, failure.reason, wait, attempt + 1, attempts)
            await sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover
