"""atomgraph: knowledge-intensive question answering as LangGraph workflows.

>>> from atomgraph import build_atomr_graph
>>> graph = build_atomr_graph(model=chat_model, sources=[source])   # embed in any LangChain app
>>> graph.invoke({"question": "..."})["answer"]

``atomgraph.graph`` is the compiled ATOMR graph configured from settings.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from atomgraph.errors import AtomgraphError, ConfigError, ParseError, SourceError, SourceUnavailable

try:
    __version__ = version("atomgraph")  # the installed distribution's (pyproject.toml)
except PackageNotFoundError:  # pragma: no cover - a source tree that is not installed
    __version__ = "0+unknown"

# Imported on first use so that `import atomgraph` stays light (the command line imports what its command needs).
_LAZY = {
    "chat_model": ("atomgraph.models", "chat_model"),
    "resolve_models": ("atomgraph.models", "resolve_models"),
    "Settings": ("atomgraph.settings", "Settings"),
    "get_settings": ("atomgraph.settings", "get_settings"),
    "build_atomr_graph": ("atomgraph.graphs.atomr", "build_atomr_graph"),
    "graph": ("atomgraph.graphs.atomr", "graph"),
    "build_method": ("atomgraph.graphs.registry", "build_method"),
    "register_method": ("atomgraph.graphs.registry", "register_method"),
    "KnowledgeSource": ("atomgraph.tools.base", "KnowledgeSource"),
    "register_source": ("atomgraph.tools.registry", "register_source"),
    "build_sources": ("atomgraph.tools.registry", "build_sources"),
    "Evidence": ("atomgraph.state.run", "Evidence"),
    "ArmRetriever": ("atomgraph.retrievers", "ArmRetriever"),
    "Kar3Retriever": ("atomgraph.retrievers", "Kar3Retriever"),
    "as_source": ("atomgraph.tools.langchain_sources", "as_source"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'atomgraph' has no attribute {name!r}")


__all__ = [
    "AtomgraphError", "ConfigError", "ParseError", "SourceError", "SourceUnavailable", "__version__", *_LAZY,
]
