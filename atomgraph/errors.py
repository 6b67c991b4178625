"""Errors atomgraph raises on purpose: each carries a message meant for the user."""


class AtomgraphError(Exception):
    """Base class: the message is shown to the user as is, without a traceback."""


class ConfigError(AtomgraphError, ValueError):
    """A setting is missing or invalid; the message names it and how to set it."""


class SourceUnavailable(AtomgraphError):
    """A knowledge source cannot be used at all (missing credentials, missing index)."""


class SourceError(AtomgraphError):
    """A knowledge source failed for one call (after bounded retries)."""


class ParseError(AtomgraphError, ValueError):
    """Model output that cannot be read in the expected shape."""
