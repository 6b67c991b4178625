"""atomgraph's settings: one documented place.

Values come, in increasing priority, from the defaults below, a TOML config file
(``$ATOMGRAPH_CONFIG`` or ``./atomgraph.toml``; keys are the field names, e.g.
``model = "gpt-4o"``), and environment variables (``ATOMGRAPH_<FIELD>`` in upper case,
plus the providers' own ``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` and ``SERPAPI_API_KEY``).

Chat models are configured by role (``planner``, ``executor``, ``answerer``); a role with
no model of its own uses ``model``. A model is either a plain name (served by OpenAI, or by
the OpenAI-compatible server at ``OPENAI_BASE_URL``: vLLM, Ollama, llama.cpp) or any
``init_chat_model`` provider string such as ``"anthropic:claude-sonnet-4-5"``.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from atomgraph.errors import ConfigError

Role = Literal["planner", "executor", "answerer"]
ROLES: tuple[Role, ...] = ("planner", "executor", "answerer")

# Environment variables read besides ATOMGRAPH_<FIELD>.
_PROVIDER_ENV = {
    "openai_api_key": "OPENAI_API_KEY",
    "openai_base_url": "OPENAI_BASE_URL",
    "serpapi_api_key": "SERPAPI_API_KEY",
}


class Settings(BaseModel):
    """Every tunable of atomgraph. See the module docstring for where values come from."""

    # --- chat models -------------------------------------------------------------------
    model: str | None = Field(None, description="Default chat model for every role.")
    planner_model: str | None = Field(None, description="Model that plans reasoning trees.")
    executor_model: str | None = Field(None, description="Model that runs operators and selects sources.")
    answerer_model: str | None = Field(None, description="Model that reasons over child/sibling answers and RAG.")
    temperature: float = 0.0
    max_tokens: int | None = None
    request_timeout: float = 120.0
    max_retries: int = 2
    openai_api_key: str | None = None
    openai_base_url: str | None = None

    # --- LLM response cache -------------------------------------------------------------
    cache: bool = Field(True, description="Cache LLM responses in SQLite (repeatable experiments).")
    cache_path: str = ".atomgraph/llm_cache.sqlite"

    # --- embeddings ---------------------------------------------------------------------
    embedding_model: str = Field(
        "all-MiniLM-L6-v2",
        description="'all-MiniLM-L6-v2' (local, offline), 'openai:<name>', or a sentence-transformers path.",
    )
    embedding_device: str = "cpu"
    embedding_batch_size: int = 64

    # --- knowledge sources --------------------------------------------------------------
    sources: list[str] = Field(
        default_factory=lambda: ["wikipedia", "google", "wikidata"],
        description="Knowledge sources offered to source selection (those available are used).",
    )
    chroma_path: str = ".atomgraph/chroma"
    chroma_host: str | None = Field(None, description="Chroma server host; embedded storage when unset.")
    chroma_port: int = 8000
    chroma_collection: str = "wikipedia"
    serpapi_api_key: str | None = None
    serpapi_location: str | None = None
    serpapi_hl: str | None = "en"
    serpapi_gl: str | None = None
    serpapi_no_cache: bool = False
    wikidata_endpoint: str = "https://query.wikidata.org/sparql"
    wikidata_language: str = "en"
    wikidata_file: str | None = Field(None, description="Turtle file served in-process (pyoxigraph) instead of an endpoint.")
    source_timeout: float = 20.0
    source_retries: int = 3
    user_agent: str = "atomgraph/0.1 (https://github.com/atomgraph/atomgraph; research QA library)"

    # --- ATOMR --------------------------------------------------------------------------
    top_k: int = Field(3, ge=1, description="Passages per text/web source (paper: k = 3).")
    filter_threshold: float = Field(0.5, ge=0, le=1, description="Filter's overlap-coefficient threshold t.")
    max_nodes: int = Field(40, ge=1, description="Largest reasoning tree executed.")
    max_depth: int = Field(6, ge=1, description="Deepest reasoning tree executed (levels of question nodes).")
    max_llm_calls: int = Field(80, ge=1, description="LLM calls allowed per question.")
    max_parallel: int | None = Field(None, ge=1, description="Tree nodes run at once (unset: no limit; 1: sequential).")

    # --- evaluation ---------------------------------------------------------------------
    prices: dict[str, tuple[float, float]] = Field(
        default_factory=dict,
        description="USD per 1M (input, output) tokens by model name; merged over built-in defaults.",
    )

    def model_for(self, role: Role) -> str | None:
        """The model name configured for ``role`` (its own, else the default)."""
        return getattr(self, f"{role}_model") or self.model

    # -----------------------------------------------------------------------------------
    @classmethod
    def load(cls, config_file: str | os.PathLike | None = None, **overrides: Any) -> "Settings":
        """Defaults < config file < environment < ``overrides``."""
        values: dict[str, Any] = {}
        path = config_file or os.environ.get("ATOMGRAPH_CONFIG")
        if path is None and Path("atomgraph.toml").is_file():
            path = "atomgraph.toml"
        if path:
            p = Path(path)
            if not p.is_file():
                raise ConfigError(f"config file {p} does not exist (set by ATOMGRAPH_CONFIG or --config)")
            try:
                data = tomllib.loads(p.read_text(encoding="utf-8"))
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"config file {p} is not valid TOML: {exc}") from exc
            values.update(data.get("atomgraph", data))
        values.update(_from_env(cls))
        values.update({k: v for k, v in overrides.items() if v is not None})
        unknown = sorted(set(values) - set(cls.model_fields))
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
        try:
            return cls(**values)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(x) for x in first["loc"])
            raise ConfigError(f"setting {field!r} is invalid: {first['msg']}") from exc


def _from_env(cls: type[Settings]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, field in cls.model_fields.items():
        raw = os.environ.get(f"ATOMGRAPH_{name.upper()}")
        if raw is None and name in _PROVIDER_ENV:
            raw = os.environ.get(_PROVIDER_ENV[name])
        if raw is None or raw == "":
            continue
        out[name] = _coerce(raw, field.annotation)
    return out


def _coerce(raw: str, annotation: Any) -> Any:
    text = str(annotation)
    if annotation is bool or text == "bool":
        return raw.strip().lower() in {"1", "true", "yes", "on"}
    if "list[str]" in text:
        return [s.strip() for s in raw.split(",") if s.strip()]
    if "dict" in text:
        import json

        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"environment value {raw!r} must be JSON") from exc
    return raw  # pydantic converts numbers


def get_settings(**overrides: Any) -> Settings:
    """Settings as the environment and config file say now (not cached: tests change the env)."""
    return Settings.load(**overrides)
