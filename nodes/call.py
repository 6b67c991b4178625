"""The model call: stage → model (with its constraint) → recorder → parser.

:func:`call_stage` is every stage call of every method (through
:meth:`MethodRuntime.ask <atomgraph.nodes.runtime.MethodRuntime.ask>`, which picks the model,
its cap, temperature and constraint). It renders the stage's prompt, makes one bounded model
request (:func:`model_call`: the run's deadline, the call recorded by
:class:`~atomgraph.nodes.recorder.CallRecorder`, the reply cut at the cap), reads the reply with
the stage's parser (:func:`read_reply`: the constraint's reply form, the answer contract) and
writes the reply to the response cache only when the stage could read it. A failed call, a
refused constraint or an unreadable reply is data (:class:`StageResult`), never an exception.

ReAct's agent makes its model calls inside LangChain's agent loop: its middleware runs each of
them through the same :func:`model_call` / :func:`model_call_sync` under the same recorder.
:class:`RunBounds` is a run's circuit breaker and deadline check before a call.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs

from atomgraph import cache as reply_cache
from atomgraph.models import message_text
from atomgraph.nodes.recorder import CallRecorder, describe_error
from atomgraph.nodes.replies import cut_reply, ended_for_length, whole_inside
from atomgraph.nodes.sync import call_model, wait_in_daemon_thread
from atomgraph.prompts.answer_contract import AnswerRefused, answer_texts, cut_note, hold_to_question, refusal_reason
from atomgraph.prompts.constraints import Applied, Constraint, unwrap_reply
from atomgraph.prompts.stage import Stage
from atomgraph.state.usage import LLMCall


@dataclass
class StageResult:
    """One stage call: the parsed value (None when unusable), the raw text, the usage record,
    the reply message and how its constraint applied."""

    value: Any
    text: str | None
    call: LLMCall
    message: Any = None
    applied: Applied | None = None

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


def deadline_of(config: RunnableConfig | None) -> float | None:
    """The run's deadline (``configurable["deadline"]``, a ``time.time()`` value), if any."""
    value = ((config or {}).get("configurable") or {}).get("deadline")
    return float(value) if isinstance(value, (int, float)) else None


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
    answer; the stage's ``reread`` may find the answer after a restated question), and the cut rule
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


def _held_cut(value: Any, text: str, rec: LLMCall) -> Any:
    """A cut reply is no answer: a value holding answers is kept only when each lies whole inside the
    reply (its line ended before the cut); a value holding none (a plan, a pick, a list) is a complete
    structure the parser found inside the cut reply, kept. Either way the record says ``cut``."""
    answers = answer_texts(value)
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
async def call_stage(stage: Stage, variables: dict[str, Any], model: Any, config: RunnableConfig | None,
                     recorder: CallRecorder, cap: int | None, *, constraint: Constraint | None = None,
                     applied: Applied | None = None, bound_s: float | None = None) -> StageResult:
    """stage → model (with constraint) → recorder → parser: one call of ``stage`` on ``variables``
    with ``model`` (the stage's capped, possibly constrained model); only a reply the stage read
    is written to the response cache."""
    run_config = merge_configs(config, {"tags": stage.tags, "run_name": stage.name, "callbacks": [recorder],
                                        "metadata": {"atomgraph_role": recorder.defaults["role"],
                                                     "atomgraph_cap": cap}})
    with reply_cache.holding() as pending, reply_cache.refreshing(refresh_of(config)):
        reply = await model_call(lambda: call_model(model, stage.messages(variables), run_config),
                                 recorder, cap, deadline_of(config), bound_s=bound_s)
        if reply.failed:
            return StageResult(None, None, reply.call, applied=applied)
        result = read_reply(stage, variables, reply, cap, constraint, applied)
        if result.ok and result.call.parse_error is None:
            await asyncio.to_thread(reply_cache.keep, pending, result.message)  # SQLite, off the event loop
    _describe_constraint(result.call, constraint, applied)
    return result
