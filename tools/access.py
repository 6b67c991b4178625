"""What a run's client may name: the trust boundary between the operator and a run's client.

Two kinds of value reach atomgraph:

- **operator values**: Python arguments (``build_method(..., sources=[obj], model=obj)``), the
  operator's settings (``ATOMGRAPH_*``, ``atomgraph.toml``) and the command line's options
  (``--sources-factory``, ``--model-factory``, input paths). Whoever sets them runs code already:
  they resolve through the full path (an importable ``module:attr`` source, a ``local:<path>``
  model, any file);
- **client values**: a graph run's ``context`` and ``configurable`` keys (Studio's form, a client
  of ``langgraph dev`` or a LangGraph Server deployment), a graph's input (the indexing graphs'
  ``inputs``) and a recipe file's ``[settings]``, ``dataset`` and objects. They resolve through
  the name-only path here: knowledge sources by a registered or configured name
  (:func:`client_sources`), models by name, never a file unless configured
  (:func:`client_model`), and files only under the operator's ``data_dirs``
  (:func:`client_path`, symlinks and ``..`` resolved first).

Every refusal is a one-line :class:`~atomgraph.errors.ConfigError`, raised before anything is
imported, called or opened. See docs/guides/security.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from atomgraph.errors import ConfigError

# Settings fields that name a file or folder; a recipe may set them only under data_dirs.
SETTINGS_PATHS = {"cache_path": ("reply cache", True), "chroma_path": ("Chroma folder", True),
                  "wikidata_file": ("Wikidata file", False)}  # field -> (what, written)
# Settings a recipe may not set at all: the operator's own access policy.
OPERATOR_ONLY = ("data_dirs", "allowed_models")


def data_folders(settings: Any) -> list[Path]:
    """The operator's ``data_dirs``, each resolved (symlinks and ``..``; relative to the working folder)."""
    return [Path(os.path.realpath(Path(d).expanduser())) for d in settings.data_dirs if str(d).strip()]


# atomgraph's own demo pack (public, read-only): readable by every run, written by none.
BUNDLED_DATA = Path(__file__).resolve().parent / "demo"


def client_path(value: Any, settings: Any, what: str = "file", *, write: bool = False) -> str:
    """``value`` (a client's path) when it lies, symlinks and ``..`` resolved, under one of the
    operator's ``data_dirs`` (or, to be read, in atomgraph's bundled demo pack); else a
    ConfigError naming the setting (nothing is opened)."""
    raw = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    if not raw or not str(raw).strip() or "\x00" in str(raw):
        raise ConfigError(f"the {what} must be a path, not {value!r}")
    real = Path(os.path.realpath(raw))
    folders = data_folders(settings) + ([] if write else [Path(os.path.realpath(BUNDLED_DATA))])
    if any(real == d or real.is_relative_to(d) for d in folders):
        return str(raw)
    raise ConfigError(f"the {what} {str(raw)!r} lies outside the data folders this deployment declares "
                      "(the data_dirs setting); it is not opened")


def client_inputs(inputs: Any, settings: Any) -> list[str]:
    """An indexing graph's ``inputs`` (a client's list of corpus files), each under ``data_dirs``."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    return [client_path(p, settings, "input file") for p in list(inputs or [])]


def configured_models(settings: Any) -> set[str]:
    """The model strings the operator's settings name: ``model``, every ``<role>_model``, ``allowed_models``."""
    from atomgraph.settings import ROLES

    names = {settings.model, *(settings.role_model(r) for r in ROLES), *settings.allowed_models}
    return {str(n).strip() for n in names if n and str(n).strip()}


def _path_like(name: str) -> bool:
    """A model string whose model part is a filesystem path (absolute, home, relative, traversal)."""
    part = name.split(":", 1)[1] if ":" in name else name
    part = part.strip()
    return part.startswith(("/", "~", ".", "\\")) or ".." in Path(part).parts


def _named_local(name: str) -> bool:
    """``local`` (the bundled model) or ``local:<short name>`` of a packaged model
    (``local:qwen2.5-1.5b``): in-process models named by name, not by file."""
    from atomgraph.local.packaged import packaged_model

    return name == "local" or (name.startswith("local:") and packaged_model(name) is not None)


def client_model(name: Any, settings: Any, what: str = "model") -> str:
    """A client's model string when it is a name this deployment offers: one the settings
    configure, else (with ``allowed_models`` empty) any model name, the in-process ``local`` and
    ``local:<packaged short name>`` included — never a model file (``local:<path>``) or another
    path; else a ConfigError."""
    if not isinstance(name, str):
        raise ConfigError(f"the {what} must be a model name, not {type(name).__name__}")
    name = name.strip()
    configured = configured_models(settings)
    if not name or name in configured:
        return name
    if not _named_local(name) and (name.startswith("local:") or _path_like(name)):
        raise ConfigError(f"the {what} is a file ({name!r}); a run chooses models by name, and model files are "
                          "configured by the operator (ATOMGRAPH_MODEL, atomgraph.toml)")
    if settings.allowed_models:
        raise ConfigError(f"the {what} {name!r} is not offered here; choose one of: {', '.join(sorted(configured))}")
    return name


def client_models(models: Mapping[str, Any] | None, settings: Any) -> None:
    """:func:`client_model` for each role of a client's role map."""
    for role, name in (models or {}).items():
        client_model(name, settings, f"model for role {role!r}")


def client_sources(names: Iterable[str], settings: Any, offered: Iterable[str] = ()) -> list[str]:
    """A client's source names when each is registered (:func:`~atomgraph.tools.registry.register_source`,
    the built-ins), named by the settings' ``sources``, or one of ``offered`` (the graph's own);
    else a ConfigError: code (``module:attr``) is never named by a client."""
    from atomgraph.tools.registry import registered_sources

    known = {*registered_sources(), *settings.sources, *offered}
    names = list(names)
    for name in names:
        if not isinstance(name, str) or name not in known:
            code = "; a run names no code ('module:attr' is the operator's: settings, --sources-factory, Python)" \
                if ":" in str(name) else ""
            raise ConfigError(f"unknown knowledge source {name!r}; registered: {', '.join(registered_sources())}"
                              + code)
    return names


def check_recipe_settings(values: Mapping[str, Any], settings: Any, where: str) -> None:
    """A recipe's ``[settings]`` as client values: sources by registered name, models by name,
    files under ``settings.data_dirs`` (the operator's), no access policy of its own."""
    from atomgraph.state.run import data_path_fields
    from atomgraph.tools.registry import registered_sources

    for key in OPERATOR_ONLY:
        if key in values:
            raise ConfigError(f"{where} sets {key!r}, which only the operator's settings set")
    if "sources" in values:
        names = values["sources"]
        names = [names] if isinstance(names, str) else list(names or [])
        offered = set(registered_sources())
        for name in names:
            if name not in offered:
                raise ConfigError(f"{where}: knowledge source {name!r} is not a registered name "
                                  f"({', '.join(sorted(offered))}); a recipe names no code")
    for key, value in values.items():
        if key == "model" or key.endswith("_model") and key != "embedding_model":
            if value:
                try:
                    client_model(value, settings, key)
                except ConfigError as exc:
                    raise ConfigError(f"{where}: {exc}") from None
    for key, (what, write) in SETTINGS_PATHS.items():
        if values.get(key):
            _recipe_path(values[key], settings, what, where, write)
    emb = values.get("embedding_model")
    if isinstance(emb, str) and _path_like(emb):
        _recipe_path(emb, settings, "embedding model folder", where)
    from atomgraph.settings import Settings

    for section, sub in values.items():
        field = Settings.model_fields.get(section)
        if not isinstance(sub, Mapping) or field is None or not isinstance(field.annotation, type):
            continue
        for name, mode in data_path_fields(field.annotation).items():
            if sub.get(name):
                _recipe_path(sub[name], settings, f"{section}.{name}", where, mode == "write")


def _recipe_path(value: Any, settings: Any, what: str, where: str, write: bool = False) -> None:
    try:
        client_path(value, settings, what, write=write)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
