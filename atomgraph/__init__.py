"""atomgraph: knowledge-intensive question answering as LangGraph workflows."""

from atomgraph.errors import AtomgraphError, ConfigError, ParseError, SourceError, SourceUnavailable
from atomgraph.models import chat_model, resolve_models
from atomgraph.settings import Settings, get_settings

__version__ = "0.1.0"

__all__ = [
    "AtomgraphError", "ConfigError", "ParseError", "SourceError", "SourceUnavailable",
    "Settings", "get_settings", "chat_model", "resolve_models", "__version__",
]
