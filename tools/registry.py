"""Sources by name: built-in ones and any a user registers.

>>> from atomgraph.tools import register_source
>>> register_source("mydocs", lambda settings: MyDocsSource())

:func:`build_sources` is the operator's full path: a name with a colon that no one registered
(``"mypkg.kb:retriever"``) is imported. It takes operator values only (settings, Python arguments,
command-line options); a run's client names sources through :func:`atomgraph.tools.access.client_sources`
first, which refuses every name the operator did not declare.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable, Mapping

from atomgraph.errors import ConfigError, SourceUnavailable
from atomgraph.imports import import_object
from atomgraph.settings import Settings, get_settings
from atomgraph.tools.base import KnowledgeSource, SourceSet
# Imported here, not on first use: sources are resolved inside a running event loop, where
# `langgraph dev` refuses the file reads of a first import.
from atomgraph.tools.langchain_sources import as_source
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore

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


def build_sources(settings: Settings, names: Iterable[str] | None = None, *, quiet: bool = False) -> SourceSet:
    """Build the named sources (default: ``settings.sources``); unusable ones are set aside with
    their reason, logged once (``quiet``: at debug level, for a look again at sources already
    reported)."""
    out = SourceSet()
    for name in names if names is not None else settings.sources:
        try:
            source = _named_source(name, settings)
            reason = source.unavailable_reason()
        except SourceUnavailable as exc:
            source, reason = None, str(exc)
        if reason or source is None:
            out.unavailable[name] = reason or "unavailable"
            (log.debug if quiet else log.warning)("knowledge source %s is unavailable: %s", name, out.unavailable[name])
        else:
            out.available[source.name if ":" in name else name] = source
    return out


def _named_source(name: str, settings: Settings) -> KnowledgeSource:
    """A registered source, or (a ``module:object`` name, from the operator only) an imported
    source, retriever, vector store or ``query -> list[Document]`` callable, named after its object."""
    if ":" in name and name not in _FACTORIES:
        return as_source(import_object(name), name=name.rsplit(":", 1)[1].replace(".", "_"))
    return _factory(name)(settings)


def _single(obj: Any) -> bool:
    """One source object rather than a collection of them (a retriever is a Runnable, not a list)."""
    return isinstance(obj, (KnowledgeSource, BaseRetriever, VectorStore))


def as_source_set(sources: Any, settings: Settings | None = None) -> SourceSet:
    """What graph builders accept as ``sources`` — a SourceSet, None for the sources settings
    name, or any iterable of knowledge sources, LangChain retrievers, vector stores,
    ``query -> list[Document]`` callables and source names (one on its own too) — as one
    SourceSet. Anything else is a :class:`ConfigError` naming what is accepted."""
    if sources is None:
        return build_sources(settings or get_settings())
    if isinstance(sources, SourceSet):
        return sources
    return _source_set_of(sources, settings)


def _source_set_of(sources: Iterable[Any], settings: Settings | None = None) -> SourceSet:
    """The given sources: knowledge sources, LangChain retrievers or vector stores,
    ``query -> list[Document]`` callables (each through :func:`as_source`), or registered
    names. Two sources of the same name get suffixes (``name_2``)."""
    out = SourceSet()
    if isinstance(sources, (str, bytes, Mapping)) or not isinstance(sources, Iterable) or _single(sources):
        sources = [sources]  # one retriever / store / callable on its own
    for item in sources:
        if isinstance(item, str):
            named = build_sources(settings or get_settings(), [item])
            out.available.update(named.available)
            out.unavailable.update(named.unavailable)
            continue
        s = as_source(item)
        name, n = s.name, 2
        while name in out.available or name in out.unavailable:
            name, n = f"{s.name}_{n}", n + 1
        s.name = name
        reason = s.unavailable_reason()
        if reason:
            out.unavailable[s.name] = reason
        else:
            out.available[s.name] = s
    return out
