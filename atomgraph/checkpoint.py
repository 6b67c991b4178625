"""Durable runs: a persistent LangGraph checkpointer (SQLite, ``langgraph-checkpoint-sqlite``)
for ``atomgraph ask --checkpoint PATH`` and ``atomgraph eval run --checkpoint PATH``.

Every question runs on its own thread (:func:`thread_id`: the method and the question, or the
dataset and the example's id), and LangGraph saves the state after every step. A run killed
mid-question (even ``kill -9``) resumes from its last completed step when the same command
runs again: the steps already done are not run again, so their model calls are not repeated.
A finished thread stays in the file, so Studio (or ``graph.get_state_history``) can open and
time-travel it.

>>> async with open_checkpointer("runs/ask.sqlite") as saver:
...     graph = build_method("atomr", checkpointer=saver)
...     config = {"configurable": {"thread_id": thread_id("atomr", q)}}
...     start, status = await resume_input(graph, {"question": q}, config)
...     out = await graph.ainvoke(start, config)  # a finished thread: aget_state(config).values

The file records the atomgraph version and checkpoint format that wrote it; a file from another
version (or not a checkpoint file at all) is refused with a :class:`ConfigError` naming it.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import inspect
import sqlite3
from pathlib import Path
from typing import Any, AsyncIterator

from atomgraph.errors import ConfigError

FORMAT = "2"  # bump when saved states can no longer be read by this code (2: state classes moved to state/run, state/atomr)
META_TABLE = "atomgraph_checkpoint"
# Modules whose classes may appear in a saved state (read back without LangGraph's warning).
STATE_MODULES = (
    "atomgraph.state.run", "atomgraph.state.atomr", "atomgraph.state.kar3", "atomgraph.state.arm",
    "atomgraph.state.arm_graph", "atomgraph.state.compare", "atomgraph.state.baselines", "atomgraph.state.indexing",
    "atomgraph.tools.objects",
)


def _version() -> str:
    from atomgraph import __version__

    return __version__


def state_types() -> list[tuple[str, str]]:
    """(module, class) of every class atomgraph's states may hold."""
    out = []
    for name in STATE_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        out += [(name, n) for n, obj in vars(module).items() if inspect.isclass(obj) and obj.__module__ == name]
    return out


def serializer():
    """LangGraph's serializer, allowed to read back atomgraph's state types."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    return JsonPlusSerializer(allowed_msgpack_modules=state_types())


def thread_id(method: str, question: str, *, dataset: str | None = None, example_id: str | None = None) -> str:
    """The thread of one question: ``eval:METHOD:DATASET:ID`` for a dataset example, else
    ``ask:METHOD:<hash of the question>`` (the same question resumes the same thread)."""
    if example_id is not None:
        return f"eval:{method}:{dataset or 'custom'}:{example_id}"
    digest = hashlib.sha256(" ".join(str(question).split()).encode("utf-8")).hexdigest()[:16]
    return f"ask:{method}:{digest}"


def check_file(path: str | Path) -> None:
    """Refuse a file that is not an atomgraph checkpoint file of this version."""
    p = Path(path)
    if not p.exists():
        return
    if p.is_dir():
        raise ConfigError(f"checkpoint {p} is a folder; give a file path such as {p / 'checkpoints.sqlite'}")
    try:
        with contextlib.closing(sqlite3.connect(f"file:{p}?mode=ro", uri=True)) as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            meta = dict(conn.execute(f"SELECT key, value FROM {META_TABLE}")) if META_TABLE in tables else None
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"checkpoint file {p} is not an SQLite checkpoint file ({exc}); "
                          "give another --checkpoint path or delete it") from None
    if meta is None:
        if tables:
            raise ConfigError(f"checkpoint file {p} was not written by atomgraph (tables: {', '.join(sorted(tables))}); "
                              "give another --checkpoint path")
        return
    if meta.get("format") != FORMAT or meta.get("atomgraph") != _version():
        raise ConfigError(
            f"checkpoint file {p} was written by atomgraph {meta.get('atomgraph')} (checkpoint format "
            f"{meta.get('format')}); this is atomgraph {_version()} (format {FORMAT}), which cannot resume its runs. "
            "Finish them with that version, or give another --checkpoint path"
        )


@contextlib.asynccontextmanager
async def open_checkpointer(path: str | Path) -> AsyncIterator[Any]:
    """An ``AsyncSqliteSaver`` on ``path`` (created with its folder when missing), checked and
    stamped with this version."""
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from atomgraph.jsonl import check_out_dir

    p = Path(path).expanduser()
    check_file(p)
    check_out_dir(p.parent, what="folder of the checkpoint file")
    async with aiosqlite.connect(str(p)) as conn:
        await conn.execute(f"CREATE TABLE IF NOT EXISTS {META_TABLE} (key TEXT PRIMARY KEY, value TEXT)")
        await conn.executemany(f"INSERT OR REPLACE INTO {META_TABLE} VALUES (?, ?)",
                               [("format", FORMAT), ("atomgraph", _version())])
        await conn.commit()
        saver = AsyncSqliteSaver(conn, serde=serializer())
        await saver.setup()
        yield saver


async def resume_input(graph: Any, inp: dict, config: dict) -> tuple[Any, str]:
    """What to pass to the graph for this thread: ``inp`` for a new thread, ``None`` to resume a
    thread stopped mid-run; and the thread's status (``new``, ``resumed``, ``finished``)."""
    state = await graph.aget_state(config)
    if not state.values and not state.next:
        return inp, "new"
    if state.next:
        return None, "resumed"
    return None, "finished"
