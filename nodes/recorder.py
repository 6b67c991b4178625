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
- server-reported usage checked (:func:`usage_problem`): a count no tokenizer can give for the
  text sent or received (more tokens than UTF-8 bytes, or fewer than one per 32 characters) is
  kept as reported and flagged in ``usage_flag``;
- why the reply ended: the server's ``finish_reason`` (``"length"``: cut for length);
- a cache hit: the reply carries ``response_metadata["atomgraph_cache_hit"]`` (set by
  :mod:`atomgraph.cache`); such a call is recorded ``cached=True`` and counts no tokens
  or dollars in reports.

No method writes its own record.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from atomgraph.cache import CACHE_HIT_KEY, CUT_FROM_KEY  # set on replayed and cut replies
from atomgraph.state.usage import LLMCall


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
        self._sent: dict[UUID, str] = {}  # the text of each open call's messages (for the usage check)
        self._lock = threading.Lock()

    # --- LangChain callbacks ----------------------------------------------------------------
    def on_chat_model_start(self, serialized: dict[str, Any], messages: list, *, run_id: UUID,
                            tags: list[str] | None = None, metadata: dict[str, Any] | None = None,
                            **kwargs: Any) -> None:
        self._start(run_id, tags, metadata, kwargs.get("invocation_params") or {})
        with self._lock:
            self._sent[run_id] = "\n".join(_text(m) for batch in messages for m in batch)

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
        if usage:
            reasoning = int(((usage.get("output_token_details") or {}).get("reasoning") or 0))
            with self._lock:
                sent = self._sent.pop(run_id, "")
            rec.usage_flag = usage_problem(sent, _text(msg), rec.prompt_tokens, rec.completion_tokens - reasoning)
        meta = getattr(msg, "response_metadata", None) or {}
        rec.cached = bool(meta.get(CACHE_HIT_KEY))
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


# any tokenizer in use (byte-level BPE, SentencePiece with byte fallback) gives at most one token
# per UTF-8 byte (plus a few per message for the chat template) and at least one per 32 characters
TEMPLATE_TOKENS_PER_CALL = 64
CHARS_PER_TOKEN_MAX = 32


def usage_problem(sent: str, reply: str, prompt_tokens: int, completion_tokens: int) -> str | None:
    """Why server-reported usage cannot be the tokenizer's count of ``sent`` / ``reply`` (None
    when it can): the bounds any tokenizer keeps, with a tolerance for the chat template."""
    problems = []
    for what, text, n, slack in (("prompt", sent, prompt_tokens, TEMPLATE_TOKENS_PER_CALL),
                                 ("completion", reply, completion_tokens, 8)):
        if not text:
            continue
        most = len(text.encode("utf-8", "surrogatepass")) + slack
        least = len(text) // CHARS_PER_TOKEN_MAX
        if n > most or n < least:
            problems.append(f"{what} tokens {n} for {len(text)} characters (a tokenizer gives {least} to {most})")
    return "; ".join(problems) or None


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
