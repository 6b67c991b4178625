"""Bounded retries for calls to knowledge sources, with tenacity.

Transient failures are retried: timeouts, connection errors, HTTP 429 and HTTP 5xx. Between
attempts the wait grows exponentially with random jitter (``base_delay · 2ⁿ⁻¹ + U(0, jitter)``,
at most ``max_delay``), except where the server sent ``Retry-After`` (seconds or an
HTTP-date): then exactly that long, up to ``max_retry_after``. Anything else fails at once.
After ``attempts`` tries the last failure becomes a :class:`~atomgraph.errors.SourceError`
whose message says what went wrong.

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

from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_base, wait_exponential_jitter

from atomgraph.errors import SourceError

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_BASE_DELAY = 0.5
DEFAULT_MAX_DELAY = 8.0
DEFAULT_MAX_RETRY_AFTER = 30.0


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
    if status == 429 or 500 <= status <= 599:
        return Failure(True, reason, parse_retry_after(_header(headers, "Retry-After")))
    return Failure(False, reason)


def classify(exc: BaseException) -> Failure:
    """Judge one exception: retryable (and Retry-After) or final."""
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


class wait_retry_after_or(wait_base):
    """Wait what the failure's ``Retry-After`` asks (capped), else what ``backoff`` says."""

    def __init__(self, judge: Callable[[BaseException], Failure], backoff: wait_base, cap: float):
        self.judge, self.backoff, self.cap = judge, backoff, cap

    def __call__(self, retry_state: RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        asked = self.judge(exc).retry_after if exc is not None else None
        if asked is not None:
            return min(self.cap, asked)
        return self.backoff(retry_state)


class _Policy:
    """One call's retry rules as tenacity arguments, shared by the sync and async runners."""

    def __init__(self, what: str, attempts: int, base_delay: float, max_delay: float, max_retry_after: float,
                 jitter: float | None, judge: Callable[[BaseException], Failure]):
        self.what = what
        self.attempts = max(1, int(attempts))
        self.tries = 0
        self._judge = judge
        self._last: tuple[BaseException, Failure] | None = None
        jitter = base_delay / 2 if jitter is None else jitter
        self.kwargs = dict(
            stop=stop_after_attempt(self.attempts),
            retry=retry_if_exception(lambda e: not isinstance(e, SourceError) and self.judge(e).retryable),
            wait=wait_retry_after_or(
                self.judge, wait_exponential_jitter(multiplier=base_delay, max=max_delay, jitter=jitter), max_retry_after
            ),
            before_sleep=self._log,
            reraise=True,
        )

    def judge(self, exc: BaseException) -> Failure:
        """``judge(exc)``, asked once per exception (the predicate, wait and log all need it)."""
        if self._last is None or self._last[0] is not exc:
            self._last = (exc, self._judge(exc))
        return self._last[1]

    def _log(self, state: RetryCallState) -> None:
        failure = self.judge(state.outcome.exception())
        wait = state.next_action.sleep if state.next_action else 0.0
        log.info("%s: %s; retrying in %.2fs (attempt %d of %d)", self.what, failure.reason, wait,
                 state.attempt_number + 1, self.attempts)

    def give_up(self, exc: Exception) -> SourceError:
        failure = self.judge(exc)
        if failure.retryable:
            n = self.tries
            msg = f"{self.what} failed after {n} attempt{'s' if n != 1 else ''}: {failure.reason}"
        else:
            msg = f"{self.what} failed: {failure.reason}"
        return SourceError(msg)


def call_with_retries(
    fn: Callable[[], T],
    *,
    what: str,
    attempts: int = 3,
    base_delay: float = DEFAULT_BASE_DELAY,
    max_delay: float = DEFAULT_MAX_DELAY,
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
    jitter: float | None = None,
    judge: Callable[[BaseException], Failure] = classify,
    sleep: Callable[[float], Any] = time.sleep,
) -> T:
    """Run ``fn`` up to ``attempts`` times; raise SourceError naming ``what`` when it keeps
    failing. ``jitter`` is the most random seconds added to a backoff (default base_delay/2)."""
    policy = _Policy(what, attempts, base_delay, max_delay, max_retry_after, jitter, judge)
    try:
        for attempt in Retrying(sleep=sleep, **policy.kwargs):
            with attempt:
                policy.tries = attempt.retry_state.attempt_number
                return fn()
    except SourceError:
        raise
    except Exception as exc:  # noqa: BLE001 - judged by the policy
        raise policy.give_up(exc) from exc
    raise AssertionError("unreachable: tenacity re-raises the last failure")  # pragma: no cover


async def acall_with_retries(
    fn: Callable[[], Awaitable[T]],
    *,
    what: str,
    attempts: int = 3,
    base_delay: float = DEFAULT_BASE_DELAY,
    max_delay: float = DEFAULT_MAX_DELAY,
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
    jitter: float | None = None,
    judge: Callable[[BaseException], Failure] = classify,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> T:
    """Async twin of :func:`call_with_retries`: ``fn`` returns an awaitable, waits do not block."""
    policy = _Policy(what, attempts, base_delay, max_delay, max_retry_after, jitter, judge)
    try:
        async for attempt in AsyncRetrying(sleep=sleep, **policy.kwargs):
            with attempt:
                policy.tries = attempt.retry_state.attempt_number
                return await fn()
    except SourceError:
        raise
    except Exception as exc:  # noqa: BLE001 - judged by the policy
        raise policy.give_up(exc) from exc
    raise AssertionError("unreachable: tenacity re-raises the last failure")  # pragma: no cover
