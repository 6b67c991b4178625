"""The ``ATOMGRAPH_*`` variables that are not settings fields: the one place that reads them.

Settings fields (``ATOMGRAPH_MODEL``, ``ATOMGRAPH_ATOMR__TOP_K``, …) load through
:mod:`atomgraph.settings`. A few variables are read where they are used instead (a file-size
bound inside the file reader, the in-process model's threads); each is declared in
:data:`VARIABLES` and read through :func:`env_value`, never through ``os.environ`` elsewhere.

Some of them choose part of a run's setting (:data:`RUN_CHOOSING`): which model object is
built, where the evaluated data is read, how ARM's index is built. A sealed run (a recipe) reads
none of those: inside :func:`sealed_environment` they read as unset, and
:func:`run_choosing_set` lists those the environment sets, so the run prints and records them as
not applied.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

VARIABLES: dict[str, str] = {
    "ATOMGRAPH_CONFIG": "the TOML config file (else ./atomgraph.toml)",
    "ATOMGRAPH_MODEL_FACTORY": "module:function building the chat model of the command line's runs",
    "ATOMGRAPH_LOCAL_THREADS": "CPU threads of the in-process model (default: half the CPUs)",
    "ATOMGRAPH_MAX_FILE_MB": "largest input file read whole (MB)",
    "ATOMGRAPH_MAX_LINE_MB": "longest line of a JSONL or corpus file (MB)",
    "ATOMGRAPH_MAX_STREAM_MB": "largest stream read from standard input (MB)",
    "ATOMGRAPH_ARM_CACHE": "folder of ARM's built object indexes",
    "ATOMGRAPH_ARM_DENSE_SEARCH": "ARM index building: exact, ann or auto dense search",
    "ATOMGRAPH_ARM_MAX_OBJECT_CHARS": "ARM index building: characters of an object kept",
    "ATOMGRAPH_SHARED_DATA": "the shared data folder (default ../shared/data)",
    "ATOMGRAPH_PROGRESS_EVERY": "seconds between progress lines of a long run",
    "ATOMGRAPH_NOTEBOOK_SCRIPTED": "the notebooks run with scripted models (tests)",
    "ATOMGRAPH_TRIE_DIR": "folder of the in-process model's saved n-gram tries",
    "ATOMGRAPH_MODEL_DIR": "folder of the packaged models assembled from their parts (local:qwen2.5-1.5b) "
                           "and of the embedding model's ONNX export",
}

# Variables that choose part of a run's setting, with what a sealed run takes instead.
RUN_CHOOSING: dict[str, str] = {
    "ATOMGRAPH_MODEL_FACTORY": "--model-factory",
    "ATOMGRAPH_SHARED_DATA": "the recipe's own data location",
    "ATOMGRAPH_ARM_DENSE_SEARCH": "the index's default (--set is not offered: an index setting)",
    "ATOMGRAPH_ARM_MAX_OBJECT_CHARS": "the index's default (an index setting)",
}

_LOCK = threading.Lock()
_SEALED = 0  # process-wide: a sealed run holds it for its whole length, every thread included


def sealed() -> bool:
    """Whether a sealed run is under way in this process."""
    return _SEALED > 0


@contextmanager
def sealed_environment() -> Iterator[None]:
    """While inside, :data:`RUN_CHOOSING` variables read as unset (and role models of methods
    registered at run time are not read from the environment)."""
    global _SEALED
    with _LOCK:
        _SEALED += 1
    try:
        yield
    finally:
        with _LOCK:
            _SEALED -= 1


def env_value(name: str) -> str | None:
    """The variable's value, stripped (None when unset or blank, and for a run-choosing variable
    during a sealed run). Only declared names are read."""
    if name not in VARIABLES:
        raise KeyError(f"{name} is not a declared atomgraph environment variable")
    if _SEALED and name in RUN_CHOOSING:
        return None
    value = os.environ.get(name, "").strip()
    return value or None


def run_choosing_set() -> dict[str, str]:
    """The run-choosing variables the environment sets (``$NAME`` → value): what a sealed run
    does not take."""
    out = {}
    for name in RUN_CHOOSING:
        value = os.environ.get(name, "").strip()
        if value:
            out[f"${name}"] = value
    return out


_DATA_DIRS: list[Path] = []  # the explicit data folder of the run under way (eval run --data-dir)


@contextmanager
def explicit_data_dir(folder: Path) -> Iterator[None]:
    """While inside, :func:`shared_data_dir` finds ``folder`` first (an explicit choice, so a
    sealed run takes it where it does not take ``$ATOMGRAPH_SHARED_DATA``)."""
    _DATA_DIRS.append(Path(folder))
    try:
        yield
    finally:
        _DATA_DIRS.pop()


def shared_data_dir(explicit: str | os.PathLike | None = None) -> Path | None:
    """The shared data folder: ``explicit``, else the run's explicit ``--data-dir``, else
    ``$ATOMGRAPH_SHARED_DATA`` (not read by a sealed run), else ``./shared/data``,
    ``../shared/data`` or the one beside the checkout; None when none exists."""
    candidates = [explicit, *_DATA_DIRS[-1:], env_value("ATOMGRAPH_SHARED_DATA"), Path("shared/data"),
                  Path("../shared/data"), Path(__file__).resolve().parents[2] / "shared" / "data"]
    for c in candidates:
        if c and Path(c).is_dir():
            return Path(c)
    return None
