"""Run parameters: one declared dataclass per method, used three ways.

- as the method's section of the settings (``[atomr]`` in ``atomgraph.toml``,
  ``ATOMGRAPH_ATOMR__TOP_K`` in the environment);
- as the graph's LangGraph ``context_schema``, which LangGraph Studio draws as a form
  (each field's ``Field(description=...)`` is the form's help text);
- as the per-run parameters a node reads (:func:`resolve_params`).

A field is declared ``name: Annotated[type, Field(ge=..., description=...)] = default`` on a
``@dataclass(kw_only=True)``. Priority, lowest first: the dataclass default, the settings
section, the run's ``context``, then ``config["configurable"]`` keys of the same names.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Mapping, TypeVar

from pydantic import TypeAdapter, ValidationError

from atomgraph.errors import ConfigError

C = TypeVar("C")

_ADAPTERS: dict[type, TypeAdapter] = {}


def _adapter(cls: type) -> TypeAdapter:
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = TypeAdapter(cls)
    return _ADAPTERS[cls]


def param_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def validate_params(cls: type[C], values: Mapping[str, Any]) -> C:
    """``cls(**values)`` validated (types coerced, bounds checked); ConfigError naming the field."""
    unknown = sorted(set(values) - set(param_names(cls)))
    if unknown:
        raise ConfigError(f"unknown {cls.__name__} parameter(s): {', '.join(unknown)}; "
                          f"known: {', '.join(param_names(cls))}")
    try:
        return _adapter(cls).validate_python(dict(values))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(x) for x in first["loc"])
        raise ConfigError(f"{cls.__name__} parameter {field!r} is invalid: {first['msg']}") from exc


def context_with_defaults(cls: type[C], defaults: C | None) -> type[C]:
    """A subclass of ``cls`` (same name) whose field defaults are the values of ``defaults``
    (the settings section), so Studio's form shows, and a partial ``context`` dict keeps,
    what the settings say rather than the paper's defaults."""
    if defaults is None or dataclasses.asdict(defaults) == dataclasses.asdict(cls()):
        return cls
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = [
        (f.name, hints[f.name], dataclasses.field(default=getattr(defaults, f.name)))
        for f in dataclasses.fields(cls)
    ]
    sub = dataclasses.make_dataclass(cls.__name__, fields, bases=(cls,), kw_only=True)
    sub.__doc__ = cls.__doc__
    sub.__module__ = cls.__module__
    return sub


def resolve_params(cls: type[C], base: C | None, context: Any = None,
                   configurable: Mapping[str, Any] | None = None) -> C:
    """The parameters of one run: ``base`` (settings) < ``context`` < ``configurable``."""
    values: dict[str, Any] = dataclasses.asdict(base) if base is not None else {}
    if context is not None:
        if isinstance(context, Mapping):
            values.update(context)
        elif dataclasses.is_dataclass(context):
            values.update({f.name: getattr(context, f.name) for f in dataclasses.fields(context)
                           if f.name in values or base is None})
        else:
            raise ConfigError(f"run context must be a {cls.__name__} or a dict, not {type(context).__name__}")
    names = set(param_names(cls))
    values.update({k: v for k, v in (configurable or {}).items() if k in names and v is not None})
    return validate_params(cls, values)
