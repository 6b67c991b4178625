"""Options several sub-commands share: which model(s) and knowledge sources to use."""

from __future__ import annotations

import sys

from atomgraph.environment import env_value
from atomgraph.settings import Settings, get_settings


def plain_help(text: str) -> str:
    """A docstring as ``--help`` text: reST markup (````code````, ``:mod:`x```) as plain text."""
    import re

    text = re.sub(r":(?:mod|func|class|meth|data|attr):`~?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def seconds(text: str) -> float:
    """An argparse type: a positive number of seconds (a clear usage error otherwise)."""
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or not 0 < value < 10**7:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds below 10^7, not {text!r}")
    return value


def print_json(value) -> None:
    """Print ``value`` as indented JSON that is always valid UTF-8 (lone surrogates escaped)."""
    from atomgraph.evaluation.records import jsonable, safe_json

    sys.stdout.write(safe_json(jsonable(value), indent=2) + "\n")


def add_deadline_arg(parser) -> None:
    parser.add_argument("--deadline", type=seconds, metavar="SECONDS",
                        help="time allowed per question: after it no model call is made and the method ends "
                             "with its best answer, the reason recorded")


def deadline_config(deadline_s: float | None) -> dict:
    """The run config carrying a per-question deadline (``configurable.deadline``, a time.time() value)."""
    import time

    return {"configurable": {"deadline": time.time() + deadline_s}} if deadline_s else {}


def add_model_source_args(parser) -> None:
    parser.add_argument("--model", help="chat model for every role (overrides ATOMGRAPH_MODEL), or scripted:RULES.json")
    parser.add_argument("--model-factory", help="module:function returning the model(s) to use "
                        "(default: $ATOMGRAPH_MODEL_FACTORY)")
    parser.add_argument("--sources", help="comma-separated knowledge sources (default: settings)")
    parser.add_argument("--sources-factory", help="module:function returning the knowledge sources to use")
    parser.add_argument("--refresh", action="store_true",
                        help="ask the model again instead of replaying cached replies (new replies replace old ones)")


def model_and_sources(args, require_model: bool = True, base: Settings | None = None,
                      require_sources: bool = True, sealed: bool = False) -> tuple[Settings, object, object]:
    """(settings, model(s), sources) from the shared options; ``None`` model/sources mean
    "from settings". With ``require_model``, a missing model fails here, naming the setting.
    ``base``: settings to start from (a recipe's) instead of the environment's. Sources named
    with ``--sources`` are asked for, so required: with ``require_sources`` they are opened
    here, and one that cannot be used (a misspelt collection, a dead server) is an error before
    any model call. ``sealed`` (a recipe run): ``$ATOMGRAPH_MODEL_FACTORY`` is not read, only an
    explicit ``--model-factory``."""
    from atomgraph.evaluation.runner import import_object, model_from_spec
    from atomgraph.models import resolve_models

    overrides = {}
    if args.model and not args.model.startswith("scripted:"):
        overrides["model"] = args.model
    if args.sources:
        overrides["sources"] = [s.strip() for s in args.sources.split(",") if s.strip()]
    if getattr(args, "refresh", False):
        overrides["cache_refresh"] = True
    settings = base.model_copy(update=overrides) if base is not None else get_settings(**overrides)
    factory = args.model_factory or (None if sealed else env_value("ATOMGRAPH_MODEL_FACTORY"))
    model = model_from_spec(args.model, factory, settings)
    if require_model:
        resolve_models(model, settings)
    sources = None
    if args.sources_factory:
        fn = import_object(args.sources_factory)
        sources = fn(settings) if callable(fn) else fn
        if require_sources:
            from atomgraph.tools.registry import as_source_set

            sources = as_source_set(sources, settings).require()
    elif args.sources and require_sources:
        from atomgraph.tools.registry import build_sources

        sources = build_sources(settings, overrides["sources"]).require()
    return settings, model, sources
