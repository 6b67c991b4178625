"""Recipes: one configuration file per setting the papers report, so a row of a paper's table
is one command.

    atomgraph eval run --recipe --list                  # every recipe, with the paper's number
    atomgraph eval run --recipe atomr-t2-atomr-hotpotqa # runs it into runs/<recipe>

A recipe (``evaluation/recipes/NAME.toml``, or any ``.toml`` path) names the paper, table and
row, the method, the dataset (a named dataset, or a path under the shared data folder), the
metric and the paper's value(s) (``[paper_values]``), what must be set up first (``needs``),
and the settings the paper used (``[settings]``: models, embeddings, sources, and the method's
run parameters as ``[settings.<method>]``). Recipe settings override the environment and
``atomgraph.toml`` for that run; paths in ``[settings.arm] objects`` are read under the shared
data folder too. A recipe whose dataset (or objects file) is missing is refused before anything
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
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"cannot read recipe {p}: {exc}") from exc
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise ConfigError(f"recipe {p} lacks {', '.join(missing)}")
    values = data.get("paper_values") or ({data["metric"]: data["paper_value"]} if "paper_value" in data else {})
    return Recipe(name=p.stem, title=data["title"], paper=data["paper"], table=data["table"], row=data.get("row", ""),
                  method=data["method"], dataset=data["dataset"], metric=data["metric"],
                  paper_values={k: float(v) for k, v in values.items()}, settings=dict(data["settings"]),
                  needs=list(data.get("needs") or []), notes=data.get("notes", ""), path=p)


def all_recipes() -> list[Recipe]:
    return [load_recipe(n) for n in recipe_names()]


def _under_data(rel: str, what: str, recipe: Recipe) -> str:
    """A path of the recipe: as given when it exists, else under the shared data folder."""
    from atomgraph.evaluation.datasets import DatasetError, data_dir

    if Path(rel).expanduser().exists():
        return str(Path(rel).expanduser())
    try:
        base = data_dir()
    except DatasetError as exc:
        raise ConfigError(f"recipe {recipe.name!r} needs the {what} {rel!r}, but {exc}") from None
    p = base / rel
    if not p.exists():
        raise ConfigError(f"recipe {recipe.name!r} names the {what} {rel!r}, which is missing ({p} does not exist)")
    return str(p)


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


def recipe_settings(recipe: Recipe, base: Any = None):
    """The settings of a recipe run: ``base`` (default: the environment and atomgraph.toml)
    with the recipe's values over them, each method section merged field by field."""
    from dataclasses import asdict, is_dataclass

    from atomgraph.settings import Settings, get_settings

    base = base or get_settings()
    merged = base.model_dump()
    for key, value in recipe.settings.items():
        if isinstance(value, dict) and key in merged:
            current = getattr(base, key)
            current = asdict(current) if is_dataclass(current) else dict(merged[key] or {})
            value = {**current, **value}
            if key == "arm" and value.get("objects"):
                value["objects"] = _under_data(str(value["objects"]), "objects file", recipe)
        merged[key] = value
    try:
        return Settings.model_validate(merged)
    except Exception as exc:  # pydantic's ValidationError names the field
        raise ConfigError(f"recipe {recipe.name!r} has invalid settings: {exc}") from None


def describe(recipe: Recipe) -> str:
    values = ", ".join(f"{k} {v:g}" for k, v in recipe.paper_values.items())
    return f"{recipe.name:<34} {recipe.method:<12} {recipe.dataset:<34} paper: {values}"
