"""Errors atomgraph raises on purpose: each carries a message meant for the user.

Each derives from the built-in kind that says what went wrong — ``ValueError`` for bad
configuration or input, ``RuntimeError`` for a source or model that failed — so that code
catching the built-in kinds catches them, and LangGraph Server (``langgraph dev``, Studio)
forwards their text to the client: it passes on the message of ``ValueError``,
``RuntimeError`` and a few other built-ins only, and answers "An internal error occurred"
for every other exception.
"""


class AtomgraphError(Exception):
    """Base class: the message is shown to the user as is, without a traceback."""


class ConfigError(AtomgraphError, ValueError):
    """A setting is missing or invalid; the message names it and how to set it."""


class SourceUnavailable(AtomgraphError, RuntimeError):
    """A knowledge source cannot be used at all (missing credentials, missing index)."""


class SourceError(AtomgraphError, RuntimeError):
    """A knowledge source failed for one call (after bounded retries)."""


class ParseError(AtomgraphError, ValueError):
    """Model output that cannot be read in the expected shape."""


class DeadlineExceeded(TimeoutError):
    """A node ran past the run's deadline plus its grace (``atomgraph.nodes.sync.DEADLINE_GRACE_S``)."""
