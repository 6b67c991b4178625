"""Where the ``arm`` graph's objects come from, and their index (built once, then reused).

The data collection is given to the graph builder (``objects=``: an :class:`ArmIndex`, a
list of :class:`DataObject`, or a path), or named by the run's ``objects`` parameter (the
``[arm]`` settings section: ``ATOMGRAPH_ARM__OBJECTS=objects.jsonl``), a file or a folder
holding ``objects.jsonl``. Indexes built from files are kept per process, keyed by the
file's path, size and modification time, so a graph serving many questions indexes once.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Sequence

from atomgraph.errors import ConfigError
from atomgraph.tools.arm_index import ArmIndex
from atomgraph.tools.objects import DataObject, load_objects

MISSING = (
    "ARM needs a data collection: set ATOMGRAPH_ARM__OBJECTS (or 'objects' under [arm] in atomgraph.toml, "
    "or the run context's 'objects') to an objects.jsonl file or a folder holding one"
)

_LOCK = threading.Lock()
_BY_FILE: dict[tuple, ArmIndex] = {}


def objects_file(path: str | Path) -> Path:
    """The objects.jsonl named by ``path`` (the file, or ``objects.jsonl`` in the folder)."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "objects.jsonl"
    if not p.is_file():
        raise ConfigError(f"ARM objects: {p} does not exist ({MISSING})")
    return p


def index_for_file(path: str | Path, cache_dir: str | None = None) -> ArmIndex:
    """The index of the objects in ``path``, built once per process (and cached on disk)."""
    p = objects_file(path)
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns, cache_dir)
    with _LOCK:
        if key not in _BY_FILE:
            _BY_FILE[key] = ArmIndex.build(load_objects(p), cache_dir=cache_dir)
        return _BY_FILE[key]


class Collection:
    """The graph's objects: given at build time, or read from the run's ``objects`` path."""

    def __init__(self, objects: Any = None, embeddings: Any = None):
        self._given = objects
        self._embeddings = embeddings
        self._index: ArmIndex | None = objects if isinstance(objects, ArmIndex) else None
        self._lock = threading.Lock()
        self._opened: dict[tuple, ArmIndex] = {}  # (objects path, cache dir) -> the index last opened

    def opened(self, objects_path: str | None = None, cache_dir: str | None = None) -> ArmIndex | None:
        """The index :meth:`index` last opened for these arguments (None: not opened yet)."""
        return self._index if self._index is not None else self._opened.get((objects_path, cache_dir))

    @property
    def given(self) -> bool:
        return self._given is not None

    def index(self, objects_path: str | None = None, cache_dir: str | None = None, *, reopen: bool = True) -> ArmIndex:
        """The index (opened once per run: the run's first stage opens it, checking that a file
        has not changed; ``reopen=False``, the later stages, reuse what it opened)."""
        if self._index is not None:
            return self._index
        if not reopen and (objects_path, cache_dir) in self._opened:
            return self._opened[(objects_path, cache_dir)]
        found = self._open(objects_path, cache_dir)
        self._opened[(objects_path, cache_dir)] = found
        return found

    def _open(self, objects_path: str | None, cache_dir: str | None) -> ArmIndex:
        given = self._given
        if isinstance(given, (str, Path)):
            return index_for_file(given, cache_dir)
        if given is not None:
            objs: Sequence[DataObject] = list(given)
            if not objs or not all(isinstance(o, DataObject) for o in objs):
                raise ConfigError("ARM objects must be an ArmIndex, a path, or a non-empty list of DataObject")
            with self._lock:
                if self._index is None:
                    self._index = ArmIndex.build(objs, embeddings=self._embeddings, cache_dir=cache_dir,
                                                 use_cache=cache_dir is not None)
            return self._index
        if not objects_path:
            raise ConfigError(MISSING)
        return index_for_file(objects_path, cache_dir)
