"""``"package.module:attribute"`` strings: how registries and CLI options name Python objects.

Importing runs code, so only operator values reach :func:`import_object` (Python arguments, the
operator's settings, ``--model-factory`` / ``--sources-factory``); a run's context and a recipe
never do (:mod:`atomgraph.tools.access`)."""

from __future__ import annotations

import importlib
from typing import Any

from atomgraph.errors import ConfigError


def import_object(spec: str) -> Any:
    """``"package.module:attribute"`` → the attribute (ConfigError when it cannot be had)."""
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"{spec!r} is not of the form 'module:attribute'")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot import {spec!r}: {exc}") from exc
