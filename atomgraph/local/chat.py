"""``ChatLocalLlama``: a LangChain chat model over an in-process GGUF model (llama-cpp-python).

>>> model = ChatLocalLlama()                                  # the bundled Gemma-3-270M
>>> model = ChatLocalLlama(model_path="/models/qwen2.5-7b-instruct-q4_k_m.gguf", max_tokens=256)
>>> model = ChatLocalLlama(model_path="qwen2.5-1.5b")          # a packaged model ('qwen' extra)
>>> model.invoke("Capital of France?").content
>>> model.invoke(msgs, choices=["yes", "no"]).content          # exactly one of the options
>>> model.invoke(msgs, json_schema={...}).content             # a JSON document of the schema
>>> model.invoke(msgs, grammar='root ::= "(" [a-z]+ ")"')     # any GBNF grammar
>>> model.invoke(msgs, logprobs=True).response_metadata["logprobs"]["content"]  # [{"token", "logprob"}]
>>> msg = model.invoke(msgs, ngram_trie=trie, beam_width=4, n_best=3)
>>> msg.content, msg.response_metadata["beams"]               # "(a, b)", every list with its scores
>>> model.with_structured_output(PlanSchema, include_raw=True).invoke(msgs)   # always parses
>>> for chunk in model.stream(msgs): print(chunk.content, end="")  # token by token (astream too)
>>> model.bind_tools([search, lookup], tool_choice="any").invoke(msgs).tool_calls

**Per-call keyword arguments** (what :mod:`atomgraph.prompts.constraints` binds):

| kwarg | effect |
|---|---|
| ``max_tokens`` | output cap (default: the field) |
| ``temperature`` | 0 = greedy (default: the field) |
| ``stop`` | stop strings (cut from the reply) |
| ``grammar: str`` | GBNF grammar every token must follow |
| ``close_reserve: int`` | with ``grammar``: in the last N tokens of the cap, promote the tokens that close a JSON-shaped sentence (``"``, ``]``, ``}``) |
| ``json_schema: dict`` | JSON schema → llama.cpp grammar (``LlamaGrammar.from_json_schema``) |
| ``choices: list[str]`` | the reply is exactly one of these strings |
| ``ngram_trie: TokenTrie``, ``beam_width``, ``n_best``, ``max_items``, ``trie_open``, ``trie_close``, ``trie_sep`` | constrained beam decoding of a list ``(s1, s2, …)`` of trie strings (:mod:`.beam`; delimiters default ``(``, ``)``, ``", "``); the reply is the best list, ``response_metadata["beams"]`` all of them |
| ``logprobs: bool`` | token log-probabilities in ``response_metadata["logprobs"]`` (OpenAI's shape) |
| ``seed: int`` | sampling seed (temperature > 0) |

| ``tools``, ``tool_choice`` | tool calling (what :meth:`ChatLocalLlama.bind_tools` binds; OpenAI-format tools also work as ``invoke(msgs, tools=[...])``) |

**Streaming.** ``stream``/``astream`` (and ``astream_events``, LangGraph's ``messages`` stream
mode) yield the reply token by token as the decoder produces it: the same tokens as
``invoke``; a suffix that could begin a stop string is held back until it cannot; the last
chunk carries ``usage_metadata`` and ``response_metadata`` (``chunk_position="last"``); with
tools offered, text that may open a call is held back and the calls come whole in that chunk. A
constrained beam (``ngram_trie``) or a grounded answer is one chunk. Leaving a stream early stops the decoder at
its next token.

**Tool calling.** ``bind_tools(tools, tool_choice=...)`` offers the tools (name, description,
JSON schema of the arguments) in one of two ways:

- *The model's own format*, for a chat model whose template has a tools section and shows calls
  as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Qwen2.5, Hermes:
  :attr:`LocalEngine.tool_call_template <atomgraph.local.engine.LocalEngine.tool_call_template>`).
  The template renders the tools, earlier calls and ``ToolMessage`` results (as its
  ``<tool_response>`` turns) as the model was trained to read them. With ``"auto"`` (the default)
  the model writes freely and its reply is read as llama.cpp's reader of that format reads it:
  each ``<tool_call>`` block, or ``{"name": <an offered tool>, ...}`` object bare or in a
  ```` ```json ```` fence, is a call; the text around them is the content; several calls in one
  reply are all kept (``parallel_tool_calls=False`` keeps the first). With ``"any"``/
  ``"required"``/a tool's name the reply is one call decoded under a grammar of the tools'
  calls inside the tags.
- *Our format*, for any other model (the bundled Gemma-3-270M): the tools are listed in a system
  turn and the reply is decoded under a grammar of the calls, ``{"name": <a tool>,
  "arguments": <its arguments' schema>}``: with ``"any"``/``"required"``/a tool's name the reply
  *is* one call (of that tool); with ``"auto"`` the grammar lets the model either call a tool
  (a reply opening with ``{``) or answer in text. Earlier calls and ``ToolMessage`` results in
  the history are shown as the JSON calls and ``Tool result (name): …`` turns.

``"none"`` leaves the tools out. A call becomes ``AIMessage.tool_calls``. A reply is untrusted:
a call that is not complete JSON, names no offered tool, or has arguments outside the tool's
schema is an ``invalid_tool_calls`` entry saying why (one cut by the output cap says so), never
an exception and never a silent bad call.

**Structured output.** ``with_structured_output(schema, method=..., include_raw=..., strict=...)``:
``"json_schema"`` (default) and ``"json_mode"`` decode under the schema's grammar (JSON mode
with a schema is held to it as well: the grammar engine makes that free); ``"function_calling"``
binds the schema as the one tool to call and parses the call's arguments. ``strict`` is
accepted for any value: a grammar admits only documents of the schema, so output is always
strict.

A grammar the engine rejects raises :class:`~atomgraph.local.engine.GrammarError` before any
token is generated. Every reply carries ``usage_metadata`` (input/output tokens) and
``response_metadata`` (``model_name``, ``finish_reason``: ``"stop"`` or ``"length"``).
A base model (a GGUF without a chat template, like the bundled Gemma-3-270M) is prompted with
completion-style text, a chat model with its chat turns (``prompt_format``, default ``auto``;
``response_metadata["prompt_format"]`` says which). The model is loaded once per process (:func:`~atomgraph.local.engine.load_engine`) and calls
queue on its lock; ``ainvoke`` runs the decoder in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import queue
import re
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, ClassVar, Iterator, Literal, Sequence

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (AIMessage, AIMessageChunk, BaseMessage, SystemMessage, ToolMessage)
from langchain_core.messages.tool import invalid_tool_call, tool_call, tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda, RunnableMap, RunnablePassthrough
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from atomgraph.local.engine import (DEFAULT_N_CTX, TOOL_CALL_CLOSE, TOOL_CALL_OPEN, Generation, GrammarError,
                                    LocalEngine, load_engine)

# Keyword arguments LangChain itself passes along to _generate; not ours to act on.
_IGNORED_KWARGS = {"ls_structured_output_format", "response_format"}
_TOOL_CHOICES = ("auto", "none", "any", "required")
_TAG_TOKENS = 8  # room in a forced call's cap for the <tool_call> tags around its JSON
_MAY_OPEN_CALL = "|".join(map(re.escape, (TOOL_CALL_OPEN, "```", "{")))  # a streamed reply is held back from here


def choices_grammar(options: Sequence[str]) -> str:
    """A GBNF grammar whose only sentences are ``options``."""
    opts = [o for o in dict.fromkeys(options) if isinstance(o, str) and o]
    if not opts:
        raise GrammarError("choices must hold at least one non-empty string")
    return "root ::= " + " | ".join(json.dumps(o, ensure_ascii=False) for o in opts)


def _is_pydantic_v1(schema: Any) -> bool:
    try:
        from pydantic.v1 import BaseModel as BaseModelV1
    except ImportError:  # pragma: no cover
        return False
    return isinstance(schema, type) and issubclass(schema, BaseModelV1)


def schema_of(schema: Any) -> dict:
    """A JSON schema from a pydantic model class (v2 or v1), a TypedDict / function / tool, or a dict."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if isinstance(schema, dict):
        if "parameters" in schema and "name" in schema:  # an OpenAI function / tool schema
            return schema["parameters"]
        if schema.get("type") == "function" and isinstance(schema.get("function"), dict):
            return schema["function"].get("parameters", {"type": "object", "properties": {}})
        if schema.get("type") == "json_schema" and "json_schema" in schema:
            return schema["json_schema"].get("schema", {})
        return schema
    from langchain_core.utils.function_calling import convert_to_json_schema

    return convert_to_json_schema(schema)


def openai_tools(tools: Sequence[Any]) -> list[dict]:
    """Tools (LangChain tools, functions, pydantic classes, OpenAI dicts) in OpenAI's tool format."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    out = []
    for t in tools:
        if isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("function"), dict):
            out.append(t)
        else:
            out.append(convert_to_openai_tool(t))
    by_name: dict[str, dict] = {}
    for t in out:  # the same tool twice (a class and its schema) is one tool
        name = t["function"]["name"]
        seen = by_name.setdefault(name, t)
        if seen is not t and _bare(seen["function"].get("parameters")) != _bare(t["function"].get("parameters")):
            raise ValueError(f"two different tools are named {name!r}")
    return list(by_name.values())


def _bare(schema: Any) -> Any:
    """A schema without its titles and descriptions (to tell two spellings of one tool apart from two tools)."""
    if isinstance(schema, dict):
        return {k: _bare(v) for k, v in schema.items() if k not in ("title", "description")}
    if isinstance(schema, list):
        return [_bare(v) for v in schema]
    return schema


def tool_call_schema(tools: Sequence[dict]) -> dict:
    """The JSON schema of one call of any of ``tools`` (OpenAI format):
    ``{"name": <tool name>, "arguments": <its parameters>}``."""
    alts = []
    for t in tools:
        fn = t["function"]
        params = dict(fn.get("parameters") or {"type": "object", "properties": {}})
        params.setdefault("type", "object")
        params.setdefault("properties", {})
        params.setdefault("additionalProperties", False)
        alts.append({"type": "object", "properties": {"name": {"const": fn["name"]}, "arguments": params},
                     "required": ["name", "arguments"], "additionalProperties": False})
    if not alts:
        raise ValueError("tool calling needs at least one tool")
    return alts[0] if len(alts) == 1 else {"anyOf": alts}


def _tools_system_text(tools: Sequence[dict], choice: str | None) -> str:
    lines = ["You can call these tools. To call one, reply with only a JSON object "
             '{"name": <tool name>, "arguments": {<argument>: <value>, ...}}.']
    if choice == "required":
        lines.append("You must call one of them.")
    elif choice and choice not in _TOOL_CHOICES:
        lines.append(f"You must call the tool {choice}.")
    else:
        lines.append("If no tool is needed, answer in plain text.")
    lines.append("Tools:")
    for t in tools:
        fn = t["function"]
        params = json.dumps(fn.get("parameters") or {}, ensure_ascii=False)
        lines.append(f"- {fn['name']}: {fn.get('description') or ''} Arguments (JSON schema): {params}")
    return "\n".join(lines)


def _tool_choice_name(tool_choice: Any, names: Sequence[str]) -> str:
    """Normalise ``tool_choice`` to ``"auto"``, ``"none"``, ``"required"`` or a tool name."""
    if tool_choice is None or tool_choice == "auto":
        return "auto"
    if tool_choice is True or tool_choice in ("any", "required"):
        return "required"
    if tool_choice is False or tool_choice == "none":
        return "none"
    if isinstance(tool_choice, dict):  # {"type": "function", "function": {"name": ...}}
        tool_choice = (tool_choice.get("function") or {}).get("name") or tool_choice.get("name")
    if isinstance(tool_choice, str) and tool_choice in names:
        return tool_choice
    raise ValueError(f"tool_choice {tool_choice!r} is not 'auto', 'none', 'any', 'required' or one of the "
                     f"bound tools {list(names)}")


@dataclass
class _Call:
    """One prepared generation: the prompt and the engine's arguments, and how to read the reply."""

    prompt: list[int]
    gen: dict[str, Any] = field(default_factory=dict)  # engine.generate keyword arguments
    want_logprobs: bool = False
    tools: list[dict] | None = None  # the tools offered (OpenAI format), if any
    forced: bool = False  # the reply must be a tool call
    tagged: bool = False  # tools shown by the model's own template, calls read from <tool_call> tags
    parallel: bool = True  # several tagged calls in one reply are all kept (parallel_tool_calls)
    trie: Any = None
    beam: dict = field(default_factory=dict)
    stops: list[str] = field(default_factory=list)
    style: str = "chat"  # the prompt format used (engine.prompt_style)
    grounded: str | None = None  # the knowledge block of a grounded answer (atomgraph.local.grounded)


class ChatLocalLlama(BaseChatModel):
    """A chat model running a GGUF file in this process (see the module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    in_process_constraints: ClassVar[bool] = True  # atomgraph.prompts.constraints: the "local" backend

    model_path: str | None = Field(None, description="GGUF file, or a packaged model's short name (qwen2.5-1.5b: "
                                                     "atomgraph.local.packaged); None = the bundled Gemma-3-270M.")
    model: str = Field("local", description="The model string that built this model (its name in records); "
                                            "unset, local:<model_path> for a model_path.")
    n_ctx: int = DEFAULT_N_CTX
    max_tokens: int = 512
    temperature: float = 0.0
    stop: list[str] | None = None
    seed: int = 0
    beam_width: int = 4
    prompt_format: Literal["auto", "chat", "completion"] = Field(
        "auto", description="How messages become the prompt: chat turns, or completion-style text (the messages' "
                            "texts as one few-shot document to continue); auto = chat for a GGUF with a chat "
                            "template, completion for a base model (the bundled Gemma-3-270M).")
    grounded_answers: bool = Field(
        False, description="Switch (ours): a free-text reply to a prompt that shows retrieved knowledge (ATOMR's "
                           "operators and direct RAG) writes its Answer List under a token trie of that "
                           "knowledge's n-grams, or Unknown (atomgraph.local.grounded). Off: measured in "
                           "benchmarks/results/local_grounded.json.")
    _engine: LocalEngine | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _name_from_path(self) -> "ChatLocalLlama":
        if "model" not in self.model_fields_set and self.model_path:
            self.model = f"local:{self.model_path}"  # records name the model that answered, not the bundled one
        return self

    @property
    def _llm_type(self) -> str:
        return "atomgraph-local-llama"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model, "model_path": self.model_path, "n_ctx": self.n_ctx,
                "max_tokens": self.max_tokens, "temperature": self.temperature, "stop": self.stop,
                "prompt_format": self.prompt_format}

    @property
    def model_name(self) -> str:
        return self.model

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"ls_provider": "llamacpp", "ls_model_name": kwargs.get("model") or self.model,
                                  "ls_model_type": "chat",
                                  "ls_temperature": kwargs.get("temperature", self.temperature),
                                  "ls_max_tokens": kwargs.get("max_tokens") or self.max_tokens}
        ls_stop = stop or kwargs.get("stop") or self.stop
        if ls_stop:
            params["ls_stop"] = list(ls_stop)
        return params

    @property
    def engine(self) -> LocalEngine:
        """The process-wide engine of ``model_path`` (loaded on first use)."""
        if self._engine is None:
            self._engine = load_engine(self.model_path, n_ctx=self.n_ctx)
        return self._engine

    # --- one call: prepare, decode, read --------------------------------------------------

    def _prepare(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> _Call:
        engine = self.engine
        for k in _IGNORED_KWARGS:
            kwargs.pop(k, None)
        parallel = kwargs.pop("parallel_tool_calls", None) is not False
        max_tokens = int(kwargs.pop("max_tokens", None) or self.max_tokens)
        temperature = float(kwargs.pop("temperature", self.temperature))
        want_logprobs = bool(kwargs.pop("logprobs", False))
        seed = kwargs.pop("seed", None)
        stops = [*(self.stop or []), *(stop or []), *(kwargs.pop("stop", None) or [])]
        grammar_src, json_schema = kwargs.pop("grammar", None), kwargs.pop("json_schema", None)
        choices, trie = kwargs.pop("choices", None), kwargs.pop("ngram_trie", None)
        close_reserve = kwargs.pop("close_reserve", None)
        tools, tool_choice = kwargs.pop("tools", None), kwargs.pop("tool_choice", None)
        beam = {k: kwargs.pop(k) for k in ("beam_width", "n_best", "max_items", "trie_open", "trie_close",
                                           "trie_sep") if k in kwargs}
        if kwargs:
            raise TypeError(f"ChatLocalLlama got unknown keyword argument(s): {sorted(kwargs)}")
        if sum(x is not None for x in (grammar_src, json_schema, choices, trie)) > 1:
            raise ValueError("pass at most one of grammar, json_schema, choices, ngram_trie")
        offered: list[dict] | None = None
        choice = "none"
        if tools:
            offered = openai_tools(tools)
            choice = _tool_choice_name(tool_choice, [t["function"]["name"] for t in offered])
            if choice != "none" and any(x is not None for x in (grammar_src, json_schema, choices, trie)):
                raise ValueError("tools cannot be combined with grammar, json_schema, choices or ngram_trie")
            if choice not in ("auto", "none", "required"):
                offered = [t for t in offered if t["function"]["name"] == choice]
        style = engine.prompt_style(self.prompt_format)
        tagged = style == "chat" and engine.tool_call_template  # the model's own tools section and call format
        if tagged:
            prompt = engine.prompt(_template_messages(messages), style,
                                   tools=offered if offered and choice != "none" else None)
        else:
            turns = _turns(messages)
            if offered and choice != "none":
                turns = _with_system(turns, _tools_system_text(offered, choice))
            prompt = engine.prompt(turns, style)
        call = _Call(prompt=prompt, want_logprobs=want_logprobs, trie=trie, beam=beam, stops=stops, style=style)
        if trie is not None:
            call.gen = {"max_tokens": max_tokens}
            return call
        if (self.grounded_answers and not (offered and choice != "none") and grammar_src is None
                and json_schema is None and choices is None and messages):
            from atomgraph.local.grounded import knowledge_block

            call.grounded = knowledge_block(str(messages[-1].text))
            if call.grounded is not None:
                call.gen = {"max_tokens": max_tokens}
                return call

        grammar, close_json = None, None
        if offered and choice != "none":
            schema = tool_call_schema(offered)
            call.tools, call.tagged, call.parallel = offered, tagged, parallel
            call_gbnf = _json_gbnf(schema)
            if tagged and choice == "auto":
                pass  # the model writes text, <tool_call> blocks or both, in its own format (read after)
            elif tagged:  # one call, in the tags the model was trained to write
                call.forced = True
                grammar = engine.grammar(_rename_root(call_gbnf, "call") + "\nroot ::= "
                                         + json.dumps(TOOL_CALL_OPEN + "\n") + " call "
                                         + json.dumps("\n" + TOOL_CALL_CLOSE) + "\n")
                close_json = schema
                max_tokens = max(max_tokens, _frame_tokens(engine, schema) + _TAG_TOKENS)
            elif choice == "auto":
                # the model opens with "{" (a call under the tools' grammar) or answers in text
                grammar = engine.grammar(_rename_root(call_gbnf, "call")
                                         + '\nroot ::= call | text\ntext ::= [^{ \\t\\n] [^\\x00]*\n')
            else:
                call.forced = True
                grammar, close_json = engine.grammar(call_gbnf), schema
                max_tokens = max(max_tokens, _frame_tokens(engine, schema))
        elif json_schema is not None:
            json_schema = schema_of(json_schema)
        if grammar is not None:
            pass
        elif grammar_src is not None:
            grammar = engine.grammar(grammar_src)
        elif json_schema is not None:
            grammar, close_json = engine.json_schema_grammar(json_schema), json_schema
        elif choices is not None:
            grammar = engine.grammar(choices_grammar(choices))
            longest = max(len(engine.tokenize(c)) for c in choices if isinstance(c, str) and c)
            max_tokens = max(max_tokens, longest + 1)  # a cap must not cut an option in half
        call.gen = {"max_tokens": max_tokens, "temperature": temperature, "stop": stops, "grammar": grammar,
                    "logprobs": want_logprobs, "close_json": close_json,
                    "close_reserve": close_reserve if grammar_src is not None else None,
                    "seed": seed if seed is not None else (self.seed if temperature > 0 else None)}
        return call

    def _meta(self, out: Generation, call: _Call) -> dict[str, Any]:
        meta: dict[str, Any] = {"model_name": self.model, "finish_reason": out.finish_reason,
                                "seconds": round(out.seconds, 4), "prompt_format": call.style}
        if call.want_logprobs:
            meta["logprobs"] = {"content": [{"token": x["token"], "logprob": x["logprob"], "bytes": x["bytes"]}
                                            for x in out.logprobs or []]}
        return meta

    @staticmethod
    def _usage(n_prompt: int, n_out: int) -> dict[str, int]:
        return {"input_tokens": n_prompt, "output_tokens": n_out, "total_tokens": n_prompt + n_out}

    def _read_call(self, text: str, finish: str, tools: Sequence[dict] = ()) -> tuple[list[dict], list[dict]]:
        """``(tool_calls, invalid_tool_calls)`` of a reply that opens with ``{`` under the tools' grammar.
        Arguments are checked against the tool's schema: the grammar engine enforces the
        schema's shape but not every keyword (llama.cpp ignores ``minimum``/``maximum``), so a
        call outside it is an invalid call that says why, never a silent bad call."""
        cid = f"call_{uuid.uuid4().hex[:24]}"
        try:
            doc = json.loads(text)
        except ValueError:
            why = "cut by the output cap (max_tokens)" if finish == "length" else "not a complete JSON call"
            return [], [invalid_tool_call(name=None, args=text, id=cid, error=f"tool call {why}")]
        args = doc.get("arguments") if isinstance(doc, dict) else None
        if isinstance(args, str):  # arguments written as a JSON string
            try:
                args = json.loads(args)
            except ValueError:
                pass
        if not isinstance(doc, dict) or not isinstance(doc.get("name"), str) or not isinstance(args or {}, dict):
            return [], [invalid_tool_call(name=None, args=text[:2000], id=cid, error='tool call is not a JSON '
                                          'object {"name": <tool name>, "arguments": {...}}')]
        name, args = doc["name"], args or {}
        if tools and name not in {t["function"]["name"] for t in tools}:
            return [], [invalid_tool_call(name=name[:200], args=json.dumps(args, ensure_ascii=False)[:2000], id=cid,
                                          error="tool call names no tool offered")]
        params = next((t["function"].get("parameters") for t in tools if t["function"]["name"] == name), None)
        if params:
            import jsonschema

            try:
                jsonschema.validate(args, params)
            except jsonschema.ValidationError as exc:
                return [], [invalid_tool_call(name=name, args=json.dumps(args, ensure_ascii=False), id=cid,
                                              error=f"arguments outside the tool's schema: {exc.message}"[:500])]
        return [tool_call(name=name, args=args, id=cid)], []

    def _read_tagged(self, text: str, finish: str, call: _Call) -> tuple[str, list[dict], list[dict]]:
        """``(content, tool_calls, invalid_tool_calls)`` of a reply to tools shown by the model's
        own template. A call is what llama.cpp's reader of this format (Hermes 2 Pro, Qwen2.5)
        takes for one: a ``<tool_call>…</tool_call>`` block, or a JSON object ``{"name": <an
        offered tool>, …}`` in a ```` ```json ```` fence or bare (opening the reply or after a
        blank), what a small model often writes instead of the tags. Each is read as
        :meth:`_read_call` reads one: a block that is no complete call of an offered tool is an
        invalid call saying why. The text outside the calls is the content (its pieces stripped,
        one a line). ``parallel_tool_calls=False`` keeps the first call; any further one is an
        invalid call saying so."""
        named = r'\{\s*"name"\s*:\s*"(?:%s)"' % "|".join(re.escape(t["function"]["name"]) for t in call.tools or ())
        opener = re.compile(rf"{re.escape(TOOL_CALL_OPEN)}|```(?:json)?\s*(?={named})|(?<!\S)(?={named})")
        content, calls, invalid, pos = [], [], [], 0
        while (m := opener.search(text, pos)) is not None:
            content.append(text[pos:m.start()])
            close = TOOL_CALL_CLOSE if m.group().startswith(TOOL_CALL_OPEN) else "```" if m.group() else None
            if close is not None:
                end = text.find(close, m.end())
                body, pos = (text[m.end():], len(text)) if end < 0 else (text[m.end():end], end + len(close))
            else:  # a bare object: as far as its JSON goes
                try:
                    pos = json.JSONDecoder().raw_decode(text, m.start())[1]
                except ValueError:
                    pos = len(text)
                body = text[m.start():pos]
            ok, bad = self._read_call(body.strip(), finish, call.tools or ())
            if ok and calls and not call.parallel:
                c = ok[0]
                ok, bad = [], [invalid_tool_call(name=c["name"], args=json.dumps(c["args"], ensure_ascii=False),
                                                 id=c["id"], error="a further call in one reply (parallel_tool_calls"
                                                                   "=False keeps the first)")]
            calls += ok
            invalid += bad
            if pos <= m.start():  # pragma: no cover - every opener consumes text
                break
        if not (calls or invalid):
            return text, [], []
        return "\n".join(t.strip() for t in (*content, text[pos:]) if t.strip()), calls, invalid

    def _is_call(self, call: _Call, text: str) -> bool:
        """Whether a reply (so far) is a call in our own format (a tool-call template's replies:
        :meth:`_read_tagged`)."""
        return call.tools is not None and (call.forced or text.lstrip().startswith("{"))

    def _message(self, call: _Call, out: Generation) -> AIMessage:
        meta = self._meta(out, call)
        usage = self._usage(out.n_prompt, len(out.tokens))
        if call.tagged and call.tools is not None:
            content, calls, invalid = self._read_tagged(out.text, out.finish_reason, call)
            if calls:
                meta["finish_reason"] = "tool_calls"
            return AIMessage(content=content, tool_calls=calls, invalid_tool_calls=invalid, response_metadata=meta,
                             usage_metadata=usage)
        if self._is_call(call, out.text):
            calls, invalid = self._read_call(out.text, out.finish_reason, call.tools or ())
            if calls:
                meta["finish_reason"] = "tool_calls"
            return AIMessage(content="", tool_calls=calls, invalid_tool_calls=invalid, response_metadata=meta,
                             usage_metadata=usage)
        return AIMessage(content=out.text, response_metadata=meta, usage_metadata=usage)

    # --- generation -----------------------------------------------------------------------

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        call = self._prepare(messages, stop, kwargs)
        if call.trie is not None:
            return ChatResult(generations=[ChatGeneration(message=self._beam(call))])
        if call.grounded is not None:
            return ChatResult(generations=[ChatGeneration(message=self._grounded(call))])
        out = self.engine.generate(call.prompt, **call.gen)
        return ChatResult(generations=[ChatGeneration(message=self._message(call, out))])

    def _beam(self, call: _Call) -> AIMessage:
        from atomgraph.local.beam import beam_decode

        engine, beam, prompt = self.engine, call.beam, call.prompt
        res = beam_decode(engine, prompt, call.trie, beam_width=int(beam.get("beam_width") or self.beam_width),
                          n_best=beam.get("n_best"), max_items=int(beam.get("max_items") or 8),
                          max_tokens=call.gen["max_tokens"], open=beam.get("trie_open", "("),
                          close=beam.get("trie_close", ")"), sep=beam.get("trie_sep", ", "))
        best = res.best
        info = res.as_dict()
        meta = {"model_name": self.model, "finish_reason": best.finish_reason if best else res.stop_reason,
                "prompt_format": call.style, "beams": info["beams"], "beam_stop_reason": res.stop_reason, "beam_ended": res.ended,
                "seconds": round(res.seconds, 4)}
        n_out = len(best.tokens) if best else 0
        return AIMessage(content=best.text if best else "", response_metadata=meta,
                         usage_metadata=self._usage(len(prompt), n_out))

    def _grounded(self, call: _Call) -> AIMessage:
        from atomgraph.local.grounded import grounded_reply

        rep = grounded_reply(self.engine, call.prompt, [call.grounded], stop=call.stops,
                             max_tokens=call.gen["max_tokens"])
        meta = {"model_name": self.model, "finish_reason": rep.finish_reason, "seconds": round(rep.seconds, 4),
                "prompt_format": call.style, "grounded": {"strings": rep.strings, "ngrams": rep.n_ngrams,
                                                          "decoded": rep.grounded, "note": rep.note}}
        return AIMessage(content=rep.text, response_metadata=meta,
                         usage_metadata=self._usage(len(call.prompt), rep.output_tokens))

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                         run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        # The decoder is CPU-bound and holds the engine's lock: run it off the event loop.
        return await asyncio.to_thread(self._generate, messages, stop, None, **kwargs)

    # --- streaming ------------------------------------------------------------------------

    def _start(self, call: _Call, put: Callable[[tuple], None], cancelled: threading.Event) -> threading.Thread:
        """Decode ``call`` in a worker thread; ``put`` receives ``("text", reply so far)`` per
        token, then ``("done", Generation)`` or ``("error", exception)``."""
        def on_text(text: str) -> bool:
            put(("text", text))
            return cancelled.is_set()

        def work() -> None:
            try:
                if call.trie is not None:
                    put(("message", self._beam(call)))
                elif call.grounded is not None:
                    put(("message", self._grounded(call)))
                else:
                    put(("done", self.engine.generate(call.prompt, **call.gen, on_text=on_text)))
            except BaseException as exc:  # handed to the consumer, raised there
                put(("error", exc))

        thread = threading.Thread(target=work, name="ChatLocalLlama-stream", daemon=True)
        thread.start()
        return thread

    def _chunks(self, call: _Call, event: tuple, state: dict) -> list[ChatGenerationChunk]:
        """The chunks one worker event yields (``state``: what was emitted so far)."""
        kind, value = event
        if kind == "text":
            if call.tagged and call.tools is not None and not call.forced:
                # the text before anything that may open a call streams; the calls are read whole at the end
                head = re.split(_MAY_OPEN_CALL, value, maxsplit=1)[0]
                safe = _safe_prefix(head, [*call.stops, TOOL_CALL_OPEN, "```"]).rstrip()
            elif self._is_call(call, value) or (call.tools is not None and not value.strip()):
                return []  # a tool call is read whole at the end; leading blanks wait to see which
            else:
                safe = _safe_prefix(value, call.stops)
            delta = safe[len(state["sent"]):]
            if not delta:
                return []
            state["sent"] = safe
            return [ChatGenerationChunk(message=AIMessageChunk(content=delta))]
        if kind == "message":  # a beam or a grounded answer: one chunk
            msg: AIMessage = value
            return [ChatGenerationChunk(message=AIMessageChunk(
                content=msg.content, response_metadata=msg.response_metadata, usage_metadata=msg.usage_metadata,
                chunk_position="last"))]
        out: Generation = value
        msg = self._message(call, out)  # the same reading as invoke's: a tool call, an invalid one, or text
        meta, usage = msg.response_metadata, msg.usage_metadata
        if msg.tool_calls or msg.invalid_tool_calls:
            text = str(msg.content)
            rest = text[len(state["sent"]):] if text.startswith(state["sent"]) else ""
            if msg.invalid_tool_calls:  # both lists as they are (chunks would re-read the invalid ones)
                calls = {"tool_calls": msg.tool_calls, "invalid_tool_calls": msg.invalid_tool_calls}
            else:
                calls = {"tool_call_chunks": [tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"],
                                                              index=i) for i, c in enumerate(msg.tool_calls)]}
            return [ChatGenerationChunk(message=AIMessageChunk(content=rest, **calls, response_metadata=meta,
                                                               usage_metadata=usage, chunk_position="last"))]
        rest = out.text[len(state["sent"]):] if out.text.startswith(state["sent"]) else ""
        state["sent"] = out.text
        return [ChatGenerationChunk(message=AIMessageChunk(content=rest, response_metadata=meta,
                                                           usage_metadata=usage, chunk_position="last"))]

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        call = self._prepare(messages, stop, kwargs)
        events: queue.Queue = queue.Queue()
        cancelled = threading.Event()
        thread = self._start(call, events.put, cancelled)
        state = {"sent": ""}
        try:
            while True:
                event = events.get()
                if event[0] == "error":
                    raise event[1]
                for chunk in self._chunks(call, event, state):
                    if run_manager and chunk.message.content:
                        run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                    yield chunk
                if event[0] in ("done", "message"):
                    return
        finally:
            cancelled.set()  # a consumer that left early stops the decoder at its next token
            thread.join()

    async def _astream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                       run_manager: AsyncCallbackManagerForLLMRun | None = None,
                       **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        call = await asyncio.to_thread(self._prepare, messages, stop, kwargs)  # may load the model
        loop = asyncio.get_running_loop()
        events: asyncio.Queue = asyncio.Queue()
        cancelled = threading.Event()
        thread = self._start(call, lambda e: loop.call_soon_threadsafe(events.put_nowait, e), cancelled)
        state = {"sent": ""}
        try:
            while True:
                event = await events.get()
                if event[0] == "error":
                    raise event[1]
                for chunk in self._chunks(call, event, state):
                    if run_manager and chunk.message.content:
                        await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                    yield chunk
                if event[0] in ("done", "message"):
                    return
        finally:
            cancelled.set()
            await asyncio.to_thread(thread.join)

    # --- tools and structured output ------------------------------------------------------

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | dict | bool | None = None,
                   strict: bool | None = None, parallel_tool_calls: bool | None = None,
                   **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """The model with ``tools`` offered (see the module docstring): ``tool_choice`` is
        ``"auto"`` (default), ``"none"``, ``"any"``/``"required"``/``True``, or a tool's name.
        ``strict`` is accepted for any value (forced calls are decoded under the tools' grammar,
        and every call is checked against its tool's schema); ``parallel_tool_calls=False``
        keeps one call per reply (in our own format a reply holds one call either way)."""
        formatted = openai_tools(tools)
        choice = _tool_choice_name(tool_choice, [t["function"]["name"] for t in formatted])
        if choice != "none":
            self.engine.grammar(_json_gbnf(tool_call_schema(formatted)))  # an unsupported schema fails here
        if parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = parallel_tool_calls
        return self.bind(tools=formatted, tool_choice=choice, **kwargs)

    def with_structured_output(self, schema: Any, *, include_raw: bool = False,
                               method: Literal["json_schema", "function_calling", "json_mode"] = "json_schema",
                               strict: bool | None = None, tools: Sequence[Any] | None = None,
                               **kwargs: Any) -> Runnable[LanguageModelInput, Any]:
        """The model's reply parsed into ``schema`` (a pydantic instance for a pydantic class,
        else a dict). ``method="json_schema"`` (default) or ``"json_mode"``: decoded under the
        schema's grammar, so a reply that finished within the output cap always parses;
        ``"function_calling"``: the schema as the one tool to call, its arguments parsed.
        ``strict`` is accepted (always strict: see the module docstring)."""
        if kwargs:
            raise TypeError(f"unsupported with_structured_output argument(s): {sorted(kwargs)}")
        if tools:
            raise TypeError("with_structured_output(tools=...) is not supported: bind_tools the tools instead")
        if method not in ("json_schema", "function_calling", "json_mode"):
            raise ValueError(f"method must be 'json_schema', 'function_calling' or 'json_mode', not {method!r}")
        if schema is None:
            raise ValueError("with_structured_output needs a schema (the local model has no schema-less JSON mode)")
        from langchain_core.utils.function_calling import convert_to_json_schema

        if method != "function_calling":
            json_schema = schema_of(schema)
            self.engine.json_schema_grammar(json_schema)  # reject an unsupported schema now, not per call
        try:  # the schema as LangChain's tracing shows it (what `ls_structured_output_format` carries)
            shown = convert_to_json_schema(schema)
        except ValueError:  # a bare JSON schema without a title
            shown = schema_of(schema)
        ls_format = {"kwargs": {"method": method, "strict": strict}, "schema": shown}
        parse = _parser_for(schema)
        if method == "function_calling":
            name = openai_tools([schema])[0]["function"]["name"]
            llm = self.bind_tools([schema], tool_choice=name, ls_structured_output_format=ls_format)

            def read(m: AIMessage) -> Any:
                calls = getattr(m, "tool_calls", None) or []
                if not calls:
                    bad = getattr(m, "invalid_tool_calls", None) or []
                    raise ValueError(bad[0]["error"] if bad else "the reply holds no tool call")
                return parse(json.dumps(calls[0]["args"]))
        else:
            llm = self.bind(json_schema=json_schema, ls_structured_output_format=ls_format)

            def read(m: AIMessage) -> Any:
                return parse(m.text)

        if not include_raw:
            return llm | RunnableLambda(read)

        def _parsed(x: dict) -> Any:
            return read(x["raw"])

        ok = RunnablePassthrough.assign(parsed=RunnableLambda(_parsed), parsing_error=lambda _: None)
        failed = RunnablePassthrough.assign(parsed=lambda _: None)
        return RunnableMap(raw=llm) | ok.with_fallbacks([failed], exception_key="parsing_error")


def completion_prompted(model: Any) -> bool:
    """Whether ``model`` (under any ``.bind`` layers) is an in-process model that is prompted with
    completion-style text: a base GGUF (no chat template) under ``prompt_format="auto"``, or
    ``"completion"`` asked for. Such a model continues a stage's demonstrations; the runtime lets it
    write the stage's demonstrated text reply (ended by the stage's stop sequences) instead of
    forcing the stage's JSON schema on it (:meth:`MethodRuntime._runnable
    <atomgraph.nodes.runtime.MethodRuntime._runnable>`)."""
    from atomgraph.backends import unwrap

    m = unwrap(model)
    return isinstance(m, ChatLocalLlama) and m.engine.prompt_style(m.prompt_format) == "completion"


def _parser_for(schema: Any) -> Callable[[str], Any]:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_validate_json
    if _is_pydantic_v1(schema):
        return lambda text: schema.parse_obj(json.loads(text))
    return json.loads


def _json_gbnf(schema: dict) -> str:
    from atomgraph.local.engine import json_gbnf

    return json_gbnf(schema)


def _rename_root(gbnf: str, name: str) -> str:
    """``gbnf`` with its ``root`` rule renamed ``name`` (to embed it in a larger grammar)."""
    return re.sub(r"(?m)^root(\s*::=)", name + r"\1", gbnf)


def _frame_tokens(engine: LocalEngine, schema: dict) -> int:
    """The smallest output cap at which a document of ``schema`` can still be completed: one
    token per character of the schema's smallest document (under a grammar the model often
    spells fixed keys and names a character or two per token) plus 16 tokens for its own words.
    A smaller cap would cut most calls (as ``choices`` never cuts an option in half, a tool
    call's cap never cuts the call's frame, which the tools impose, not the caller)."""
    from atomgraph.local.engine import minimal_instance

    return len(json.dumps(minimal_instance(schema))) + 16


def _safe_prefix(text: str, stops: Sequence[str]) -> str:
    """The part of a growing reply that can be shown: up to a stop string, less a trailing
    suffix that could begin one, less a trailing incomplete UTF-8 character."""
    cut = len(text)
    for s in stops:
        if not s:
            continue
        i = text.find(s)
        if i >= 0:
            cut = min(cut, i)
            continue
        for n in range(min(len(s) - 1, len(text)), 0, -1):
            if text.endswith(s[:n]):
                cut = min(cut, len(text) - n)
                break
    text = text[:cut]
    while text.endswith("\ufffd"):
        text = text[:-1]
    return text


def _with_system(turns: list[tuple[str, str]], text: str) -> list[tuple[str, str]]:
    """``turns`` with ``text`` added to the system turn (a system turn first if there is none)."""
    if turns and turns[0][0] == "system":
        return [("system", turns[0][1].rstrip() + "\n\n" + text), *turns[1:]]
    return [("system", text), *turns]


def _template_messages(messages: Sequence[BaseMessage]) -> list[dict]:
    """Messages as a tool-call template renders them: an assistant turn's calls as its
    ``tool_calls``, a ``ToolMessage`` as a ``tool`` turn (an error result says so)."""
    out: list[dict] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": str(m.text)})
        elif isinstance(m, AIMessage):
            msg: dict[str, Any] = {"role": "assistant", "content": str(m.text)}
            if m.tool_calls:
                msg["tool_calls"] = [{"type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
                                     for c in m.tool_calls]
            out.append(msg)
        elif isinstance(m, ToolMessage):
            status = "Error: " if getattr(m, "status", "success") == "error" else ""
            out.append({"role": "tool", "content": status + str(m.text)})
        else:
            out.append({"role": "user", "content": str(m.text)})
    return out


def _turns(messages: Sequence[BaseMessage]) -> list[tuple[str, str]]:
    out = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append(("system", str(m.text)))
        elif isinstance(m, AIMessage):
            text = str(m.text)
            calls = [json.dumps({"name": c["name"], "arguments": c["args"]}, ensure_ascii=False)
                     for c in m.tool_calls or []]
            out.append(("assistant", "\n".join(x for x in (text, *calls) if x)))
        elif isinstance(m, ToolMessage):
            status = " (error)" if getattr(m, "status", "success") == "error" else ""
            out.append(("user", f"Tool result ({m.name or m.tool_call_id}){status}: {m.text}"))
        else:
            out.append(("user", str(m.text)))
    return out
