"""``eval run --workers N``: the questions of one run answered in N processes.

The run's own process keeps what makes a run resumable: it holds the run directory's lock,
reads the records already written, decides which questions are left, and is the only writer of
``predictions.jsonl`` (one ``write`` per record, as with one process). Each worker is a fresh
Python process (``multiprocessing`` *spawn*) that builds the method's graph from the run's
settings, model and sources, and answers the questions it is handed, at most its share of the
run's concurrency at a time (what its start loaded frozen, ``gc.freeze``, as the command line
freezes its own start); a finished question's record goes back to the run's process,
which writes it and hands that worker the next question. So every record is written once, by
one process, under the one lock, and the rules of a rerun are those of a one-process run:

- the run's process killed (``kill -9``): each worker sees its pipe close and ends at once; the
  records written are whole, the questions in flight are not recorded, and a rerun of the same
  command runs exactly those left;
- a worker killed: the run goes on in the others; the questions that worker had in flight are
  not recorded, named in a warning and counted (:attr:`PoolOutcome.unfinished`), the run exits
  1 and a rerun runs them.

A worker gets the model and sources as objects (pickled) or builds them from the settings;
objects that cannot be sent to another process (a client holding a connection) are refused
before anything starts, naming which (:func:`check_sendable`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import pickle
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from atomgraph.errors import ConfigError

log = logging.getLogger(__name__)

MAX_WORKERS = 32
READY_TIMEOUT_S = 600.0  # a worker builds its graph (imports, embedding model) before its first question


@dataclass
class PoolOutcome:
    """What the workers did: the records received (each written once by the caller), the questions
    left unrecorded because their worker ended, and why each worker that ended early did."""

    records: list[dict] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    workers: int = 0
    runtimes: list[dict] = field(default_factory=list)  # what ran each worker's local embedding models, each once


def shares(concurrency: int, workers: int) -> list[int]:
    """Each worker's part of the run's concurrency (questions in flight at once, in all)."""
    return [concurrency // workers + (1 if i < concurrency % workers else 0) for i in range(workers)]


def check_sendable(**objects: Any) -> None:
    """ConfigError naming each object a worker process cannot receive (it does not pickle)."""
    bad = []
    for name, obj in objects.items():
        if obj is None:
            continue
        try:
            pickle.dumps(obj)
        except Exception as exc:  # noqa: BLE001 - any pickling failure means it cannot be sent
            bad.append(f"the {name} ({type(obj).__name__}: {type(exc).__name__})")
    if bad:
        raise ConfigError(f"--workers runs the questions in other processes, which cannot receive {' and '.join(bad)}; "
                          "name the model and sources by name (--model NAME, --sources a,b; each worker builds its "
                          "own), or run with --workers 1")


# --- a worker --------------------------------------------------------------------------------

def _worker_main(tasks, results, spec: dict) -> None:
    """A worker process: build the graph, then answer each question handed over ``tasks`` and send
    its record back over ``results``. The run's process gone (a closed pipe): end at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's process's to handle
    from contextlib import ExitStack

    from atomgraph.environment import explicit_data_dir, sealed_environment
    from atomgraph.progress import pause_collector, started

    pause_collector()  # as the command line's start: what the warm-up and the graph load lives for the whole run

    with ExitStack() as stack:
        if spec.get("sealed"):
            stack.enter_context(sealed_environment())
        if spec.get("data_dir"):
            stack.enter_context(explicit_data_dir(spec["data_dir"]))
        try:
            runtimes = spec["warm"]() if spec.get("warm") else []
            graph = spec["build"]()
        except BaseException as exc:  # noqa: BLE001 - said to the run's process, which records it
            _send(results, ("failed", f"{type(exc).__name__}: {exc}"[:1000]))
            return
        started()  # frozen (gc.freeze): a collection scans what the questions make, not the models and indexes
        _send(results, ("ready", os.getpid(), runtimes))
        asyncio.run(_serve(tasks, results, graph, spec["answer"]))


def _send(conn, message: tuple) -> None:
    try:
        conn.send(message)
    except (BrokenPipeError, EOFError, OSError):
        os._exit(3)  # the run's process is gone: nothing of this worker can be recorded


async def _serve(tasks, results, graph, answer: Callable) -> None:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue = asyncio.Queue()

    def read() -> None:
        while True:
            try:
                message = tasks.recv()
            except (EOFError, OSError):
                os._exit(3)  # the run's process is gone (killed): end now, recording nothing
            loop.call_soon_threadsafe(inbox.put_nowait, message)
            if message is None:
                return

    threading.Thread(target=read, name="eval-worker-inbox", daemon=True).start()
    running: set[asyncio.Task] = set()

    async def one(example) -> None:
        from atomgraph.evaluation.records import jsonable

        record = await answer(graph, example)
        _send(results, ("record", example.id, jsonable(record)))

    while True:
        example = await inbox.get()
        if example is None:
            break
        task = asyncio.create_task(one(example))
        running.add(task)
        task.add_done_callback(running.discard)
    if running:
        await asyncio.gather(*running)


# --- the run's process -----------------------------------------------------------------------

@dataclass
class _Worker:
    number: int
    process: Any
    tasks: Any
    results: Any
    share: int
    ready: bool = False
    alive: bool = True
    in_flight: dict = field(default_factory=dict)


def _ended(process) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name} ({-code})"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def run_pool(todo: list, *, workers: int, concurrency: int, build: Callable[[], Any], answer: Callable,
             on_record: Callable[[dict], None], sealed: bool = False, data_dir: Any = None,
             warm: Callable[[], list[dict]] | None = None) -> PoolOutcome:
    """Answer ``todo`` (examples) in ``workers`` spawned processes, ``concurrency`` in flight in all.
    ``warm()`` (run in each worker first, where given) loads what the questions will use and returns
    its embedding runtime records (``PoolOutcome.runtimes``); ``build()`` (run in each worker) returns
    the graph; ``answer(graph, example)`` (a coroutine function, run in the worker) returns the record.
    ``on_record`` is called here, in this process, once per record as it arrives (it writes it). The
    callables must pickle (module-level functions or :func:`functools.partial` of them)."""
    import multiprocessing
    from multiprocessing.connection import wait

    from atomgraph.progress import say

    ctx = multiprocessing.get_context("spawn")
    spec = {"build": build, "answer": answer, "sealed": sealed, "data_dir": data_dir, "warm": warm}
    queue = deque(todo)
    outcome = PoolOutcome(workers=workers)
    pool: list[_Worker] = []
    try:
        for number, share in enumerate(shares(concurrency, workers), 1):
            task_r, task_w = ctx.Pipe(duplex=False)
            res_r, res_w = ctx.Pipe(duplex=False)
            process = ctx.Process(target=_worker_main, args=(task_r, res_w, spec), daemon=True,
                                  name=f"atomgraph-eval-worker-{number}")
            process.start()
            task_r.close()
            res_w.close()
            pool.append(_Worker(number, process, task_w, res_r, share))
        started = time.monotonic()

        def hand_out(w: _Worker) -> None:
            while w.alive and w.ready and queue and len(w.in_flight) < w.share:
                example = queue.popleft()
                w.in_flight[str(example.id)] = example
                try:
                    w.tasks.send(example)
                except (BrokenPipeError, OSError):
                    queue.appendleft(w.in_flight.pop(str(example.id)))
                    return  # its end is seen through its sentinel

        def receive(w: _Worker) -> None:
            message = w.results.recv()
            kind = message[0]
            if kind == "ready":
                w.ready = True
                for record in message[2] if len(message) > 2 else []:
                    if record not in outcome.runtimes:
                        outcome.runtimes.append(record)
                say(f"  worker {w.number} of {workers}: process {message[1]}, up to {w.share} question(s) at a time")
            elif kind == "failed":
                outcome.failures.append(f"worker {w.number} could not start: {message[1]}")
                w.alive = False
            elif kind == "record":
                w.in_flight.pop(str(message[1]), None)
                outcome.records.append(message[2])
                on_record(message[2])
            hand_out(w)

        def end(w: _Worker) -> None:
            while w.alive and w.results.poll():  # records sent before it ended are whole: keep them
                try:
                    receive(w)
                except (EOFError, OSError):
                    break
            if not w.alive:  # it said why it could not start
                return
            w.alive = False
            w.process.join(5)
            how = _ended(w.process)
            if not w.ready:
                outcome.failures.append(f"worker {w.number} ended before its first question ({how})")
            elif w.in_flight:
                outcome.failures.append(f"worker {w.number} ended ({how}) with {len(w.in_flight)} question(s) "
                                        "in flight")
                log.warning("eval run: worker %d ended (%s); its %d question(s) in flight are not recorded (%s): "
                            "rerun the same command to run them", w.number, how, len(w.in_flight),
                            ", ".join(sorted(w.in_flight)))
            outcome.unfinished.extend(w.in_flight)
            w.in_flight = {}

        while True:
            live = [w for w in pool if w.alive]
            if not live:
                break
            if not queue and not any(w.in_flight for w in live):
                break
            if not any(w.ready for w in live) and time.monotonic() - started > READY_TIMEOUT_S:
                raise ConfigError(f"no eval worker was ready after {READY_TIMEOUT_S:.0f} s")
            by_conn = {w.results: w for w in live}
            by_sentinel = {w.process.sentinel: w for w in live}
            for ready in wait([*by_conn, *by_sentinel], timeout=5.0):
                if ready in by_conn:
                    w = by_conn[ready]
                    if not w.alive:
                        continue
                    try:
                        receive(w)
                    except (EOFError, OSError):
                        end(w)
                elif by_sentinel[ready].alive:
                    end(by_sentinel[ready])
        left = [str(e.id) for e in queue]
        if left:
            outcome.unfinished.extend(left)
            log.warning("eval run: no worker is left; %d question(s) not run: rerun the same command to run them",
                        len(left))
    finally:
        for w in pool:
            try:
                w.tasks.send(None)
            except (BrokenPipeError, OSError):
                pass
        for w in pool:
            w.process.join(10)
            if w.process.is_alive():
                w.process.kill()
                w.process.join(5)
            w.tasks.close()
            w.results.close()
    return outcome
