"""``eval run --server URL``: each question of a run as a run on a LangGraph Server deployment
(the ``langgraph-api`` runtime that ``langgraph dev`` and ``langgraph up`` serve), through
``langgraph_sdk``; the records, resume and summary stay the client's (:mod:`.runner`).

>>> result = run_eval("rag", "hotpotqa-dev-100", "runs/rag", EvalOptions(server="http://127.0.0.1:2024", concurrency=16))

Each example gets its own server thread, whose id is derived from the run directory's
*server run id* (kept in ``run.json``) and the example's id, so a client that is killed and
started again finds its questions where it left them:

- a question whose server run is still pending or running is *joined* (not run twice);
- a question whose server run finished after the client died is read back (its record says
  ``server.reused``), not run again;
- a question whose run failed, was cancelled or never started is run (again).

Errored examples a rerun retries (transient errors; every error with ``--retry-errors``)
always get a fresh run. ``--force-new`` (or ``resume=False``) starts a new server run id, so
nothing of the earlier run is reused. The client writes each record once, under the run
directory's lock, exactly as a local run does; a record's ``server`` field names the server,
thread and run it came from. What each question is run with is sent with it: the run's
context (the method's parameters from the client's settings, ``model``, the sources named or
the dataset's declared sources, the dataset's prompt pack) so that a run's fingerprint says what
the server ran; with a deadline, all of it goes as ``configurable`` (:meth:`ServerRunner.payload`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from atomgraph.errors import ConfigError

ACTIVE = ("pending", "running")


def server_thread_id(run_id: str, method: str, example_id: str) -> str:
    """The server thread of one example of one server run (a UUID, as the server requires)."""
    return str(uuid.uuid5(uuid.UUID(run_id), f"{method}\x1f{example_id}"))


class ServerRunner:
    """Runs examples as server runs of the assistant ``method`` (the graph id of langgraph.json)."""

    def __init__(self, url: str, method: str, *, run_id: str, api_key: str | None = None,
                 context: dict | None = None, configurable: dict | None = None, poll_s: float = 0.5):
        from langgraph_sdk import get_client

        self.url = url.rstrip("/")
        self.method = method
        self.run_id = run_id
        self.context = dict(context or {})
        self.configurable = dict(configurable or {})
        self.client = get_client(url=self.url, api_key=api_key, timeout=60)
        self.poll_s = poll_s

    async def check(self) -> None:
        """ConfigError unless the server answers and serves an assistant for the method."""
        from langgraph_sdk.errors import NotFoundError

        try:
            found = await self.client.assistants.search(graph_id=self.method, limit=1)
        except NotFoundError:  # the server answers: it has no such graph
            found = []
        except Exception as exc:  # noqa: BLE001 - any transport or HTTP failure
            raise ConfigError(f"the LangGraph server at {self.url} cannot be reached ({type(exc).__name__}: "
                              f"{str(exc)[:200]}); start it (langgraph dev / langgraph up) or fix --server") from None
        if not found:
            graphs = sorted({a["graph_id"] for a in await self.client.assistants.search(limit=100)})
            raise ConfigError(f"the LangGraph server at {self.url} serves no graph {self.method!r} "
                              f"(it serves: {', '.join(graphs) or 'none'})")

    async def run(self, question: str, example_id: str, *, fresh: bool, timeout_s: float | None,
                  deadline_s: float | None) -> tuple[dict, str | None, dict]:
        """``(values, error, server info)`` of one example (see the module docstring)."""
        tid = server_thread_id(self.run_id, self.method, example_id)
        info: dict[str, Any] = {"url": self.url, "thread_id": tid, "run_id": None, "reused": False, "joined": False}
        last = None if fresh else await self._last_run(tid)
        if last is not None and last["status"] == "success":
            info.update(run_id=last["run_id"], reused=True)
            return await self._values(tid), None, info
        if last is not None and last["status"] in ACTIVE:
            info.update(run_id=last["run_id"], joined=True)
            run_id = last["run_id"]
        else:
            context, config = self.payload(deadline_s)
            run = await self.client.runs.create(
                tid, self.method, input={"question": question}, context=context, config=config,
                if_not_exists="create",
                multitask_strategy="reject", metadata={"atomgraph_example": example_id,
                                                       "atomgraph_server_run": self.run_id})
            run_id = run["run_id"]
            info["run_id"] = run_id
        try:
            status, error = await asyncio.wait_for(self._finish(tid, run_id), timeout_s)
        except asyncio.TimeoutError:
            await self._cancel(tid, run_id)
            return await self._values(tid), f"timed out after {timeout_s:g} s", info
        return await self._values(tid), error, info

    def payload(self, deadline_s: float | None) -> tuple[dict | None, dict | None]:
        """``(context, config)`` of one server run: the run's context with the run-context keys a
        local run passes as configurable (the dataset's prompt pack) over it. LangGraph Server
        refuses a run given both ``context`` and ``configurable``; a deadline (read from
        ``configurable``, as in a local run) is therefore sent with everything else as
        ``configurable``, which the server also copies into the run's context (keeping the
        keys of the graph's context schema) and keeps whole as ``configurable``."""
        values = {**self.context, **self.configurable}
        if deadline_s is None:
            return values or None, None
        return None, {"configurable": {**values, "deadline": time.time() + deadline_s}}

    async def _last_run(self, tid: str) -> dict | None:
        from langgraph_sdk.errors import NotFoundError

        try:
            runs = await self.client.runs.list(tid, limit=1)
        except NotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - an older server answers 404 as a plain HTTP error
            if "404" in str(exc):
                return None
            raise
        return runs[0] if runs else None

    async def _finish(self, tid: str, run_id: str) -> tuple[str, str | None]:
        """Wait for the run to end: ``(status, error or None)``."""
        result = await self.client.runs.join(tid, run_id)
        run = await self.client.runs.get(tid, run_id)
        while run["status"] in ACTIVE:  # join returned early (a dropped stream): poll
            await asyncio.sleep(self.poll_s)
            run = await self.client.runs.get(tid, run_id)
        if run["status"] == "success":
            return "success", None
        err = result.get("__error__") if isinstance(result, dict) else None
        if isinstance(err, dict):
            why = f"{err.get('error') or 'Error'}: {err.get('message') or ''}".rstrip(": ")
        else:
            why = f"the run ended {run['status']}"
        return run["status"], f"server run {run_id} failed ({why})"[:1000]

    async def _values(self, tid: str) -> dict:
        try:
            state = await self.client.threads.get_state(tid)
        except Exception:  # noqa: BLE001 - a run that never wrote a state
            return {}
        values = state.get("values") if isinstance(state, dict) else None
        return values if isinstance(values, dict) else {}

    async def _cancel(self, tid: str, run_id: str) -> None:
        try:
            await self.client.runs.cancel(tid, run_id, wait=True)
        except Exception:  # noqa: BLE001 - it may have just ended
            pass
