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

Rows cannot poison a run:

- **keyed by what answered**: model name and base URL (a view per model: :meth:`ReplyCache.view`)
  as well as LangChain's prompt and parameters key; a reply of another server under the same
  model name is never replayed;
- **a keyed MAC per row** (HMAC-SHA256 of the key and the reply under a secret of this cache's own):
  a row whose MAC does not match — damaged, written by hand, or forged by someone who can write the
  file but not read the secret — is ignored (asked again) and reported (a warning, counted in
  ``ReplyCache.rejected``); rows written before MACs (a plain SHA-256 checksum, or none) are
  unverified and ignored the same way. The secret is 32 random bytes in ``<cache file>.key`` beside
  the cache, created once, atomically (written to a temporary file opened ``0600`` and linked into
  place: two processes starting together share the first one's key) with owner-only permissions,
  and never logged. A key file that others can read or write, or that is not a regular file, makes
  the cache unusable (one warning; the run goes on uncached): its rows could be forged;
- **cut replies stay cut**: a reply kept after being cut at the output cap is stored cut, marked
  with its original length (``response_metadata["atomgraph_cut_from"]``), so a replay is recorded
  as cut again; a reply the server ended for length keeps its ``finish_reason``;
- **an unopenable cache is no failure**: a path that cannot be opened (a directory, a read-only
  folder) gives one warning and the run goes on uncached.

The table is the one langchain-community's ``SQLiteCache`` writes (``full_llm_cache``:
prompt, llm, idx, response) plus a ``checksum`` column, which holds ``hmac-sha256:<hex>``.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import hmac
import logging
import os
import secrets
import sqlite3
import stat
import threading
from pathlib import Path
from typing import Any, Iterator, Sequence

from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core._api import suppress_langchain_beta_warning
from langchain_core.load import dumps
from langchain_core.load import loads as _loads
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, Generation

# Response-metadata keys (the call recorder reads them): a replayed reply carries CACHE_HIT_KEY
# (LLMCall.cached); a reply cut at the cap, and cached cut, carries CUT_FROM_KEY (its length before the cut).
CACHE_HIT_KEY = "atomgraph_cache_hit"
CUT_FROM_KEY = "atomgraph_cut_from"

log = logging.getLogger(__name__)


def loads(text: str, allowed_objects: list) -> Any:
    with suppress_langchain_beta_warning():
        return _loads(text, allowed_objects=allowed_objects)

_PENDING: contextvars.ContextVar[list | None] = contextvars.ContextVar("atomgraph_cache_pending", default=None)
_REFRESH: contextvars.ContextVar[bool] = contextvars.ContextVar("atomgraph_cache_refresh", default=False)

# What a cache entry may deserialise into (replies only, never arbitrary objects).
_ALLOWED = [ChatGeneration, Generation, AIMessage]

_SCHEMA = ("CREATE TABLE IF NOT EXISTS full_llm_cache (prompt VARCHAR NOT NULL, llm VARCHAR NOT NULL, "
           "idx INTEGER NOT NULL, response VARCHAR, checksum VARCHAR, PRIMARY KEY (prompt, llm, idx))")


MAC_PREFIX = "hmac-sha256:"
KEY_SUFFIX = ".key"


def checksum(prompt: str, llm_string: str, idx: int, response: str, key: bytes | None = None) -> str:
    """A row's check value: HMAC-SHA256 under ``key`` over its key and its reply (``hmac-sha256:<hex>``);
    without a key, the plain SHA-256 rows written before MACs carried (never accepted now)."""
    h = hmac.new(key, digestmod=hashlib.sha256) if key is not None else hashlib.sha256()
    for part in (prompt, llm_string, str(idx), response):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return MAC_PREFIX + h.hexdigest() if key is not None else h.hexdigest()


class KeyFileError(OSError):
    """The cache's key file cannot be trusted (others can read or write it, or it is no regular file)."""


def cache_key(cache_file: Path) -> bytes:
    """The secret of the cache at ``cache_file`` (``<cache_file>.key``), created on first use with owner-only
    permissions, atomically; :class:`KeyFileError` when the file exists but cannot be trusted."""
    path = cache_file.with_name(cache_file.name + KEY_SUFFIX)
    if not os.path.lexists(path):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(secrets.token_hex(32) + "\n")
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)  # atomic, and never over another process's key
            except FileExistsError:
                pass
            except OSError:  # a file system without hard links: an atomic rename where no key is yet
                if not os.path.lexists(path):
                    os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        raise KeyFileError(f"the cache's key file {path} is not a regular file")
    if info.st_mode & 0o077:
        raise KeyFileError(f"the cache's key file {path} has mode {stat.S_IMODE(info.st_mode):04o}; "
                           "it must be readable and writable by its owner only (0600)")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise KeyFileError(f"the cache's key file {path} belongs to another user")
    text = path.read_text(encoding="ascii", errors="replace").strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 16:
        raise KeyFileError(f"the cache's key file {path} holds no key")
    return key


class ReplyCache(BaseCache):
    """SQLite response cache at ``path`` (see the module docstring)."""

    def __init__(self, path: str | Path, *, refresh: bool = False):
        self.path = str(path)
        self.refresh = refresh
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.unusable: str | None = None  # why the file cannot be used (the run goes on uncached)
        self.rejected = 0  # rows ignored: MAC missing or wrong (a plain checksum included), or unreadable
        self._key: bytes | None = None  # the secret of the rows' MACs (never logged)

    # --- storage ------------------------------------------------------------------------------
    def _db(self) -> sqlite3.Connection | None:
        """The open database, or None when it cannot be opened (said once, then uncached)."""
        if self._conn is None and self.unusable is None:
            try:
                file = Path(self.path).expanduser().resolve()
                file.parent.mkdir(parents=True, exist_ok=True)
                self._key = cache_key(file)
                conn = sqlite3.connect(str(file), check_same_thread=False, timeout=30)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(_SCHEMA)
                columns = {row[1] for row in conn.execute("PRAGMA table_info(full_llm_cache)")}
                if "checksum" not in columns:  # a file written before checksums: its rows stay unverified
                    conn.execute("ALTER TABLE full_llm_cache ADD COLUMN checksum VARCHAR")
                conn.commit()
                self._conn = conn
            except (sqlite3.Error, OSError) as exc:
                self.unusable = f"{type(exc).__name__}: {exc}"
                log.warning("the response cache at %s cannot be used (%s); the run goes on uncached",
                            self.path, self.unusable)
        return self._conn

    def view(self, namespace: str) -> "CacheView":
        """This cache for one model and server: every key carries ``namespace`` (model name and base URL)."""
        return CacheView(self, namespace)

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        if self.refresh or _REFRESH.get():
            return None
        with self._lock:
            db = self._db()
            if db is None:
                return None
            try:
                rows = db.execute(
                    "SELECT idx, response, checksum FROM full_llm_cache WHERE prompt = ? AND llm = ? ORDER BY idx",
                    (prompt, llm_string)).fetchall()
            except sqlite3.Error as exc:  # a damaged file: a miss, said
                log.warning("cache lookup failed (%s): asked again", exc)
                return None
        if not rows:
            return None
        if not all(isinstance(r[2], str) and hmac.compare_digest(r[2], checksum(prompt, llm_string, r[0], r[1] or "",
                                                                             self._key))
                   for r in rows):
            self.rejected += 1
            log.warning("ignoring a cache row whose checksum does not match its reply (a keyed MAC: damaged, forged, "
                        "or written before keyed MACs) in %s: the model is asked again", self.path)
            return None
        try:
            generations = [loads(r[1], allowed_objects=_ALLOWED) for r in rows]
        except Exception as exc:  # noqa: BLE001 - an unreadable entry is a miss, asked again
            self.rejected += 1
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
        with self._lock:
            db = self._db()
            if db is None:
                return
            rows = []
            for i, gen in enumerate(return_val):
                text = dumps(gen)
                rows.append((prompt, llm_string, i, text, checksum(prompt, llm_string, i, text, self._key)))
            db.execute("DELETE FROM full_llm_cache WHERE prompt = ? AND llm = ?", (prompt, llm_string))
            db.executemany("INSERT INTO full_llm_cache (prompt, llm, idx, response, checksum) VALUES (?, ?, ?, ?, ?)",
                           rows)
            db.commit()

    def clear(self, **kwargs: Any) -> None:
        with self._lock:
            db = self._db()
            if db is not None:
                db.execute("DELETE FROM full_llm_cache")
                db.commit()

    def __len__(self) -> int:
        with self._lock:
            db = self._db()
            return 0 if db is None else int(db.execute("SELECT COUNT(*) FROM full_llm_cache").fetchone()[0])


class CacheView(BaseCache):
    """A :class:`ReplyCache` for one model and server: its keys carry the namespace (model name and
    base URL), so a reply is only replayed to the model and server that gave it."""

    def __init__(self, cache: ReplyCache, namespace: str):
        self.cache = cache
        self.namespace = namespace

    def _key(self, llm_string: str) -> str:
        return f"{self.namespace}\n{llm_string}"

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        return self.cache.lookup(prompt, self._key(llm_string))

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        pending = _PENDING.get()
        if pending is not None:
            pending.append((self.cache, prompt, self._key(llm_string), return_val))
            return
        self.cache.store(prompt, self._key(llm_string), return_val)

    def clear(self, **kwargs: Any) -> None:
        self.cache.clear(**kwargs)

    @property
    def path(self) -> str:
        return self.cache.path


@contextlib.contextmanager
def holding() -> Iterator[list]:
    """Hold back the cache writes of the calls made inside; :func:`keep` writes them."""
    token = _PENDING.set([])
    try:
        yield _PENDING.get()  # type: ignore[misc]
    finally:
        _PENDING.reset(token)


def keep(pending: list, reply: Any = None) -> None:
    """Write held-back cache entries (the stage read their reply). ``reply``: the reply as the stage
    read it — cut at the output cap (then stored cut, with its original length) — for the entry of
    the call that gave it (the last one)."""
    for n, (cache, prompt, llm_string, value) in enumerate(pending):
        if reply is not None and n == len(pending) - 1:
            value = _as_read(value, reply)
        try:
            cache.store(prompt, llm_string, value)
        except (sqlite3.Error, OSError) as exc:  # a full disk or locked file costs a cache entry, not the run
            log.warning("cache write failed: %s", exc)
    pending.clear()


def _as_read(value: Sequence[Any], reply: Any) -> Sequence[Any]:
    """``value`` (the generations to store) with its first message replaced by ``reply`` where the
    stage read a cut copy of it (the cut copy is what a replay gives)."""
    cut_from = (getattr(reply, "response_metadata", None) or {}).get(CUT_FROM_KEY)
    if not cut_from or not value or getattr(value[0], "message", None) is None:
        return value
    first = value[0]
    return [ChatGeneration(message=reply, generation_info=getattr(first, "generation_info", None)), *value[1:]]


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
