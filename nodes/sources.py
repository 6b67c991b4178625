"""Source selection: which knowledge sources a run reads, and querying them.

Asked for means required: the sources a user named — the graph's ``sources=``, a run's context
``sources`` — must all be usable; one that cannot be (a misspelt collection, a dead server, an
empty index) raises :class:`~atomgraph.errors.SourceUnavailable` when a run first reads its
sources, which is before its first model call. The settings' sources (nothing named) are
offered: an unusable one is set aside with its reason.

:class:`RunSources` resolves a graph's sources once (what the graph was built with, else the
settings' sources) and a run's own choice (context ``sources``: a subset of the graph's, or
sources built from the settings by name); :func:`retrieve_from` queries named sources
concurrently, every call recorded. :class:`~atomgraph.nodes.runtime.MethodRuntime` offers both
as ``rt.sources()`` / ``rt.asources()`` / ``rt.retrieve(...)``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Callable, Iterable

from atomgraph.settings import Settings
from atomgraph.state.evidence import Evidence
from atomgraph.state.usage import RetrieverCall
from atomgraph.tools.base import KnowledgeSource, recorded_retrieval
from atomgraph.tools.registry import SourceSet, as_source_set, build_sources


class RunSources:
    """A graph's knowledge sources and the runs' choices among them (each opened on first use)."""

    def __init__(self, given: SourceSet | Iterable[KnowledgeSource] | None, settings: Callable[[], Settings]):
        self.given = given
        self._settings = settings
        self._base: SourceSet | None = None
        self._named: dict[tuple[str, ...], SourceSet] = {}
        self._from_settings: set[tuple[str, ...]] = set()  # chosen sets built from the settings by name
        self._lock = threading.RLock()  # sources are opened once, whichever question asks first

    @property
    def opened(self) -> bool:
        """Whether the graph's own sources have been opened."""
        return self._base is not None

    def base(self, required: bool = True) -> SourceSet:
        """What the graph was built with (required, when ``required``), else the settings' sources."""
        if self._base is None:
            with self._lock:
                if self._base is None:
                    self._base = as_source_set(self.given, self._settings())
        if required and self.given is not None:  # the graph's own sources= : asked for, so required
            self._base.require()
        return self._base

    def pick(self, names: list[str] | None) -> SourceSet:
        """The sources a run reads: ``names`` (the run's choice, each required) when given, else
        :meth:`base`. A chosen source that was unusable is looked at again (built anew from the
        settings) before the run is refused: it may have been indexed since (``wikipedia_index``
        in the same server)."""
        if not names:
            return self.base()
        key = tuple(names)
        chosen = self._named.get(key)
        if chosen is None or self._stale(key, names):
            with self._lock:
                if key not in self._named:
                    own = self.base(required=False)
                    if all(n in own.available or n in own.unavailable for n in names):  # a subset of the graph's
                        self._named[key] = SourceSet(
                            available={n: own.available[n] for n in names if n in own.available},
                            unavailable={n: own.unavailable[n] for n in names if n in own.unavailable})
                        if self.given is None:  # the base may be older than an index built since
                            self._from_settings.add(key)
                            if self._stale(key, names):
                                self._reopen(key, names)
                    else:  # sources the graph was not built with: built from the settings by name
                        self._named[key] = build_sources(self._settings(), names)
                        self._from_settings.add(key)
                elif self._stale(key, names):
                    self._reopen(key, names)
                chosen = self._named[key]
        return chosen.require(names)

    def _stale(self, key: tuple[str, ...], names: list[str]) -> bool:
        """A chosen set built from the settings with a source it could not use (worth a new look)."""
        chosen = self._named.get(key)
        return (chosen is not None and key in self._from_settings
                and any(n in chosen.unavailable for n in names))

    def _reopen(self, key: tuple[str, ...], names: list[str]) -> None:
        chosen = self._named[key]
        fresh = build_sources(self._settings(), [n for n in names if n in chosen.unavailable])
        for n, source in fresh.available.items():
            chosen.unavailable.pop(n, None)
            chosen.available[n] = source
        chosen.unavailable.update(fresh.unavailable)

    async def apick(self, names: list[str] | None) -> SourceSet:
        """:meth:`pick`, opening sources (indexes, stores) off the event loop the first time."""
        key = tuple(names or ())
        if self._base is None or (names and (key not in self._named or self._stale(key, names))):
            return await asyncio.to_thread(self.pick, names)
        return self.pick(names)


async def retrieve_from(sources: SourceSet, source_names: list[str], *, query: str, k: int,
                        operator: str | None = None, args: list[str] | None = None,
                        question: str = "") -> tuple[list[Evidence], list[RetrieverCall], list[str]]:
    """Query the named sources concurrently (an operator call, or a plain search). Failures
    become records and notes; the others' evidence is kept."""

    async def one(name: str) -> tuple[list[Evidence], RetrieverCall]:
        source = sources.get(name)
        if source is None:
            label = f"{operator}({', '.join(args or [])})" if operator else query
            return [], RetrieverCall(source=name, query=label, error="source unavailable")
        return await recorded_retrieval(source, query, k, operator=operator, args=args, question=question)

    results = await asyncio.gather(*(one(n) for n in source_names))
    evidence: list[Evidence] = []
    calls: list[RetrieverCall] = []
    notes: list[str] = []
    for hits, call in results:
        evidence.extend(hits)
        calls.append(call)
        if call.error:
            notes.append(f"retrieval failed — {call.source}: {call.error}")
    return evidence, calls, notes
