"""Options several sub-commands share: which model(s) and knowledge sources to use."""

from __future__ import annotations

import os

from atomgraph.settings import Settings, get_settings


def add_model_source_args(parser) -> None:
    parser.add_argument("--model", help="chat model for every role (overrides ATOMGRAPH_MODEL), or scripted:RULES.json")
    parser.add_argument("--model-factory", help="module:function returning the model(s) to use "
                        "(default: $ATOMGRAPH_MODEL_FACTORY)")
    parser.add_argument("--sources", help="comma-separated knowledge sources (default: settings)")
    parser.add_argument("--sources-factory", help="module:function returning the knowledge sources to use")
    parser.add_argument("--refresh", action="store_true",
                        help="ask the model again instead of replaying cached replies (new replies replace old ones)")


def model_and_sources(args, require_model: bool = True, base: Settings | None = None) -> tuple[Settings, object, object]:
    """(settings, model(s), sources) from the shared options; ``None`` model/sources mean
    "from settings". With ``require_model``, a missing model fails here, naming the setting.
    ``base``: settings to start from (a recipe's) instead of the environment's."""
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
    factory = args.model_factory or os.environ.get("ATOMGRAPH_MODEL_FACTORY")
    model = model_from_spec(args.model, factory, settings)
    if require_model:
        resolve_models(model, settings)
    sources = None
    if args.sources_factory:
        fn = import_object(args.sources_factory)
        sources = fn(settings) if callable(fn) else fn
    return settings, model, sources
