"""Which backend serves a chat model, and so which constrained-decoding request forms it takes.

:func:`backend` answers ``(kind, reason)`` for a model: ``local`` (atomgraph's in-process llama.cpp
engine), ``openai`` (api.openai.com), ``vllm`` or ``llamacpp`` (an OpenAI-compatible server, recognised
by probing its ``/models`` listing once per URL and API key, with that key: the only network call made
to decide; a probe that fails is a warning and the reason says so), or ``other``. ``llamacpp`` is
llama.cpp's own server (``owned_by: "llamacpp"``) or llama-cpp-python's (``python -m llama_cpp.server``,
whose listing says ``owned_by: "me"`` with a ``permissions`` list); both take a GBNF ``grammar`` and
a ``response_format`` of type ``json_object`` with a ``schema``.
:mod:`atomgraph.prompts.constraints` turns a constraint into the request form of that backend.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.runnables import RunnableBinding

from atomgraph.errors import ConfigError

log = logging.getLogger(__name__)

Backend = Literal["local", "vllm", "llamacpp", "openai", "other"]
BACKENDS: tuple[str, ...] = ("local", "vllm", "llamacpp", "openai", "other")


def unwrap(model: Any) -> Any:
    """The chat model under any ``.bind(...)`` layers."""
    while isinstance(model, RunnableBinding):
        model = model.bound
    return model


def _openai_class():
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:  # pragma: no cover - langchain-openai is a dependency
        return None
    return BaseChatOpenAI


def is_openai_client(model: Any) -> bool:
    cls = _openai_class()
    return cls is not None and isinstance(unwrap(model), cls)


def is_local(model: Any) -> bool:
    """Whether ``model`` is atomgraph's in-process model (``ATOMGRAPH_MODEL=local``)."""
    return bool(getattr(type(unwrap(model)), "in_process_constraints", False))


def accepts_logprobs(model: Any) -> bool:
    """Whether ``model``'s client takes a ``logprobs`` request (OpenAI-compatible clients and the
    in-process model; others may refuse the unknown argument)."""
    return is_openai_client(model) or is_local(model)


def base_url(model: Any) -> str:
    return str(getattr(unwrap(model), "openai_api_base", None) or "")


def api_key(model: Any) -> str | None:
    """The API key ``model``'s OpenAI-compatible client sends (a vLLM started with ``--api-key``
    wants it on ``/models`` too), or None."""
    key = getattr(unwrap(model), "openai_api_key", None)
    if key is None:
        return None
    value = key.get_secret_value() if hasattr(key, "get_secret_value") else str(key)
    return value or None


@dataclass(frozen=True)
class Probe:
    """What the ``/models`` listing of a server said: who serves it (``vllm``, ``llamacpp`` or
    None), or why it could not be read (``problem``)."""

    who: str | None
    problem: str | None = None


@functools.lru_cache(maxsize=32)
def probe_server(url: str, key: str | None = None, timeout_s: float = 5.0) -> Probe:
    """Who serves the OpenAI-compatible API at ``url`` (read from the ``owned_by`` of its
    ``/models`` listing, asked with the client's API key; cached per URL and key). A listing
    that cannot be read (unreachable, 401, not JSON) comes back as ``problem`` and is logged
    as a warning: the caller then decodes unconstrained and says why."""
    import httpx

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        resp = httpx.get(url.rstrip("/") + "/models", timeout=timeout_s, headers=headers)
        if resp.status_code in (401, 403):
            raise RuntimeError(f"HTTP {resp.status_code}: the server refused "
                               + ("the configured API key" if key else "a request without an API key"))
        resp.raise_for_status()
        data = resp.json().get("data") or []
    except Exception as exc:  # noqa: BLE001 - an unreachable or odd server: reported, not guessed
        problem = f"{type(exc).__name__}: {exc}"[:300]
        log.warning("cannot probe %s/models (%s): constrained decoding is off for this server; set the decoding "
                    "backend explicitly (e.g. ARM's decoding=vllm_choice) to use its request form anyway", url, problem)
        return Probe(None, problem)
    models = [m for m in data if isinstance(m, dict)]
    owners = {str(m.get("owned_by", "")).lower() for m in models}
    if "vllm" in owners:
        return Probe("vllm")
    if owners & {"llamacpp", "llama.cpp", "llama-cpp"} or (models and all(_llama_cpp_python(m) for m in models)):
        return Probe("llamacpp")
    return Probe(None)


def _llama_cpp_python(entry: dict) -> bool:
    """Whether a ``/models`` entry is llama-cpp-python's server's (``llama_cpp.server``): ``owned_by``
    ``"me"`` and a ``permissions`` list, as its ``get_models`` writes every entry."""
    return entry.get("owned_by") == "me" and isinstance(entry.get("permissions"), list)


_ALIASES = {
    "local": "local", "in_process": "local",
    "vllm": "vllm", "vllm_choice": "vllm", "structured_outputs": "vllm",
    "llamacpp": "llamacpp", "llama.cpp": "llamacpp", "llama-cpp": "llamacpp", "llamacpp_grammar": "llamacpp",
    "grammar": "llamacpp",
    "openai": "openai", "openai_json_schema": "openai", "json_schema": "openai",
    "free": "other", "none": "other", "other": "other",
}


def backend(model: Any, requested: str = "auto") -> tuple[str, str]:
    """The backend whose request forms constrain ``model``, and why: ``(backend, reason)``.
    ``requested`` overrides the detection (``auto``, ``local``, ``vllm``, ``llamacpp``,
    ``openai`` or ``free``)."""
    req = (requested or "auto").strip().lower()
    if req != "auto":
        kind = _ALIASES.get(req)
        if kind is None:
            raise ConfigError(f"unknown decoding backend {requested!r}; expected auto, local, vllm, llamacpp, "
                              "openai or free")
        return kind, f"set to {requested!r}"
    if is_local(model):
        return "local", "in-process model: token-level constraints"
    if not is_openai_client(model):
        return "other", f"{type(unwrap(model)).__name__} offers no constrained decoding we know of"
    url = base_url(model)
    if not url or "api.openai.com" in url:
        return "openai", "OpenAI API: structured outputs"
    probe = probe_server(url, api_key(model))
    if probe.who == "vllm":
        return "vllm", f"vLLM at {url}: structured_outputs"
    if probe.who == "llamacpp":
        return "llamacpp", f"llama.cpp at {url}: GBNF grammar"
    if probe.problem:
        return "other", (f"the server at {url} could not be probed ({probe.problem}); set the decoding backend "
                         "explicitly to constrain it")
    return "other", f"server at {url} not recognised as vLLM or llama.cpp"


def json_object_format(schema: dict) -> dict:
    """The ``response_format`` that asks a llama.cpp server for JSON valid under ``schema``
    (``{"type": "json_object", "schema": ...}``: llama-cpp-python's server refuses the type
    ``json_schema``; llama.cpp's own server takes both)."""
    return {"type": "json_object", "schema": schema}
