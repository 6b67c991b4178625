"""Methods by name, built from their declarations (:mod:`atomgraph.methods`, which also keeps the
registry: ``register_method``, ``declaration``, ``method_names``, ``method_descriptions``).

Each method's builder is ``build(model=None, sources=None, settings=None, checkpointer=None)``,
returning a :class:`~atomgraph.lc.MethodGraph` (or the compiled graph, which ``build_method`` wraps).

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
from atomgraph.methods import (declaration, method_descriptions, method_names, register_method,
                               replace_declaration)

GraphBuilder = Callable[..., Any]

__all__ = ["build_method", "method_builder", "register_method", "declaration", "method_names",
           "method_descriptions"]


def method_builder(name: str) -> GraphBuilder:
    """The builder of method ``name``, imported the first time it is asked for."""
    method = declaration(name)
    builder = method.builder
    if isinstance(builder, str):
        try:
            builder = import_object(builder)
        except ConfigError as exc:
            raise ConfigError(f"method {name!r} cannot be loaded: {exc}") from exc
        replace_declaration(dataclasses.replace(method, builder=builder))
    return builder


def build_method(name: str, **kwargs: Any):
    """Method ``name``'s graph (kwargs: model, sources, settings, checkpointer) as a
    :class:`~atomgraph.lc.MethodGraph`; a builder that returns the compiled graph itself (a method
    registered in this process) has it wrapped."""
    from atomgraph.lc import MethodGraph

    graph = method_builder(name)(**kwargs)
    return graph if isinstance(graph, MethodGraph) else MethodGraph(graph)
