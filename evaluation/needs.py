"""What a run's setting needs, checked before its first model call.

A recipe or dataset run names its setting: a model, knowledge sources, an index or object set.
:func:`missing_parts` checks each part it names — the model's access (a key or an
OpenAI-compatible server), each source usable (a Chroma collection that exists, holds data and was
built with the run's embedding model; a key for Google; a SPARQL endpoint that answers a probe),
KAR³'s atom index, ARM's objects file — and returns one line per missing part with the command or
setting that provides it. ``eval run`` refuses to start when any is missing; ``--allow-degraded``
runs anyway, and the run is marked degraded in ``run.json``, its closing lines and every report
row, never set beside the paper's number as comparable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CLOSED_BOOK = ("standard", "cot")  # methods that read no knowledge source
_PROBE = "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1"


def missing_parts(method: str, settings: Any, *, model_given: bool = False, sources_given: bool = False) -> list[str]:
    """One line per part of the run's setting that is missing or unusable ([] when none)."""
    out = [] if model_given else _model_access(method, settings)
    if method == "arm":
        objects = getattr(settings.section("arm"), "objects", "") or ""
        if not objects:
            out.append("ARM's objects: none named (set arm.objects to an objects.jsonl file)")
        elif not Path(objects).is_file():
            out.append(f"ARM's objects: {objects} does not exist")
    elif method == "kar3":
        if not sources_given:
            out += _sources(settings.model_copy(update={"chroma_collection": settings.kar3.collection
                                                        or settings.chroma_collection}), ["atoms"])
    elif method not in CLOSED_BOOK and not sources_given:
        out += _sources(settings, list(settings.sources))
    return out


def _model_access(method: str, settings: Any) -> list[str]:
    from atomgraph.methods import declaration

    out = []
    for role in declaration(method).roles:
        name = (settings.model_for(role) or "").strip()
        if not name:
            out.append(f"a chat model for the {role} role: set ATOMGRAPH_MODEL (or --model)")
        elif name == "local" or name.startswith("local:") or ":" in name:
            continue  # the in-process model, or a provider string whose package reads its own key
        elif not (settings.openai_api_key or settings.openai_base_url):
            out.append(f"access to model {name!r} ({role}): set OPENAI_API_KEY, or OPENAI_BASE_URL of an "
                       "OpenAI-compatible server")
    return sorted(set(out), key=out.index)


def _sources(settings: Any, names: list[str]) -> list[str]:
    """Each named source built and asked whether it is usable; a SPARQL endpoint answers a probe."""
    from atomgraph.tools.registry import build_sources

    if not names:
        return ["knowledge sources: none named (settings.sources)"]
    probing = settings.model_copy(update={"source_retries": 0, "source_timeout": min(10.0, settings.source_timeout)})
    built = build_sources(probing, names, quiet=True)
    out = [f"knowledge source {name!r}: {reason}" for name, reason in built.unavailable.items()]
    for name, source in built.available.items():
        backend = getattr(source, "backend", None)
        if backend is not None and hasattr(backend, "select") and getattr(backend, "url", None):
            try:
                backend.select(_PROBE)
            except Exception as exc:  # noqa: BLE001 - any failure is the endpoint not answering
                reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
                out.append(f"knowledge source {name!r}: the SPARQL endpoint {backend.url} does not answer ({reason}); "
                           "set wikidata_endpoint, or wikidata_file for a local dump")
    return out
