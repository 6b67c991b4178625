"""atomgraph's settings: one documented place, loaded with pydantic-settings.

Values come, in increasing priority, from the defaults below, a TOML config file
(``$ATOMGRAPH_CONFIG`` or ``./atomgraph.toml``; top-level keys are the field names, e.g.
``model = "gpt-4o"``, and each method has its own table, e.g. ``[atomr]`` with
``top_k = 5``), and environment variables: ``ATOMGRAPH_<FIELD>`` in upper case, nested
per method with a double underscore (``ATOMGRAPH_ATOMR__TOP_K=5``), plus the providers' own
``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` and ``SERPAPI_API_KEY``.

Chat models are configured by role (``planner``, ``executor``, ``answerer`` for ATOMR and
the baselines; ``atomizer``, ``proposer``, ``selector`` for KAR³; ``decoder`` for ARM); a
role with no model of its own uses ``model``. A model is either a plain name (served by
OpenAI, or by the OpenAI-compatible server at ``OPENAI_BASE_URL``: vLLM, Ollama, llama.cpp)
or any ``init_chat_model`` provider string such as ``"anthropic:claude-sonnet-4-5"``.

Each method's run parameters (its ``[section]``) are the dataclass its graph declares as
LangGraph ``context_schema``; see :mod:`atomgraph.state.run`.
"""

from __future__ import annotations

import contextvars
import difflib
import functools
import os
import tomllib
import warnings
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, ValidationError, create_model, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from atomgraph.environment import VARIABLES as ENVIRONMENT_VARIABLES
from atomgraph.environment import env_value
from atomgraph.environment import sealed as _environment_sealed
from atomgraph.errors import ConfigError
from atomgraph.methods import METHODS, roles_of, settings_sections

# The model roles: every role a built-in method declares (atomgraph/methods.py), each a field
# ``<role>_model`` below. A role of a method registered at run time has no field: its model is the
# one the graph is given for it (``models={"critic": ...}``), else ``ATOMGRAPH_CRITIC_MODEL`` in the
# environment, else ``model`` (``Settings.role_model``).
Role = str
ROLES: tuple[str, ...] = roles_of(METHODS)


# Variables read straight from the environment where they are used, not settings fields
# (atomgraph/environment.py reads them). With the fields (``ATOMGRAPH_<FIELD>``,
# ``ATOMGRAPH_<SECTION>__<FIELD>``) and the roles' ``ATOMGRAPH_<ROLE>_MODEL`` they are every
# ``ATOMGRAPH_*`` name atomgraph reads; any other is a typo, and loading the settings says so
# (:func:`unknown_environment`) rather than ignoring it in silence.
ENV_ONLY: dict[str, str] = ENVIRONMENT_VARIABLES
_WARNED: set[str] = set()


class UnknownSettingWarning(UserWarning):
    """An ``ATOMGRAPH_*`` environment variable that names no setting: it has no effect."""


@functools.lru_cache(maxsize=1)
def _known_names() -> tuple[frozenset[str], dict[str, frozenset[str]], dict[str, str]]:
    """The settings' fields, each section's fields, and what a typo is compared with -> the name
    shown: fixed once the settings class is built (read once, not at every load)."""
    fields = frozenset(name.upper() for name in Settings.model_fields)
    sections = {name.upper(): frozenset(f.upper() for f in getattr(method.context, "__dataclass_fields__", {}))
                for name, method in settings_sections().items()}
    names = {f: f"ATOMGRAPH_{f}" for f in fields} | {k[len("ATOMGRAPH_"):]: k for k in ENV_ONLY}
    names |= {f: f"ATOMGRAPH_<SECTION>__{f} (a method's run parameter)" for fs in sections.values() for f in fs}
    return fields, sections, names


def unknown_environment(environ: Any = None) -> list[tuple[str, str | None]]:
    """The ``ATOMGRAPH_*`` variables of ``environ`` (default ``os.environ``) that atomgraph does not
    read, each with the closest name it does read (or None). A wrong name inside a known section
    (``ATOMGRAPH_ATOMR__TOPK``) is not listed: loading the settings refuses it already."""
    environ = os.environ if environ is None else environ
    fields, sections, names = _known_names()
    out = []
    for key in environ:
        name = key.upper()
        if not name.startswith("ATOMGRAPH_") or name in ENV_ONLY:
            continue
        rest = name[len("ATOMGRAPH_"):]
        section, nested, _ = rest.partition("__")
        if (not nested and rest in fields) or (nested and section in sections):
            continue  # a field, or a value inside a section (validated when the settings load)
        if rest.endswith("_MODEL") and not nested:
            continue  # a role's model: roles of methods registered at run time have no field
        close = difflib.get_close_matches(rest, sorted(names), n=1, cutoff=0.75)
        out.append((key, names[close[0]] if close else None))
    return sorted(out)


def unknown_environment_notes() -> list[str]:
    """One line per unknown ``ATOMGRAPH_*`` variable not reported yet in this process (each is
    reported once: by the command line first thing, else when the settings load, as an
    :class:`UnknownSettingWarning`)."""
    notes = []
    for key, close in unknown_environment():
        if key not in _WARNED:
            _WARNED.add(key)
            hint = f" (did you mean {close}?)" if close else ""
            notes.append(f"{key} is not an atomgraph setting and has no effect{hint}; "
                         "settings: docs/reference/settings.md")
    return notes


def _warn_unknown_environment() -> None:
    for note in unknown_environment_notes():
        warnings.warn(note, UnknownSettingWarning, stacklevel=3)


# The TOML file the settings being built read (chosen by Settings.load).
_CONFIG_FILE: contextvars.ContextVar[str | None] = contextvars.ContextVar("atomgraph_config_file", default=None)
# Set while settings are built from given values alone (settings_from): no environment, no file.
_GIVEN_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("atomgraph_given_only", default=False)


def _env(name: str, provider_var: str) -> Any:
    """A field read from ATOMGRAPH_<NAME> or the provider's own variable."""
    return AliasChoices(f"ATOMGRAPH_{name.upper()}", provider_var)


class _Settings(BaseSettings):
    """Every tunable of atomgraph but the methods' sections (added below from their declarations)."""

    model_config = SettingsConfigDict(
        env_prefix="ATOMGRAPH_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
        populate_by_name=True,
        allow_inf_nan=False,  # NaN and infinities are no setting (ATOMGRAPH_TEMPERATURE=nan is refused)
    )

    # --- chat models -------------------------------------------------------------------
    model: str | None = Field(None, description="Default chat model for every role.")
    # One ``<role>_model`` field per declared role is added below, from the declarations.
    temperature: float = 0.0
    max_tokens: int = Field(
        1024, ge=1,
        description="Output-token cap of a stage that declares none. Every call is capped; it reaches "
                    "OpenAI-compatible servers as max_tokens as well as max_completion_tokens.",
    )
    stage_max_tokens: dict[str, int] = Field(
        default_factory=dict, description="Output-token cap per stage name (e.g. {\"plan\": 2048}), over the stage's own default.",
    )
    structured_output: bool = Field(
        False, description="Ask models for JSON-schema structured output (with_structured_output) where a stage "
                           "declares a schema; off: plain-text prompts with tolerant parsers (any model). "
                           "Unset, it is on when a configured model is local (grammar-constrained decoding).",
    )
    request_timeout: float = Field(
        120.0, gt=0, description="Seconds one model request may take, whole (a server that answers a byte at a time "
                                 "is cut too); with retries, a call may take (1 + max_retries) times this.")
    max_retries: int = 2
    question_timeout: float = Field(
        900.0, ge=0, description="A question's bound when the run sets no deadline (seconds; 0: none): the run's "
                                 "deadline is then its start plus this. --deadline / configurable['deadline'] "
                                 "replaces it.")
    openai_api_key: str | None = Field(None, validation_alias=_env("openai_api_key", "OPENAI_API_KEY"))
    openai_base_url: str | None = Field(None, validation_alias=_env("openai_base_url", "OPENAI_BASE_URL"))

    # --- LLM response cache -------------------------------------------------------------
    cache: bool = Field(True, description="Cache LLM responses in SQLite (repeatable experiments); temperature 0 "
                                          "only, and only replies a stage could read.")
    cache_path: str = ".atomgraph/llm_cache.sqlite"
    cache_refresh: bool = Field(False, description="Ask the model again instead of replaying cached replies "
                                                   "(new replies overwrite the old ones).")

    # --- rate limits and failure bounds ---------------------------------------------------
    requests_per_second: float | None = Field(
        None, gt=0, description="Requests per second per model, shared by every role, graph and concurrent "
                                "example in the process (LangChain's InMemoryRateLimiter); unset: no limit.")
    rate_limits: dict[str, float] = Field(
        default_factory=dict, description="Requests per second by model name, over requests_per_second.")
    rate_limit_burst: int = Field(1, ge=1, description="Requests a limiter lets through at once after a pause.")
    max_consecutive_failures: int = Field(
        3, ge=1, description="A question stops after this many model calls in a row failed (the circuit breaker); "
                             "its error says so.")

    # --- embeddings ---------------------------------------------------------------------
    embedding_model: str = Field(
        "all-MiniLM-L6-v2",
        description="'all-MiniLM-L6-v2' (local, offline), 'openai:<name>', or a sentence-transformers path.",
    )
    embedding_device: str = "cpu"
    embedding_runtime: Literal["onnxruntime", "sentence-transformers"] = Field(
        "onnxruntime",
        description="What runs the bundled all-MiniLM-L6-v2 on cpu: 'onnxruntime' (its ONNX export, made once "
                    "into the model folder and checked against sentence-transformers; the same vectors, without "
                    "importing torch), or 'sentence-transformers'. Where the export cannot be made or used, "
                    "sentence-transformers runs it and a warning says why.",
    )
    embedding_batch_size: int = 64

    # --- knowledge sources --------------------------------------------------------------
    sources: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["wikipedia", "google", "wikidata"],
        description="Knowledge sources offered to source selection (those available are used).",
    )
    drop_suspect_evidence: bool = Field(
        False, description="Drop retrieved passages that address the model (instruction phrasing, role markers, "
                           "'answer X': atomgraph.injection) before any prompt sees them; off: flag and count "
                           "them only. A run's context field of the same name can turn dropping on for that run, "
                           "never off.")
    chroma_path: str = ".atomgraph/chroma"
    chroma_host: str | None = Field(None, description="Chroma server host; embedded storage when unset.")
    chroma_port: int = 8000
    chroma_collection: str = "wikipedia"
    serpapi_api_key: str | None = Field(None, validation_alias=_env("serpapi_api_key", "SERPAPI_API_KEY"))
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

    # --- what a run's client may name (docs/guides/security.md) --------------------------
    data_dirs: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: default_data_dirs(),
        description="Folders (comma-separated in ATOMGRAPH_DATA_DIRS) that hold every file a run's context, a "
                    "served graph's input or a recipe names (indexing inputs, ARM objects and index cache, "
                    "model files): a path elsewhere, after symlinks and '..' are resolved, is refused before it "
                    "is opened. Default: the shared data folder and .atomgraph/ in the working folder. "
                    "The operator's own settings and command-line options are not bound by it.",
    )
    allowed_models: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Model names a run's context (Studio's form, a served graph's client) or a recipe may "
                    "choose besides the configured ones (model, <role>_model). Empty: any name the configured "
                    "providers serve. A model file ('local:<path>') is never chosen there unless configured.",
    )

    # --- evaluation ---------------------------------------------------------------------
    prices: dict[str, tuple[float, float]] = Field(
        default_factory=dict,
        description="USD per 1M (input, output) tokens by model name; merged over built-in defaults.",
    )

    @field_validator("sources", "data_dirs", "allowed_models", mode="before")
    @classmethod
    def _comma_list(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [x.strip() for x in v.split(",") if x.strip()]
        return v

    @model_validator(mode="after")
    def _structured_for_local(self) -> "Settings":
        # A local model decodes under the stage's JSON-schema grammar, so its replies parse.
        if "structured_output" not in self.model_fields_set and any(
            (m or "").strip() == "local" or (m or "").strip().startswith("local:") for m in
            (self.model, *(getattr(self, f"{r}_model") for r in ROLES))
        ):
            self.structured_output = True
            self.__pydantic_fields_set__.discard("structured_output")  # derived, not set by the user
        return self

    def role_model(self, role: Role) -> str | None:
        """The model set for ``role`` itself (None: the role takes ``model``): its field ``<role>_model``;
        for a role of a method registered at run time (no field), ``ATOMGRAPH_<ROLE>_MODEL`` in the
        environment, so that variable is never silently ignored."""
        if f"{role}_model" in type(self).model_fields:
            return getattr(self, f"{role}_model")
        if _environment_sealed():
            return None  # a sealed run takes no model from the environment
        return os.environ.get(f"ATOMGRAPH_{role.upper()}_MODEL", "").strip() or None

    def model_for(self, role: Role) -> str | None:
        """The model name configured for ``role``: its own (:meth:`role_model`), else the default."""
        return self.role_model(role) or self.model

    def stage_cap(self, stage: str, default: int | None = None) -> int:
        """The output-token cap of ``stage``: its setting, else its own default, else ``max_tokens``."""
        return int(self.stage_max_tokens.get(stage) or default or self.max_tokens)

    def section(self, name: str) -> Any:
        """A method's settings section (its run-parameter dataclass), or None."""
        return getattr(self, name, None) if name in type(self).model_fields else None

    # -----------------------------------------------------------------------------------
    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):
        if _GIVEN_ONLY.get():
            return (init_settings,)
        toml = _CONFIG_FILE.get()
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if toml:
            sources.append(_TomlSource(settings_cls, toml_file=toml))
        return tuple(sources)

    @classmethod
    def load(cls, config_file: str | os.PathLike | None = None, **overrides: Any) -> "_Settings":
        """Defaults < config file < environment < ``overrides``."""
        path = config_file or env_value("ATOMGRAPH_CONFIG")
        if path is None and Path("atomgraph.toml").is_file():
            path = "atomgraph.toml"
        if path:
            from atomgraph.jsonl import UTF8_ONLY, read_text

            p = Path(path)
            if not p.exists():
                raise ConfigError(f"config file {p} does not exist (set by ATOMGRAPH_CONFIG or --config)")
            text = read_text(p, what="config file", error=ConfigError, hint=UTF8_ONLY)  # strict UTF-8 (TOML is UTF-8), line named
            try:
                tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"config file {p} is not valid TOML: {exc}") from exc
        _warn_unknown_environment()
        token = _CONFIG_FILE.set(str(path) if path else None)
        try:
            return cls(**{k: v for k, v in overrides.items() if v is not None})
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(x) for x in first["loc"])
            if first["type"] == "extra_forbidden":
                raise ConfigError(f"unknown setting(s): {field}") from exc
            raise ConfigError(f"setting {field!r} is invalid: {first['msg']}") from exc
        finally:
            _CONFIG_FILE.reset(token)


def default_data_dirs() -> list[str]:
    """The default of ``data_dirs``: the shared data folder (as the datasets find it) where there is
    one, and ``.atomgraph`` (the working folder's stores)."""
    from atomgraph.environment import shared_data_dir

    shared = shared_data_dir()
    return [*([str(shared)] if shared is not None else []), ".atomgraph"]


def _role_help(role: str) -> str:
    users = ", ".join(m.name for m in METHODS if role in m.roles)
    return f"Model for the {role} role ({users}); empty: `model`."


# Each declared role is a field ``<role>_model``; each declared method's run parameters are a
# section of the settings (its context dataclass).
Settings = create_model(  # type: ignore[call-overload]
    "Settings",
    __base__=_Settings,
    __doc__="Every tunable of atomgraph. See the module docstring for where values come from.",
    __module__=__name__,
    **{f"{role}_model": (str | None, Field(None, description=_role_help(role))) for role in ROLES},
    **{section: (method.context, Field(default_factory=method.context,
                                       description=f"{method.name} run parameters: {method.description}"))
       for section, method in settings_sections().items()},
)


class _TomlSource(TomlConfigSettingsSource):
    """The TOML file, where a legacy ``[atomgraph]`` table holding everything is unwrapped."""

    def _read_file(self, file_path):  # type: ignore[override]
        data = super()._read_file(file_path)
        if set(data) == {"atomgraph"} and isinstance(data["atomgraph"], dict):
            return data["atomgraph"]
        return data


def settings_from(data: Any) -> Settings:
    """Settings validated from ``data`` (a dict or a ``Settings``' dump) alone: no environment
    variable and no config file adds to them, dict-valued fields included (pydantic-settings
    would otherwise merge ``ATOMGRAPH_STAGE_MAX_TOKENS`` into a given ``stage_max_tokens``)."""
    token = _GIVEN_ONLY.set(True)
    try:
        return Settings.model_validate(data)
    finally:
        _GIVEN_ONLY.reset(token)


def get_settings(**overrides: Any) -> Settings:
    """Settings as the environment and config file say now (not cached: tests change the env)."""
    return Settings.load(**overrides)
