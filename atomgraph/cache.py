"""The LLM response cache: LangChain's ``BaseCache`` on SQLite, keeping only good replies.

:class:`ReplyCache` is set as a chat model's ``cache`` (``ATOMGRAPH_CACHE``, on by default,
at ``ATOMGRAPH_CACHE_PATH``). Like LangChain's caches it is keyed by the prompt and the
model's parameters (model name, temperature, output cap, stop sequences, bound constraint),
and it is attached only to models sampling at temperature 0. Unlike them:

- **only replies a stage could read are kept.** Inside :meth:`MethodRuntime.ask
  <atomgraph.nodes.runtime.MethodRuntime.ask>` a new reply is held back (:func:`holding`)
  and written only after the stage parsed it: an empty reply, a truncated JSON object or
  an injection the stage refused is asked again next time rather than replayed forever;
- **a hit says so**: the replayed message carries ``response_metadata["atomgraph_cache_hit"]``,
  which the call recorder turns into ``LLMCall.cached`` (reports count no tokens or dollars
  for it);
- **a bypass**: ``ATOMGRAPH_CACHE_REFRESH=true`` or a run's ``configurable={"refresh_cache": True}``
  (``atomgraph ask/eval run --refresh``) asks the model again and overwrites the entry;
- **no blocking I/O on the event loop**: the file is opened on first use, in LangChain's
  executor thread (``alookup``/``aupdate``), never while a graph is being built or in an async node.

The table is the one langchain-community's ``SQLiteCache`` writes (``full_llm_cache``:
prompt, llm, idx, response), so cache files written before keep working as they are.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any, Iterator, Sequence

from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core._api import suppress_langchain_beta_warning
from langchain_core.load import dumps
from langchain_core.load import loads as _loads
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, Generation

# The response-metadata key a replayed reply carries (the call recorder reads it: LLMCall.cached).
CACHE_HIT_KEY = "atomgraph_cache_hit"

log = logging.getLogger(__name__)


def loads(text: str, allowed_objects: list) -> Any:
    with suppress_langchain_beta_warning():
        return _loads(text, allowed_objects=allowed_objects)

_PENDING: contextvars.ContextVar[list | None] = contextvars.ContextVar("atomgraph_cache_pending", default=None)
_REFRESH: contextvars.ContextVar[bool] = contextvars.ContextVar("atomgraph_cache_refresh", default=False)

# What a cache entry may deserialise into (replies only, never arbitrary objects).
_ALLOWED = [ChatGeneration, Generation, AIMessage]

_SCHEMA = ("CREATE TABLE IF NOT EXISTS full_llm_cache (prompt VARCHAR NOT NULL, llm VARCHAR NOT NULL, "
           "idx INTEGER NOT NULL, response VARCHAR, PRIMARY KEY (prompt, llm, idx))")


class ReplyCache(BaseCache):
    """SQLite response cache at ``path`` (see the module docstring)."""

    def __init__(self, path: str | Path, *, refresh: bool = False):
        self.path = str(path)
        self.refresh = refresh
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    # --- storage ------------------------------------------------------------------------------
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            file = Path(self.path).expanduser().resolve()
            file.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(file), check_same_thread=False, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)
            conn.commit()
            self._conn = conn
        return self._conn

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        if self.refresh or _REFRESH.get():
            return None
        with self._lock:
            rows = self._db().execute(
                "SELECT response FROM full_llm_cache WHERE prompt = ? AND llm = ? ORDER BY idx",
                (prompt, llm_string)).fetchall()
        if not rows:
            return None
        try:
            generations = [loads(r[0], allowed_objects=_ALLOWED) for r in rows]
        except Exception as exc:  # noqa: BLE001 - an unreadable entry is a miss, asked again
            log.warning("ignoring an unreadable cache entry (%s)", exc)
            return None
        for gen in generations:
            msg = getattr(gen, "message", None)
            if msg is not None:
                msg.response_metadata = {**(msg.response_metadata or {}), CACHE_HIT_KEY: True}
        return generations

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        pending = _PENDING.get()
        if pending is not None:  # inside a stage call: written once the stage has read it
            pending.append((self, prompt, llm_string, return_val))
            return
        self.store(prompt, llm_string, return_val)

    def store(self, prompt: str, llm_string: str, return_val: Sequence[Any]) -> None:
        rows = [(prompt, llm_string, i, dumps(gen)) for i, gen in enumerate(return_val)]
        with self._lock:
            db = self._db()
            db.execute("DELETE FROM full_llm_cache WHERE prompt = ? AND llm = ?", (prompt, llm_string))
            db.executemany("INSERT INTO full_llm_cache (prompt, llm, idx, response) VALUES (?, ?, ?, ?)", rows)
            db.commit()

    def clear(self, **kwargs: Any) -> None:
        with self._lock:
            self._db().execute("DELETE FROM full_llm_cache")
            self._db().commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db().execute("SELECT COUNT(*) FROM full_llm_cache").fetchone()[0])


@contextlib.contextmanager
def holding() -> Iterator[list]:
    """Hold back the cache writes of the calls made inside; :func:`keep` writes them."""
    token = _PENDING.set([])
    try:
        yield _PENDING.get()  # type: ignore[misc]
    finally:
        _PENDING.reset(token)


def keep(pending: list) -> None:
    """Write held-back cache entries (the stage read their reply)."""
    for cache, prompt, llm_string, value in pending:
        try:
            cache.store(prompt, llm_string, value)
        except sqlite3.Error as exc:  # a full disk or locked file costs a cache entry, not the run
            log.warning("cache write failed: %s", exc)
    pending.clear()


@contextlib.contextmanager
def refreshing(on: bool = True) -> Iterator[None]:
    """Inside, cache lookups miss (the model is asked again) and new replies overwrite old ones."""
    token = _REFRESH.set(bool(on) or _REFRESH.get())
    try:
        yield
    finally:
        _REFRESH.reset(token)


_CACHES: dict[tuple[str, bool], ReplyCache] = {}
_CACHES_LOCK = threading.Lock()


def reply_cache(path: str, refresh: bool = False) -> ReplyCache:
    """One shared cache per path (opening nothing yet)."""
    with _CACHES_LOCK:
        key = (str(path), bool(refresh))
        if key not in _CACHES:
            _CACHES[key] = ReplyCache(path, refresh=refresh)
        return _CACHES[key]
