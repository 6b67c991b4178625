"""Recipes: one configuration file per setting the papers report, so a row of a paper's table
is one command.

    atomgraph eval run --recipe --list                  # every recipe, with the paper's number
    atomgraph eval run --recipe atomr-t2-atomr-hotpotqa # runs it into runs/<recipe>

A recipe (``evaluation/recipes/NAME.toml``, or any ``.toml`` path) names the paper, table and
row, the method, the dataset (a named dataset, or a path under the shared data folder), the
metric and the paper's value(s) (``[paper_values]``), what must be set up first (``needs``),
and the settings the paper used (``[settings]``: models, embeddings, sources, and the method's
run parameters as ``[settings.<method>]``).

A recipe is sealed: its run starts from atomgraph's defaults and the recipe's values alone.
``ATOMGRAPH_*`` variables and ``atomgraph.toml`` change it only through explicit
``--set key=value`` (``atomr.prompt_pack=musique``, ``temperature=0.2``), each listed in
``run.json`` and printed at start; what the environment would have changed is printed as not
applied, dict-valued settings (``stage_max_tokens``, ``rate_limits``, ``prices``) included. Only
access settings come from the environment (:data:`ACCESS_FIELDS`: API keys and the
OpenAI-compatible base URL, where the Chroma store and the reply cache live), as they choose no
part of the method's setting. The run-choosing variables that are not settings fields
(:data:`atomgraph.environment.RUN_CHOOSING`: ``$ATOMGRAPH_MODEL_FACTORY``,
``$ATOMGRAPH_SHARED_DATA``, ARM's index-building variables) are not read either: a recipe run's
model object comes only from an explicit ``--model-factory`` and its data folder from the default
location or an explicit ``--data-dir``, each printed at start and recorded in ``run.json``, where
the evaluated files' paths and sha256 and the recipe's paper values are kept too. ``paper=true``
beside an explicit value of a field it sets is refused, naming the conflict. Paths in
``[settings.arm] objects`` are read under the shared data folder too.

A recipe is a client's file (:mod:`atomgraph.tools.access`): its sources are registered names, its models
names (never a ``local:<path>`` file unless the operator configures it), every file it names (its
dataset, objects, index cache, stores) lies under the operator's ``data_dirs``, and it sets no
``data_dirs`` or ``allowed_models`` of its own; anything else is a one-line ConfigError before
anything runs. A recipe whose dataset (or objects file) is missing is refused before anything
runs, with a :class:`ConfigError` naming the file.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atomgraph.errors import ConfigError

RECIPES_DIR = Path(__file__).resolve().parent / "recipes"
REQUIRED = ("title", "paper", "table", "method", "dataset", "metric", "settings")
KNOWN = (*REQUIRED, "row", "paper_values", "paper_value", "needs", "notes")


@dataclass
class Recipe:
    name: str
    title: str
    paper: str
    table: str
    row: str
    method: str
    dataset: str
    metric: str
    paper_values: dict[str, float]
    settings: dict[str, Any]
    needs: list[str] = field(default_factory=list)
    notes: str = ""
    path: Path | None = None

    @property
    def paper_value(self) -> float | None:
        return self.paper_values.get(self.metric)


def recipe_names() -> list[str]:
    return sorted(p.stem for p in RECIPES_DIR.glob("*.toml"))


def load_recipe(name_or_path: str | Path) -> Recipe:
    """The recipe named ``name_or_path`` (a bundled name, or a .toml file)."""
    p = Path(name_or_path)
    if not (p.suffix == ".toml" and p.is_file()):
        p = RECIPES_DIR / f"{name_or_path}.toml"
        if not p.is_file():
            import difflib

            close = difflib.get_close_matches(str(name_or_path), recipe_names(), n=5, cutoff=0.5)
            hint = f"; did you mean: {', '.join(close)}" if close else ""
            raise ConfigError(f"unknown recipe {str(name_or_path)!r}{hint} (list them: atomgraph eval run --recipe --list)")
    from atomgraph.jsonl import UTF8_ONLY, read_text

    text = read_text(p, what="recipe file", error=ConfigError, hint=UTF8_ONLY)
    from atomgraph.text import TooDeep, check_depth

    try:
        data = tomllib.loads(check_depth(text, "the recipe"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"cannot read recipe {p}: {exc}") from None
    except (TooDeep, RecursionError) as exc:
        raise ConfigError(f"cannot read recipe {p}: {exc if isinstance(exc, TooDeep) else 'nested too deeply'}") from None
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise ConfigError(f"recipe {p} lacks {', '.join(missing)}")
    unknown = [k for k in data if k not in KNOWN]
    if unknown:
        raise ConfigError(f"recipe {p} has unknown key(s) {', '.join(map(repr, unknown))} "
                          f"(a recipe has: {', '.join(KNOWN)})")
    if not isinstance(data["settings"], dict):
        raise ConfigError(f"recipe {p}: 'settings' must be a table ([settings]), not {type(data['settings']).__name__}")
    _check_recipe_types(data, p)
    values = data.get("paper_values") or ({data["metric"]: data["paper_value"]} if "paper_value" in data else {})
    return Recipe(name=p.stem, title=data["title"], paper=data["paper"], table=data["table"], row=data.get("row", ""),
                  method=data["method"], dataset=data["dataset"], metric=data["metric"],
                  paper_values={k: float(v) for k, v in values.items()}, settings=dict(data["settings"]),
                  needs=list(data.get("needs") or []), notes=data.get("notes", ""), path=p)


_TEXT_KEYS = ("title", "paper", "table", "row", "method", "dataset", "metric", "notes")


def _check_recipe_types(data: dict, p: Path) -> None:
    """A one-line ConfigError for a recipe value of the wrong type or a number that is not finite
    (TOML writes ``nan`` and ``inf``): text where text is due, ``needs`` a list of text, paper values
    finite numbers, and no NaN or infinity anywhere (``[settings]`` included)."""
    import math

    def kind(v: Any) -> str:
        return type(v).__name__

    for key in _TEXT_KEYS:
        if key in data and not isinstance(data[key], str):
            raise ConfigError(f"recipe {p}: {key!r} must be text, not {kind(data[key])}")
    needs = data.get("needs", [])
    if not isinstance(needs, list) or not all(isinstance(n, str) for n in needs):
        raise ConfigError(f"recipe {p}: 'needs' must be a list of text")
    values = data.get("paper_values", {})
    if not isinstance(values, dict):
        raise ConfigError(f"recipe {p}: 'paper_values' must be a table of numbers, not {kind(values)}")
    for name, v in [*values.items(), *([("paper_value", data["paper_value"])] if "paper_value" in data else [])]:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ConfigError(f"recipe {p}: paper value {name!r} must be a number, not {kind(v)}")

    def walk(value: Any, where: str) -> None:
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"recipe {p}: {where} is {value}: a recipe holds finite numbers only")
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{where}.{k}" if where else str(k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{where}[{i}]")

    walk(data, "")


def all_recipes() -> list[Recipe]:
    return [load_recipe(n) for n in recipe_names()]


def _under_data(rel: str, what: str, recipe: Recipe) -> str:
    """A path of the recipe: as given when it exists, else under the shared data folder; either way
    under the operator's ``data_dirs`` (a recipe is a client: tools/access.py)."""
    from atomgraph.evaluation.datasets import DatasetError, data_dir
    from atomgraph.settings import get_settings

    if Path(rel).exists():
        return _client_path(rel, what, recipe, get_settings())
    try:
        base = data_dir()
    except DatasetError as exc:
        raise ConfigError(f"recipe {recipe.name!r} needs the {what} {rel!r}, but {exc}") from None
    p = base / rel
    if not p.exists():
        raise ConfigError(f"recipe {recipe.name!r} names the {what} {rel!r}, which is missing ({p} does not exist)")
    return _client_path(str(p), what, recipe, get_settings())


def _client_path(path: str, what: str, recipe: Recipe, settings: Any) -> str:
    from atomgraph.tools.access import client_path

    try:
        return client_path(path, settings, what)
    except ConfigError as exc:
        raise ConfigError(f"recipe {recipe.name!r}: {exc}") from None


def resolve_dataset(recipe: Recipe) -> str:
    """The recipe's dataset as ``load_dataset`` takes it; a missing one is a ConfigError."""
    from atomgraph.evaluation.datasets import DATASETS, DatasetError, data_dir

    if recipe.dataset in DATASETS:
        try:
            base = data_dir()
        except DatasetError as exc:
            raise ConfigError(f"recipe {recipe.name!r} needs dataset {recipe.dataset!r}, but {exc}") from None
        for rel in DATASETS[recipe.dataset][0]:
            if not (base / rel).exists():
                raise ConfigError(f"recipe {recipe.name!r} names dataset {recipe.dataset!r}, which is missing "
                                  f"({base / rel} does not exist)")
        return recipe.dataset
    return _under_data(recipe.dataset, "dataset", recipe)


# Settings a sealed recipe still takes from the environment: access and where local stores live
# (keys, the OpenAI-compatible server, the Chroma folder/server, the reply cache's file), not the
# method's setting.
ACCESS_FIELDS = ("openai_api_key", "openai_base_url", "serpapi_api_key", "cache_path", "chroma_path", "chroma_host",
                 "chroma_port", "data_dirs", "allowed_models")
SECRET_ACCESS = ("openai_api_key", "serpapi_api_key")


def sealed_defaults():
    """atomgraph's defaults, read from no environment variable and no config file, with only
    :data:`ACCESS_FIELDS` taken from the environment."""
    from atomgraph.settings import get_settings, settings_from

    env = get_settings()
    access = {k: getattr(env, k) for k in ACCESS_FIELDS if getattr(env, k, None)}
    return settings_from(access)


def parse_sets(items: list[str] | tuple[str, ...] | None) -> dict[str, Any]:
    """``["atomr.prompt_pack=musique", "temperature=0.2"]`` → ``{"atomr.prompt_pack": "musique", ...}``
    (a value is read as a TOML value — numbers, booleans, lists, quoted strings — else as text).
    An unknown key or a malformed item is a one-line ConfigError."""
    from dataclasses import fields, is_dataclass

    from atomgraph.settings import Settings

    out: dict[str, Any] = {}
    for item in items or []:
        key, eq, raw = str(item).partition("=")
        key = key.strip()
        if not eq or not key:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE (e.g. atomr.prompt_pack=musique)")
        head, _, sub = key.partition(".")
        if head not in Settings.model_fields:
            raise ConfigError(f"--set {key}: unknown setting {head!r}")
        if sub:
            section = Settings.model_fields[head].default_factory() if Settings.model_fields[head].default_factory \
                else None
            names = {f.name for f in fields(section)} if is_dataclass(section) else set()
            if sub not in names:
                raise ConfigError(f"--set {key}: {head!r} has no setting {sub!r}"
                                  + (f" (it has {', '.join(sorted(names))})" if names else ""))
        from atomgraph.text import TooDeep, check_depth

        try:
            value = tomllib.loads(check_depth(f"v = {raw.strip()}", f"--set {key}"))["v"]
        except tomllib.TOMLDecodeError:
            value = raw.strip()
        except TooDeep as exc:
            raise ConfigError(str(exc)) from None
        out[key] = value
    return out


def _dotted(data: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        if isinstance(v, dict) and v and all(isinstance(x, str) for x in v) and not prefix and k not in (
                "stage_max_tokens", "rate_limits", "prices"):
            out.update(_dotted(v, f"{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def effective_config(settings: Any) -> dict[str, Any]:
    """The settings as dotted keys (``atomr.prompt_pack``), secrets left out: what a resumed run
    must match."""
    data = settings.model_dump(mode="json")
    for k in SECRET_ACCESS:
        data.pop(k, None)
    return _dotted(data)


def not_applied(sets: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the environment and atomgraph.toml would have changed in a recipe run and did not
    (dotted key → their value), less what ``--set`` gave explicitly."""
    from atomgraph.settings import get_settings

    env, pristine = effective_config(get_settings()), effective_config(sealed_defaults())
    return {k: v for k, v in env.items() if pristine.get(k) != v and k not in (sets or {}) and k not in ACCESS_FIELDS}


def env_not_applied(args: Any = None) -> dict[str, str]:
    """The run-choosing variables (:data:`atomgraph.environment.RUN_CHOOSING`: the model
    factory, the shared data folder, ARM's index building) set in the environment, which a recipe
    run does not take (``$NAME`` → value), less ``$ATOMGRAPH_MODEL_FACTORY`` when ``args`` gives
    ``--model-factory`` explicitly."""
    from atomgraph.environment import run_choosing_set

    out = run_choosing_set()
    if args is not None and getattr(args, "model_factory", None):
        out.pop("$ATOMGRAPH_MODEL_FACTORY", None)
    return out


def recipe_settings(recipe: Recipe, base: Any = None, sets: dict[str, Any] | None = None):
    """The settings of a recipe run: ``base`` (default: :func:`sealed_defaults`, never the
    environment) with the recipe's values over them, each method section merged field by field,
    then the explicit ``sets`` (:func:`parse_sets`)."""
    from dataclasses import asdict, is_dataclass

    from atomgraph.tools.access import check_recipe_settings
    from atomgraph.settings import settings_from

    base = base or sealed_defaults()
    values = dict(recipe.settings)
    if isinstance(values.get("arm"), dict) and values["arm"].get("objects"):
        values["arm"] = {**values["arm"], "objects": _under_data(str(values["arm"]["objects"]), "objects file", recipe)}
    # client values (tools/access.py): sources and models by name, files under the operator's data_dirs
    check_recipe_settings(values, base, f"recipe {recipe.name!r}")
    merged = base.model_dump()
    for key, value in values.items():
        if isinstance(value, dict) and key in merged:
            current = getattr(base, key)
            current = asdict(current) if is_dataclass(current) else dict(merged[key] or {})
            value = {**current, **value}
        merged[key] = value
    _merge_sets(merged, sets)
    check_paper_conflicts(recipe.settings, sets, where=f"recipe {recipe.name!r}")
    try:
        return settings_from(merged)
    except Exception as exc:  # pydantic's ValidationError names the field
        raise ConfigError(f"recipe {recipe.name!r} has invalid settings: {_first_error(exc)}") from None


def check_paper_conflicts(settings: dict, sets: dict[str, Any] | None, *, where: str) -> None:
    """A ConfigError when a method section given explicitly (the recipe's ``[settings.<method>]``
    and the ``--set <method>.<field>`` values over it) asks for ``paper=true`` and for a value
    of a field that ``paper=true`` sets (:meth:`ArmContext.conflicts`)."""
    from atomgraph.settings import Settings

    explicit: dict[str, dict] = {k: dict(v) for k, v in settings.items() if isinstance(v, dict)}
    for key, value in (sets or {}).items():
        head, _, sub = key.partition(".")
        if sub:
            explicit.setdefault(head, {})[sub] = value
    for head, values in explicit.items():
        field = Settings.model_fields.get(head)
        conflicts = getattr(getattr(field, "annotation", None), "conflicts", None)
        message = conflicts(values) if callable(conflicts) else ""
        if message:
            raise ConfigError(f"{where}: [{head}] {message}")


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        return f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}"
    return str(exc).splitlines()[0][:300]


def _merge_sets(merged: dict, sets: dict[str, Any] | None) -> None:
    from dataclasses import asdict, is_dataclass

    for key, value in (sets or {}).items():
        head, _, sub = key.partition(".")
        if sub:
            current = merged.get(head)
            current = asdict(current) if is_dataclass(current) else dict(current or {})
            merged[head] = {**current, sub: value}
        else:
            merged[head] = value


def apply_sets(settings: Any, sets: dict[str, Any] | None):
    """``settings`` with the explicit ``--set`` values over them (a ConfigError names a bad one)."""
    from atomgraph.settings import settings_from

    if not sets:
        return settings
    merged = settings.model_dump()
    _merge_sets(merged, sets)
    check_paper_conflicts({}, sets, where="--set")
    try:
        return settings_from(merged)
    except Exception as exc:
        raise ConfigError(f"--set: invalid value: {_first_error(exc)}") from None


def describe(recipe: Recipe) -> str:
    values = ", ".join(f"{k} {v:g}" for k, v in recipe.paper_values.items())
    return f"{recipe.name:<34} {recipe.method:<12} {recipe.dataset:<34} paper: {values}"
