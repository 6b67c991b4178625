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
from typing import Annotated, Any, Mapping, TypeVar

from pydantic import Field, TypeAdapter, ValidationError

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


@dataclasses.dataclass(kw_only=True)
class RunChoices:
    """What every method's run can choose besides its parameters: the chat model (for every
    role, or per role), its sampling temperature and the knowledge sources. Blank values keep
    what the graph was built with (or the settings); Studio shows them on every graph's form."""

    model: Annotated[str, Field(description=(
        "Chat model for every role in this run, as ATOMGRAPH_MODEL takes it: an OpenAI or "
        "OpenAI-compatible model name, 'local' (the bundled in-process model), 'local:/path/model.gguf', "
        "or an init_chat_model string such as 'anthropic:claude-sonnet-4-5'. Blank: the configured model."))] = ""
    models: Annotated[dict[str, str], Field(description=(
        "Chat model per role for this run (e.g. {\"planner\": \"gpt-4o\"}), over 'model'."))] = \
        dataclasses.field(default_factory=dict)
    temperature: Annotated[float | None, Field(ge=0.0, le=2.0, description=(
        "Sampling temperature of this run's model calls (stages with a temperature of their own keep it). "
        "Blank: the settings' temperature."))] = None
    sources: Annotated[list[str], Field(description=(
        "Knowledge sources for this run, by name (e.g. [\"wikipedia\", \"wikidata\"]). "
        "Empty: the sources the graph was built with, or the settings' sources."))] = \
        dataclasses.field(default_factory=list)


def run_context() -> Any:
    """The current graph run's context (LangGraph's ``get_runtime().context``); None outside a run."""
    try:
        from langgraph.runtime import get_runtime

        return get_runtime().context
    except (RuntimeError, KeyError, AttributeError):
        return None


def context_with_defaults(cls: type[C], defaults: C | None, extra: type | None = None) -> type[C]:
    """A subclass of ``cls`` (same name) whose field defaults are the values of ``defaults``
    (the settings section), so Studio's form shows, and a partial ``context`` dict keeps,
    what the settings say rather than the paper's defaults; with ``extra``'s fields
    (:class:`RunChoices`) added. Building it with an unknown key raises a ConfigError (a
    ValueError) that lists the valid ones."""
    if extra is None and (defaults is None or dataclasses.asdict(defaults) == dataclasses.asdict(cls())):
        return cls
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = [
        (f.name, hints[f.name], dataclasses.field(default=getattr(defaults, f.name)) if defaults is not None
         else _same_default(f))
        for f in dataclasses.fields(cls)
    ]
    if extra is not None:
        extra_hints = typing.get_type_hints(extra, include_extras=True)
        fields += [(f.name, extra_hints[f.name], _same_default(f)) for f in dataclasses.fields(extra)
                   if f.name not in {name for name, *_ in fields}]
    sub = dataclasses.make_dataclass(cls.__name__, fields, bases=(cls,), kw_only=True)
    init = sub.__init__
    names = [name for name, *_ in fields]

    def __init__(self, **kwargs):
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise ConfigError(f"unknown {cls.__name__} parameter(s): {', '.join(unknown)}; "
                              f"known: {', '.join(names)}")
        init(self, **kwargs)

    sub.__init__ = __init__
    sub.__doc__ = cls.__doc__
    sub.__module__ = cls.__module__
    return sub


def _same_default(f: dataclasses.Field) -> dataclasses.Field:
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return dataclasses.field(default_factory=f.default_factory)  # type: ignore[misc]
    return dataclasses.field(default=f.default)


def resolve_params(cls: type[C], base: C | None, context: Any = None,
                   configurable: Mapping[str, Any] | None = None, ignore: type | None = None) -> C:
    """The parameters of one run: ``base`` (settings) < ``context`` < ``configurable``
    (keys of ``ignore``'s fields in the context are someone else's and are left out)."""
    values: dict[str, Any] = dataclasses.asdict(base) if base is not None else {}
    names = set(param_names(cls))
    others = set(param_names(ignore)) if ignore is not None else set()
    if context is not None:
        if isinstance(context, Mapping):
            values.update({k: v for k, v in context.items() if k not in others or k in names})
        elif dataclasses.is_dataclass(context):
            values.update({f.name: getattr(context, f.name) for f in dataclasses.fields(context)
                           if f.name in names})
        else:
            raise ConfigError(f"run context must be a {cls.__name__} or a dict, not {type(context).__name__}")
    values.update({k: v for k, v in (configurable or {}).items() if k in names and v is not None})
    return validate_params(cls, values)
