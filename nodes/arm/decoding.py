"""How ARM's constrained-decoding requests reach the server (§3.2.1, §3.3 of the ARM paper).

The paper constrains the decoder to corpus n-grams (alignment) and to the draft's objects
(verification). Served models offer different constraints; :func:`decoding_mode` picks one
from the run's ``decoding`` parameter, or, with ``"auto"``, from the model:

- a ``ChatOpenAI`` talking to api.openai.com (or with no base URL): OpenAI structured
  outputs, a JSON-schema ``enum`` (``openai_json_schema``) sent with
  ``with_structured_output(schema, method="json_schema", strict=True)``;
- a ``ChatOpenAI`` at another base URL: the server's ``/models`` listing says who serves it
  (``owned_by``): vLLM gets ``structured_outputs`` (``vllm_choice``), llama.cpp a GBNF
  ``grammar`` (``llamacpp_grammar``), both through ``model.bind(extra_body=...)``;
- anything else (another provider, an unknown server, a scripted model): free generation,
  then the reply is snapped to the nearest corpus n-grams.

:func:`ask_bound` runs a stage with the request bound and returns the stage result and the
raw reply (whose ``response_metadata["logprobs"]`` weights verification votes); like
:meth:`MethodRuntime.ask`, it never raises for a failed call or an unreadable reply.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.runnables import Runnable, RunnableConfig

from atomgraph.models import cap_output, message_text, model_name
from atomgraph.nodes.runtime import MethodRuntime, StageResult, call_model
from atomgraph.prompts.constraints import base_url, bound_kwargs, is_openai_client, probe_server, unwrap
from atomgraph.prompts.stage import Stage
from atomgraph.state.usage import LLMCall

log = logging.getLogger(__name__)

MODES = ("vllm_choice", "llamacpp_grammar", "openai_json_schema", "free")
_ALIASES = {
    "vllm": "vllm_choice", "vllm_choice": "vllm_choice", "structured_outputs": "vllm_choice",
    "llamacpp": "llamacpp_grammar", "llama.cpp": "llamacpp_grammar", "llama-cpp": "llamacpp_grammar",
    "llamacpp_grammar": "llamacpp_grammar", "grammar": "llamacpp_grammar",
    "openai": "openai_json_schema", "openai_json_schema": "openai_json_schema", "json_schema": "openai_json_schema",
    "free": "free", "none": "free",
}


def decoding_mode(model: Any, requested: str = "auto") -> tuple[str, str]:
    """The constrained-decoding form for ``model`` and why: ``(mode, reason)``."""
    req = (requested or "auto").strip().lower()
    if req == "local_trie_beam":  # only an in-process model decodes over the token trie
        return "free", "local_trie_beam asked for, but the model is not in-process: unconstrained, then snapped"
    if req != "auto":
        mode = _ALIASES.get(req)
        if mode is None:
            from atomgraph.errors import ConfigError

            raise ConfigError(f"unknown ARM decoding {requested!r}; expected auto, vllm, llamacpp, openai or free")
        return mode, f"set to {requested!r}"
    if not is_openai_client(model):
        return "free", f"{type(unwrap(model)).__name__} offers no constrained decoding we know of"
    url = base_url(model)
    if not url or "api.openai.com" in url:
        return "openai_json_schema", "OpenAI API: structured outputs"
    who = probe_server(url)
    if who == "vllm":
        return "vllm_choice", f"vLLM at {url}: structured_outputs"
    if who == "llamacpp":
        return "llamacpp_grammar", f"llama.cpp at {url}: GBNF grammar"
    return "free", f"server at {url} not recognised as vLLM or llama.cpp"


# --- request bodies for choosing objects (draft changes, verification) ---------------------

def choice_schema(ids: Sequence[str], fields: Sequence[str], *, with_reasoning: bool = False) -> dict:
    """A JSON schema whose ``fields`` are lists of values from ``ids`` (the draft's objects)."""
    item = {"type": "string", "enum": list(ids)} if ids else {"type": "string"}
    props: dict[str, Any] = {}
    if with_reasoning:
        props["reasoning"] = {"type": "string"}
    for f in fields:
        props[f] = {"type": "array", "items": item}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def schema_body(mode: str, schema: dict, name: str) -> dict[str, Any]:
    """The request body constraining a reply to ``schema`` for each server kind."""
    if mode == "vllm_choice":
        return {"structured_outputs": {"json": schema}}
    if mode == "llamacpp_grammar":
        return {"json_schema": schema}
    if mode == "openai_json_schema":
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": name, "strict": True, "schema": schema}}}
    return {}


# --- binding and calling ----------------------------------------------------------------------

def bound_model(model: BaseChatModel, cap: int, mode: str, body: dict[str, Any], *, logprobs: bool) -> Runnable:
    """``model`` capped at ``cap`` output tokens with the constraint ``body`` bound (and token
    log-probabilities requested from OpenAI-compatible servers when ``logprobs``)."""
    openai = is_openai_client(model)
    capped = cap_output(unwrap(model), cap)  # a capped copy, or a binding of the cap
    kwargs = {**bound_kwargs(model), **bound_kwargs(capped)}
    base = unwrap(capped)
    if mode == "openai_json_schema" and body.get("response_format"):
        fmt = body["response_format"]["json_schema"]
        schema = {"title": fmt["name"], **fmt["schema"]}  # with_structured_output names the schema by its title
        if openai:
            if logprobs:
                base = base.model_copy(update={"logprobs": True})
            structured = base.with_structured_output(schema, method="json_schema", strict=True, include_raw=True)
            return structured.bind(**kwargs) if kwargs else structured
        # another client: the OpenAI request field itself (its own with_structured_output may
        # mean tool calling, which constrains nothing to the enum)
        return base.bind(**{**kwargs, "response_format": body["response_format"]})
    if logprobs and openai:
        kwargs["logprobs"] = True
    if body and mode in ("vllm_choice", "llamacpp_grammar"):
        extra = dict(getattr(base, "extra_body", None) or {})
        extra.update(kwargs.get("extra_body") or {})
        extra.update(body)
        kwargs["extra_body"] = extra
    return base.bind(**kwargs) if kwargs else base


def _parse(parser: BaseOutputParser, text: str) -> tuple[Any, str | None]:
    from langchain_core.exceptions import OutputParserException

    try:
        return parser.parse(text), None
    except OutputParserException as exc:
        return None, str(exc).split("\nFor troubleshooting")[0]


async def ask_bound(rt: MethodRuntime, stage: Stage, variables: dict[str, Any], config: RunnableConfig | None,
                    *, mode: str = "free", body: dict[str, Any] | None = None,
                    logprobs: bool = False) -> tuple[StageResult, AIMessage | None]:
    """Run ``stage`` with a constraint bound; ``(result, raw reply)``. Never raises for a failed
    call or an unreadable reply (a missing model configuration raises ConfigError)."""
    role = stage.role
    model = await rt.amodel(role)
    cap = rt.settings().stage_cap(stage.name, stage.max_tokens)
    record = LLMCall(role=role, stage=stage.name, model=model_name(unwrap(model)), max_tokens=cap)
    t0 = time.perf_counter()
    try:
        runnable = bound_model(model, cap, mode, body or {}, logprobs=logprobs)
        chain = (stage.prompt | runnable).with_config(run_name=stage.name, tags=stage.tags)
        out = await call_model(chain, variables, config)  # sync in a sync run
    except Exception as exc:  # network, auth, a server refusing the constraint
        record.latency_s = time.perf_counter() - t0
        record.error = f"{type(exc).__name__}: {exc}"[:500]
        return StageResult(None, None, record), None
    record.latency_s = time.perf_counter() - t0
    raw: AIMessage | None
    if isinstance(out, dict):  # with_structured_output(include_raw=True)
        raw = out.get("raw")
        text = message_text(raw)
        if not text.strip() and isinstance(out.get("parsed"), dict):
            text = json.dumps(out["parsed"], ensure_ascii=False)
    else:
        raw = out if isinstance(out, AIMessage) else None
        text = message_text(raw) if raw is not None else str(out)
    usage = getattr(raw, "usage_metadata", None) or {}
    record.prompt_tokens = int(usage.get("input_tokens", 0) or 0)
    record.completion_tokens = int(usage.get("output_tokens", 0) or 0)
    value, problem = _parse(stage.parser, text)
    record.parse_error = problem
    return StageResult(value, text, record), raw


# --- token log-probabilities ----------------------------------------------------------------

def token_logprobs(msg: AIMessage | None) -> list[tuple[str, float]]:
    """``(token, logprob)`` pairs of a reply (OpenAI-format ``response_metadata["logprobs"]``;
    empty when the server returned none)."""
    meta = getattr(msg, "response_metadata", None) or {}
    lp = meta.get("logprobs") or {}
    content = lp.get("content") if isinstance(lp, dict) else lp if isinstance(lp, list) else None
    out: list[tuple[str, float]] = []
    for t in content or []:
        if isinstance(t, dict) and isinstance(t.get("token"), str) and isinstance(t.get("logprob"), (int, float)):
            out.append((t["token"], float(t["logprob"])))
    return out


def span_logprobs(tokens: Sequence[tuple[str, float]], names: Sequence[str]) -> dict[str, float]:
    """The mean log-probability of the tokens that spell each name in the reply (§3.3: the
    tokens of an object's name, averaged). A name not found in the reply is left out."""
    if not tokens:
        return {}
    text = "".join(t for t, _ in tokens)
    starts = []
    pos = 0
    for t, _ in tokens:
        starts.append(pos)
        pos += len(t)
    out: dict[str, float] = {}
    for name in names:
        if not name:
            continue
        at = text.find(json.dumps(name, ensure_ascii=False)[1:-1])
        if at < 0:
            at = text.find(name)
        if at < 0:
            continue
        end = at + len(name)
        vals = [lp for (t, lp), s in zip(tokens, starts) if s < end and s + len(t) > at]
        if vals:
            out[name] = sum(vals) / len(vals)
    return out
