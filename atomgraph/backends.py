"""Which backend serves a chat model, and so which constrained-decoding request forms it takes.

:func:`backend` answers ``(kind, reason)`` for a model: ``local`` (atomgraph's in-process llama.cpp
engine), ``openai`` (api.openai.com), ``vllm`` or ``llamacpp`` (an OpenAI-compatible server, recognised
by probing its ``/models`` listing once per URL: the only network call made to decide), or ``other``.
:mod:`atomgraph.prompts.constraints` turns a constraint into the request form of that backend.
"""

from __future__ import annotations

import functools
import logging
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


@functools.lru_cache(maxsize=32)
def probe_server(url: str, timeout_s: float = 2.0) -> str | None:
    """Who serves the OpenAI-compatible API at ``url``: ``"vllm"``, ``"llamacpp"`` or None
    (read from the ``owned_by`` of its ``/models`` listing; cached per URL)."""
    import httpx

    try:
        resp = httpx.get(url.rstrip("/") + "/models", timeout=timeout_s)
        data = resp.json().get("data") or []
    except Exception as exc:  # noqa: BLE001 - an unreachable or odd server means "unknown"
        log.info("cannot probe %s/models (%s); its replies are not constrained", url, exc)
        return None
    owners = {str(m.get("owned_by", "")).lower() for m in data if isinstance(m, dict)}
    if "vllm" in owners:
        return "vllm"
    if owners & {"llamacpp", "llama.cpp", "llama-cpp"}:
        return "llamacpp"
    return None


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
    who = probe_server(url)
    if who == "vllm":
        return "vllm", f"vLLM at {url}: structured_outputs"
    if who == "llamacpp":
        return "llamacpp", f"llama.cpp at {url}: GBNF grammar"
    return "other", f"server at {url} not recognised as vLLM or llama.cpp"
