"""``ChatLocalLlama``: a LangChain chat model over an in-process GGUF model (llama-cpp-python).

>>> model = ChatLocalLlama()                                  # the bundled Gemma-3-270M
>>> model = ChatLocalLlama(model_path="/models/qwen2.5-7b-instruct-q4_k_m.gguf", max_tokens=256)
>>> model.invoke("Capital of France?").content
>>> model.invoke(msgs, choices=["yes", "no"]).content          # exactly one of the options
>>> model.invoke(msgs, json_schema={...}).content             # a JSON document of the schema
>>> model.invoke(msgs, grammar='root ::= "(" [a-z]+ ")"')     # any GBNF grammar
>>> model.invoke(msgs, logprobs=True).response_metadata["logprobs"]["content"]  # [{"token", "logprob"}]
>>> msg = model.invoke(msgs, ngram_trie=trie, beam_width=4, n_best=3)
>>> msg.content, msg.response_metadata["beams"]               # "(a, b)", every list with its scores
>>> model.with_structured_output(PlanSchema, include_raw=True).invoke(msgs)   # always parses

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
from typing import Any, Callable, ClassVar, Literal, Sequence

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda, RunnableMap, RunnablePassthrough
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from atomgraph.local.engine import DEFAULT_N_CTX, GrammarError, LocalEngine, load_engine

# Keyword arguments LangChain itself passes along to _generate; not ours to act on.
_IGNORED_KWARGS = {"ls_structured_output_format", "tools", "tool_choice", "response_format"}


def choices_grammar(options: Sequence[str]) -> str:
    """A GBNF grammar whose only sentences are ``options``."""
    opts = [o for o in dict.fromkeys(options) if isinstance(o, str) and o]
    if not opts:
        raise GrammarError("choices must hold at least one non-empty string")
    return "root ::= " + " | ".join(json.dumps(o, ensure_ascii=False) for o in opts)


def schema_of(schema: Any) -> dict:
    """A JSON schema from a pydantic model class, a TypedDict / function, or a dict."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if isinstance(schema, dict):
        if "parameters" in schema and "name" in schema:  # an OpenAI function / tool schema
            return schema["parameters"]
        if schema.get("type") == "json_schema" and "json_schema" in schema:
            return schema["json_schema"].get("schema", {})
        return schema
    from langchain_core.utils.function_calling import convert_to_json_schema

    return convert_to_json_schema(schema)


class ChatLocalLlama(BaseChatModel):
    """A chat model running a GGUF file in this process (see the module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    in_process_constraints: ClassVar[bool] = True  # atomgraph.prompts.constraints: the "local" backend

    model_path: str | None = Field(None, description="GGUF file; None = the bundled Gemma-3-270M.")
    model: str = Field("local", description="The model string that built this model (its name in records).")
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

    @property
    def engine(self) -> LocalEngine:
        """The process-wide engine of ``model_path`` (loaded on first use)."""
        if self._engine is None:
            self._engine = load_engine(self.model_path, n_ctx=self.n_ctx)
        return self._engine

    # --- generation -----------------------------------------------------------------------

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        engine = self.engine
        for k in _IGNORED_KWARGS:
            kwargs.pop(k, None)
        max_tokens = int(kwargs.pop("max_tokens", None) or self.max_tokens)
        temperature = float(kwargs.pop("temperature", self.temperature))
        want_logprobs = bool(kwargs.pop("logprobs", False))
        seed = kwargs.pop("seed", None)
        stops = [*(self.stop or []), *(stop or []), *(kwargs.pop("stop", None) or [])]
        grammar_src, json_schema = kwargs.pop("grammar", None), kwargs.pop("json_schema", None)
        choices, trie = kwargs.pop("choices", None), kwargs.pop("ngram_trie", None)
        close_reserve = kwargs.pop("close_reserve", None)
        beam = {k: kwargs.pop(k) for k in ("beam_width", "n_best", "max_items", "trie_open", "trie_close",
                                           "trie_sep") if k in kwargs}
        if kwargs:
            raise TypeError(f"ChatLocalLlama got unknown keyword argument(s): {sorted(kwargs)}")
        if sum(x is not None for x in (grammar_src, json_schema, choices, trie)) > 1:
            raise ValueError("pass at most one of grammar, json_schema, choices, ngram_trie")

        style = engine.prompt_style(self.prompt_format)
        prompt = engine.prompt(_turns(messages), style)
        if trie is not None:
            return self._beam(engine, prompt, trie, beam, max_tokens)
        if self.grounded_answers and grammar_src is None and json_schema is None and choices is None and messages:
            from atomgraph.local.grounded import knowledge_block

            block = knowledge_block(str(messages[-1].text))
            if block is not None:
                return self._grounded(engine, prompt, block, stops, max_tokens, style)

        grammar = None
        if json_schema is not None:
            json_schema = schema_of(json_schema)
        if grammar_src is not None:
            grammar = engine.grammar(grammar_src)
        elif json_schema is not None:
            grammar = engine.json_schema_grammar(json_schema)
        elif choices is not None:
            grammar = engine.grammar(choices_grammar(choices))
            longest = max(len(engine.tokenize(c)) for c in choices if isinstance(c, str) and c)
            max_tokens = max(max_tokens, longest + 1)  # a cap must not cut an option in half
        out = engine.generate(prompt, max_tokens=max_tokens, temperature=temperature, stop=stops,
                              grammar=grammar, logprobs=want_logprobs, close_json=json_schema,
                              close_reserve=close_reserve if grammar_src is not None else None,
                              seed=seed if seed is not None else (self.seed if temperature > 0 else None))
        meta: dict[str, Any] = {"model_name": self.model, "finish_reason": out.finish_reason,
                                "seconds": round(out.seconds, 4), "prompt_format": style}
        if want_logprobs:
            meta["logprobs"] = {"content": [{"token": x["token"], "logprob": x["logprob"], "bytes": x["bytes"]}
                                            for x in out.logprobs or []]}
        msg = AIMessage(content=out.text, response_metadata=meta,
                        usage_metadata={"input_tokens": out.n_prompt, "output_tokens": len(out.tokens),
                                        "total_tokens": out.n_prompt + len(out.tokens)})
        return ChatResult(generations=[ChatGeneration(message=msg)])

    def _beam(self, engine: LocalEngine, prompt: list[int], trie, beam: dict, max_tokens: int) -> ChatResult:
        from atomgraph.local.beam import beam_decode

        res = beam_decode(engine, prompt, trie, beam_width=int(beam.get("beam_width") or self.beam_width),
                          n_best=beam.get("n_best"), max_items=int(beam.get("max_items") or 8),
                          max_tokens=max_tokens, open=beam.get("trie_open", "("), close=beam.get("trie_close", ")"),
                          sep=beam.get("trie_sep", ", "))
        best = res.best
        info = res.as_dict()
        meta = {"model_name": self.model, "finish_reason": best.finish_reason if best else res.stop_reason,
                "beams": info["beams"], "beam_stop_reason": res.stop_reason, "beam_ended": res.ended,
                "seconds": round(res.seconds, 4)}
        n_out = len(best.tokens) if best else 0
        msg = AIMessage(content=best.text if best else "", response_metadata=meta,
                        usage_metadata={"input_tokens": len(prompt), "output_tokens": n_out,
                                        "total_tokens": len(prompt) + n_out})
        return ChatResult(generations=[ChatGeneration(message=msg)])

    def _grounded(self, engine: LocalEngine, prompt: list[int], block: str, stops: list[str], max_tokens: int,
                  style: str) -> ChatResult:
        from atomgraph.local.grounded import grounded_reply

        rep = grounded_reply(engine, prompt, [block], stop=stops, max_tokens=max_tokens)
        meta = {"model_name": self.model, "finish_reason": rep.finish_reason, "seconds": round(rep.seconds, 4),
                "prompt_format": style, "grounded": {"strings": rep.strings, "ngrams": rep.n_ngrams,
                                                     "decoded": rep.grounded, "note": rep.note}}
        msg = AIMessage(content=rep.text, response_metadata=meta,
                        usage_metadata={"input_tokens": len(prompt), "output_tokens": rep.output_tokens,
                                        "total_tokens": len(prompt) + rep.output_tokens})
        return ChatResult(generations=[ChatGeneration(message=msg)])

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                         run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        # The decoder is CPU-bound and holds the engine's lock: run it off the event loop.
        return await asyncio.to_thread(self._generate, messages, stop, None, **kwargs)

    # --- structured output ----------------------------------------------------------------

    def with_structured_output(self, schema: Any, *, include_raw: bool = False,
                               method: Literal["json_schema"] = "json_schema",
                               **kwargs: Any) -> Runnable[LanguageModelInput, Any]:
        """The model generating under ``schema``'s grammar, parsed into the schema (a pydantic
        instance for a pydantic class, else a dict). The grammar admits only documents of the
        schema, so a reply that finished within the output cap always parses."""
        if kwargs:
            raise TypeError(f"unsupported with_structured_output argument(s): {sorted(kwargs)}")
        json_schema = schema_of(schema)
        self.engine.json_schema_grammar(json_schema)  # reject an unsupported schema now, not per call
        llm = self.bind(json_schema=json_schema)
        parse = _parser_for(schema)
        if not include_raw:
            return llm | RunnableLambda(lambda m: parse(m.content))

        def _parsed(x: dict) -> Any:
            return parse(x["raw"].content)

        ok = RunnablePassthrough.assign(parsed=RunnableLambda(_parsed), parsing_error=lambda _: None)
        failed = RunnablePassthrough.assign(parsed=lambda _: None)
        return RunnableMap(raw=llm) | ok.with_fallbacks([failed], exception_key="parsing_error")


def _parser_for(schema: Any) -> Callable[[str], Any]:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_validate_json
    return json.loads


def _turns(messages: Sequence[BaseMessage]) -> list[tuple[str, str]]:
    out = []
    for m in messages:
        role = "system" if isinstance(m, SystemMessage) else "assistant" if isinstance(m, AIMessage) else "user"
        out.append((role, str(m.text)))
    return out
