"""Sources by name: built-in ones and any a user registers.

>>> from atomgraph.tools import register_source
>>> register_source("mydocs", lambda settings: MyDocsSource())
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Iterable

from atomgraph.errors import ConfigError, SourceUnavailable
from atomgraph.imports import import_object
from atomgraph.settings import Settings
from atomgraph.tools.base import KnowledgeSource

log = logging.getLogger(__name__)

SourceFactory = Callable[[Settings], KnowledgeSource]

# Built-ins are imported lazily ("module:function") so that importing atomgraph stays cheap.
_FACTORIES: dict[str, SourceFactory | str] = {
    "wikipedia": "atomgraph.tools.chroma_source:wikipedia_from_settings",
    "google": "atomgraph.tools.serpapi_source:google_from_settings",
    "wikidata": "atomgraph.tools.wikidata_source:wikidata_from_settings",
    "atoms": "atomgraph.tools.atom_source:atoms_from_settings",
}


def register_source(name: str, factory: SourceFactory) -> None:
    """Make ``name`` usable in settings and on the command line."""
    _FACTORIES[name] = factory


def registered_sources() -> list[str]:
    return sorted(_FACTORIES)


def _factory(name: str) -> SourceFactory:
    try:
        f = _FACTORIES[name]
    except KeyError:
        raise ConfigError(f"unknown knowledge source {name!r}; registered: {', '.join(registered_sources())}") from None
    if isinstance(f, str):
        f = import_object(f)
        _FACTORIES[name] = f
    return f


@dataclass
class SourceSet:
    """The sources configured for a run: those usable, and why the others are not."""

    available: dict[str, KnowledgeSource] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)

    def __iter__(self):
        return iter(self.available.values())

    def __len__(self) -> int:
        return len(self.available)

    def get(self, name: str) -> KnowledgeSource | None:
        return self.available.get(name)

    @classmethod
    def of(cls, sources: Iterable[KnowledgeSource]) -> "SourceSet":
        out = cls()
        for s in sources:
            reason = s.unavailable_reason()
            if reason:
                out.unavailable[s.name] = reason
            else:
                out.available[s.name] = s
        return out


def build_sources(settings: Settings, names: Iterable[str] | None = None) -> SourceSet:
    """Build the named sources (default: ``settings.sources``); unusable ones are set aside with
    their reason, logged once."""
    out = SourceSet()
    for name in names if names is not None else settings.sources:
        try:
            source = _factory(name)(settings)
            reason = source.unavailable_reason()
        except SourceUnavailable as exc:
            source, reason = None, str(exc)
        if reason or source is None:
            out.unavailable[name] = reason or "unavailable"
            log.warning("knowledge source %s is unavailable: %s", name, out.unavailable[name])
        else:
            out.available[name] = source
    return out


def as_source_set(sources: SourceSet | Iterable[KnowledgeSource] | None, settings: Settings) -> SourceSet:
    """What graph builders accept as ``sources`` — a SourceSet, any iterable of sources, or
    None for the sources settings name — as one SourceSet."""
    if sources is None:
        return build_sources(settings)
    if isinstance(sources, SourceSet):
        return sources
    return SourceSet.of(sources)
