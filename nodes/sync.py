"""The sync/async bridge: async nodes run from ``graph.invoke`` as well as ``graph.ainvoke``.

- :class:`MethodStateGraph`: the ``StateGraph`` every method builds; an ``async def`` node added to
  it runs from both (:func:`dual`);
- :func:`dual`: an async node usable from both (sync runs share one event loop, :func:`sync_loop`,
  so pooled async clients keep working);
- :func:`run_sync`: a coroutine run to completion from synchronous code;
- :func:`call_model`: a model (or a Runnable around one) called the way the run calls it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import os
import threading
import time
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.graph import START, StateGraph
from langgraph.runtime import get_runtime

# --- sync calls of async nodes -------------------------------------------------------------
# A sync ``graph.invoke`` / ``batch`` / ``stream`` runs every async node on ONE event loop that
# lives as long as the process (in a daemon thread), never a fresh loop per node: pooled async
# clients (ChatOpenAI's httpx pool, kept-alive connections) are bound to the loop that first
# used them, and a loop per node closed those under the next call ("Event loop is closed").
#
# Model calls in a sync run go through the model's own sync call (``invoke``, in a worker
# thread: :func:`call_model`), so a sync run never binds the async client's pool to its loop;
# a later ``await graph.ainvoke`` on the caller's own loop (the next notebook cell) finds the
# pool as it left it.
_SYNC_RUN: contextvars.ContextVar[bool] = contextvars.ContextVar("atomgraph_sync_run", default=False)
_SYNC_LOOP: asyncio.AbstractEventLoop | None = None
_SYNC_LOOP_PID: int | None = None
_SYNC_LOOP_LOCK = threading.Lock()


def sync_loop() -> asyncio.AbstractEventLoop:
    """The event loop that runs async nodes for sync graph calls (started on first use)."""
    global _SYNC_LOOP, _SYNC_LOOP_PID
    with _SYNC_LOOP_LOCK:
        # a forked child has the parent's loop object but not its thread: it starts its own
        if _SYNC_LOOP is None or _SYNC_LOOP.is_closed() or _SYNC_LOOP_PID != os.getpid():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="atomgraph-sync-loop", daemon=True).start()
            _SYNC_LOOP, _SYNC_LOOP_PID = loop, os.getpid()
        return _SYNC_LOOP


def run_sync(coro):
    """Run a coroutine to completion from synchronous code, on :func:`sync_loop`, in the
    caller's context (LangGraph's run config and ``get_runtime()`` travel in context
    variables). Works where an event loop is already running in the calling thread (a
    notebook cell calling ``graph.invoke``); from the sync loop's own thread (a sync call
    nested in an async node) it runs the coroutine on a loop of its own in a helper thread,
    as waiting on the loop from inside it would never end."""
    loop = sync_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    ctx = contextvars.copy_context()
    ctx.run(_SYNC_RUN.set, True)
    if running is loop:  # its own loop's HTTP clients closed with it (atomgraph.loop_clients)
        from atomgraph.loop_clients import closing_clients

        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(ctx.run, asyncio.run, closing_clients(coro)).result()
    done: concurrent.futures.Future = concurrent.futures.Future()
    tasks: list[asyncio.Task] = []

    def copy_outcome(task: asyncio.Task) -> None:
        if task.cancelled():
            done.cancel()
        elif task.exception() is not None:
            done.set_exception(task.exception())
        else:
            done.set_result(task.result())

    def start() -> None:
        task = loop.create_task(coro, context=ctx)
        tasks.append(task)
        task.add_done_callback(copy_outcome)

    loop.call_soon_threadsafe(start)
    try:
        return done.result()
    except BaseException:  # the caller gave up (KeyboardInterrupt, a cancelled sync run): stop the node too
        if tasks and not tasks[0].done():
            loop.call_soon_threadsafe(tasks[0].cancel)
        raise


async def call_model(runnable: Any, inp: Any, config: RunnableConfig | None = None) -> Any:
    """Call a model (or a Runnable around one): ``ainvoke`` in an async run; in a sync run its
    sync ``invoke`` in a worker thread (the model's sync client, bound to no event loop)."""
    if _SYNC_RUN.get():
        return await in_daemon_thread(runnable.invoke, inp, config)
    return await runnable.ainvoke(inp, config=config)


async def at_once(*aws: Any) -> list[Any]:
    """The results of ``aws`` (coroutines), run at once, in order (``asyncio.gather``); a lone one is
    awaited in place, with no task of its own (a task and a loop turn more per step, on every step
    that retrieves or asks once)."""
    if len(aws) == 1:
        return [await aws[0]]
    return list(await asyncio.gather(*aws))


def wait_in_daemon_thread(fn, timeout: float | None) -> Any:
    """``fn()`` in a daemon thread of its own, in the caller's context, waited for at most
    ``timeout`` seconds (then TimeoutError; the call is left behind, as in :func:`in_daemon_thread`)."""
    if timeout is None:
        return fn()
    done = threading.Event()
    box: dict[str, Any] = {}
    ctx = contextvars.copy_context()

    def run() -> None:
        try:
            box["value"] = ctx.run(fn)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            box["error"] = exc
        done.set()

    threading.Thread(target=run, name="atomgraph-model-call", daemon=True).start()
    if not done.wait(max(0.0, timeout)):
        raise TimeoutError(f"no reply within {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


async def in_daemon_thread(fn, *args: Any) -> Any:
    """``fn(*args)`` in a daemon thread of its own, in the caller's context. Unlike
    ``asyncio.to_thread`` (a pool the interpreter joins at exit), a call the caller stopped
    waiting for (a deadline, a whole-request bound) is left behind: a server that hangs or
    drips cannot hold the process after its answer."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    ctx = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if not future.done():
            future.set_result(value) if ok else future.set_exception(value)

    def run() -> None:
        try:
            value = ctx.run(fn, *args)
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller
            ok, value = False, exc
        else:
            ok = True
        if not loop.is_closed():
            loop.call_soon_threadsafe(settle, ok, value)

    threading.Thread(target=run, name="atomgraph-model-call", daemon=True).start()
    return await future


# The grace a node has past the run's deadline to finish with what it has (model calls are refused
# at the deadline itself); a node still running at deadline + grace is stopped (DeadlineExceeded).
DEADLINE_GRACE_S = 5.0


from atomgraph.errors import DeadlineExceeded  # noqa: E402,F401  (raised here; defined with the errors)


def deadline_of(config: RunnableConfig | None, context: Any = None) -> float | None:
    """The run's deadline (a ``time.time()`` value), if any: ``configurable["deadline"]`` where the
    run sets one, else the default its context stamped when the run started (the settings'
    ``question_timeout`` from then, question-answering graphs: ``state/run.py``'s
    ``context_with_defaults``). ``context``: the run's context, where the caller holds it."""
    value = ((config or {}).get("configurable") or {}).get("deadline")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if context is None:
        try:
            context = get_runtime().context
        except (RuntimeError, KeyError, AttributeError):  # outside a graph run
            return None
    return getattr(context, "_deadline", None)


def bounded(afunc):
    """``afunc`` (an async node) stopped at the run's deadline plus :data:`DEADLINE_GRACE_S`: the fence
    that bounds a method's wall time whatever a node does (an agent loop, decoding, a solver)."""
    name = getattr(afunc, "__name__", "node")

    async def node(inp, config: RunnableConfig):
        deadline = deadline_of(config)
        if deadline is None:
            return await afunc(inp, config)
        try:  # a timeout on this task, not a task of its own per node (asyncio.wait_for)
            async with asyncio.timeout(max(0.0, deadline + DEADLINE_GRACE_S - time.time())):
                return await afunc(inp, config)
        except (asyncio.TimeoutError, TimeoutError) as exc:
            if time.time() < deadline + DEADLINE_GRACE_S:
                raise  # a timeout of the node's own
            raise DeadlineExceeded(f"deadline: node {name!r} was still running {DEADLINE_GRACE_S:g} s after the "
                                   "question's deadline and was stopped") from exc

    node.__name__ = name
    return node


class Node(Runnable[Any, Any]):
    """A graph node with both call forms: ``func`` in a sync run, ``afunc`` in an async one, each
    with the run config LangGraph hands the node. LangGraph already traces every node as a run;
    a :class:`~langchain_core.runnables.RunnableLambda` around it would add a second run per node
    and inspect the function's signature on every call (both per step, which a loaded machine
    multiplies)."""

    def __init__(self, func, afunc, name: str):
        self.func, self.afunc, self.name = func, afunc, name

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:  # noqa: A002
        config = ensure_config(config)
        token = var_child_runnable_config.set(config)  # get_config() / get_runtime() inside read it
        try:
            return self.func(input, config)
        finally:
            var_child_runnable_config.reset(token)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:  # noqa: A002
        # the config LangGraph hands an async node is the task's own, whole (as LangGraph's own nodes
        # take it: no ensure_config copy per step); a model call made inside ensures its own
        config = ensure_config() if config is None else config
        token = var_child_runnable_config.set(config)
        try:
            return await self.afunc(input, config)
        finally:
            var_child_runnable_config.reset(token)


def dual(afunc) -> Node:
    """An async node usable from ``graph.ainvoke`` (on the caller's loop) as well as from
    ``graph.invoke`` / ``batch`` / ``stream`` (on :func:`sync_loop`, the one loop of sync runs),
    bounded by the run's deadline (:func:`bounded`)."""
    afunc = bounded(afunc)

    def func(inp, config: RunnableConfig):
        return run_sync(afunc(inp, config))

    return Node(func, afunc, afunc.__name__)


def on_loop(func) -> Node:
    """A quick sync node (no I/O) run where its run runs: on the event loop in an async run, in the
    caller's thread in a sync one. LangGraph hands a plain sync node of an async run to a worker
    thread; that hand-off costs more than such a node, and a loaded machine multiplies it."""
    if "config" not in inspect.signature(func).parameters:
        plain = func

        def func(inp, config: RunnableConfig):  # noqa: F811 - the node's one calling form
            return plain(inp)

        func.__name__ = plain.__name__

    async def afunc(inp, config: RunnableConfig):
        return func(inp, config)

    return Node(func, afunc, func.__name__)


class MethodStateGraph(StateGraph):
    """The ``StateGraph`` of a method: an ``async def`` node added to it is added as :func:`dual`
    (usable from ``invoke`` and ``ainvoke``, bounded by the run's deadline); other nodes as given.
    With a ``door`` (``door(state, config)``, raising for a run that cannot start), the edge from
    ``START`` is a conditional edge through it, so every run of the compiled graph, LangGraph
    Server's included, passes it before its first node
    (:meth:`~atomgraph.nodes.runtime.MethodRuntime.door`)."""

    def __init__(self, *args: Any, door: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.door = door

    def add_edge(self, start_key: Any, end_key: str) -> "MethodStateGraph":  # type: ignore[override]
        if start_key != START or self.door is None:
            return super().add_edge(start_key, end_key)
        check = self.door

        def door(state: Any, config: RunnableConfig) -> str:
            check(state, config)
            return end_key

        return self.add_conditional_edges(START, on_loop(door), [end_key])

    def add_node(self, node: Any, action: Any = None, **kwargs: Any) -> "MethodStateGraph":  # type: ignore[override]
        if action is None and inspect.iscoroutinefunction(node):  # add_node(afunc): named after it
            node, action = node.__name__, node
        if inspect.iscoroutinefunction(action):
            action = dual(action)
        return super().add_node(node, action, **kwargs)
