"""Methods by name, from their declarations (:mod:`atomgraph.methods`).

Each method's builder is ``build(model=None, sources=None, settings=None, checkpointer=None)
-> CompiledStateGraph``.

>>> from atomgraph.methods import Method
>>> from atomgraph.graphs.registry import register_method, build_method
>>> register_method(Method("mine", build_my_graph, MyContext, "my method"))
>>> graph = build_method("mine", model=my_model)
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from atomgraph.errors import ConfigError
from atomgraph.imports import import_object
from atomgraph.methods import METHODS, Method

GraphBuilder = Callable[..., Any]

_METHODS: dict[str, Method] = {m.name: m for m in METHODS}


def register_method(method: Method | str, builder: GraphBuilder | str | None = None, description: str = "") -> None:
    """Make a method usable by ``atomgraph eval run --method`` and :func:`build_method`: a
    :class:`~atomgraph.methods.Method` declaration, or (shorthand) a name with its builder (a
    callable or a ``"module:function"`` import string) and the one line ``eval methods`` shows."""
    if isinstance(method, Method):
        _METHODS[method.name] = method
        return
    if builder is None:
        raise ConfigError("register_method needs a Method declaration, or a name and its builder")
    known = _METHODS.get(method)
    base = known or Method(method, builder, object, description)
    _METHODS[method] = dataclasses.replace(base, builder=builder, description=description or base.description)


def declaration(name: str) -> Method:
    """The declaration of method (or indexing graph) ``name``; ConfigError listing the known ones."""
    try:
        return _METHODS[name]
    except KeyError:
        raise ConfigError(f"unknown method {name!r}; registered methods: {', '.join(method_names())}") from None


def method_descriptions() -> dict[str, str]:
    """Every registered question-answering method with its one-line description, by name."""
    return {name: _METHODS[name].description for name in method_names()}


def method_names() -> list[str]:
    """The question-answering methods (``ask``, ``eval run``), sorted."""
    return sorted(n for n, m in _METHODS.items() if m.kind == "qa")


def method_builder(name: str) -> GraphBuilder:
    method = declaration(name)
    builder = method.builder
    if isinstance(builder, str):
        try:
            builder = import_object(builder)
        except ConfigError as exc:
            raise ConfigError(f"method {name!r} cannot be loaded: {exc}") from exc
        _METHODS[name] = dataclasses.replace(method, builder=builder)
    return builder


def build_method(name: str, **kwargs: Any):
    """The compiled graph of method ``name`` (kwargs: model, sources, settings, checkpointer)."""
    return method_builder(name)(**kwargs)
