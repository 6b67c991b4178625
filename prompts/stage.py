"""A prompt stage: a prompt and its parser travelling together as one object.

Every LLM step of every method is a :class:`Stage`: its name (the tag ``stage:<name>``
on the run, which LangSmith, Studio and the scripted test models see), the model role that
runs it, the chat prompt, a LangChain output parser for plain-text replies, an optional
pydantic schema for structured output (``with_structured_output``), and a default
output-token cap.

>>> chain = PLAN_STAGE.chain(model)             # render | prompt | model (capped) | parser, tagged
>>> tree_json = chain.invoke({"question": "..."})
>>> PLAN_STAGE.parse(reply_text)                # the same parser on its own: text -> typed value

Nodes call stages through the method runtime (:meth:`MethodRuntime.ask`, :func:`atomgraph.nodes.call.call_stage`): the same prompt,
capped model and parser under the same tags, run as three plain calls rather than a
RunnableSequence (a sequence costs about 1.5 ms a call in run managers and a thread for the
parser), keeping the raw reply and a usage record, and turning a failed call or an
unreadable reply into data instead of an exception.

The second half of this module is **the answer contract** (below): what every method's
final-answer parser accepts as an answer, and the shared reader of 'So the answer is:' replies.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, Sequence, TypeVar

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.outputs import ChatGeneration
from langchain_core.prompts import (AIMessagePromptTemplate, ChatPromptTemplate, HumanMessagePromptTemplate,
                                    PromptTemplate, SystemMessagePromptTemplate)
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel

from atomgraph.errors import ParseError
from atomgraph.text import clean_hidden, unsafe_chars

T = TypeVar("T")


class TextParser(BaseOutputParser[Any]):
    """A LangChain output parser made of a function ``text -> value`` that raises
    :class:`~atomgraph.errors.ParseError` (or ValueError) on unreadable text."""

    fn: Callable[[str], Any]
    name_: str = "text"

    @property
    def _type(self) -> str:
        return f"atomgraph_{self.name_}"

    def parse(self, text: str) -> Any:
        try:
            return self.fn(text)
        except (ParseError, ValueError) as exc:
            raise OutputParserException(str(exc), llm_output=text) from exc
        except RecursionError:  # a reader that recursed on deep nesting: an unreadable reply, never a crash
            raise OutputParserException("the reply is nested too deeply to read", llm_output=text) from None


def text_parser(fn: Callable[[str], T], name: str = "text") -> TextParser:
    return TextParser(fn=fn, name_=name)


def _reads_first_text(parser: BaseOutputParser) -> bool:
    """Whether ``parser`` reads a reply as LangChain's ``BaseOutputParser.parse_result`` does: its
    ``parse`` on the first generation's text (a text message's content), with nothing of its own."""
    return type(parser).parse_result is BaseOutputParser.parse_result


# A prompt whose messages are all plain text templates (system / human / AI, f-string, no partial
# variables, no extra message fields) is rendered as ``str.format`` of each template into its message
# class: what ``ChatPromptTemplate.format_messages`` makes of such a prompt (tests/test_call_path.py
# compares the two on every stage), without LangChain's Python-level formatter on every call.
_PLAIN_CLASSES = {SystemMessagePromptTemplate: SystemMessage, HumanMessagePromptTemplate: HumanMessage,
                  AIMessagePromptTemplate: AIMessage}
_PLAIN: dict[int, tuple[ChatPromptTemplate, tuple[tuple[type, str], ...] | None]] = {}


def plain_templates(prompt: ChatPromptTemplate) -> tuple[tuple[type, str], ...] | None:
    """``(message class, template)`` of each of ``prompt``'s messages when every one is a plain text
    template, else None (the prompt is rendered by ``format_messages``); read once per prompt."""
    held = _PLAIN.get(id(prompt))
    if held is not None and held[0] is prompt:
        return held[1]
    plain: list[tuple[type, str]] | None = []
    if not isinstance(prompt, ChatPromptTemplate) or prompt.partial_variables:
        plain = None
    for m in prompt.messages if plain is not None else ():
        inner = getattr(m, "prompt", None)
        if (type(m) not in _PLAIN_CLASSES or m.additional_kwargs or type(inner) is not PromptTemplate
                or inner.template_format != "f-string" or inner.partial_variables):
            plain = None
            break
        plain.append((_PLAIN_CLASSES[type(m)], inner.template))
    found = tuple(plain) if plain is not None else None
    _PLAIN[id(prompt)] = (prompt, found)
    return found


@dataclass(frozen=True)
class Stage(Generic[T]):
    """One LLM step, both ways: what goes in (``render``: the node's inputs -> the prompt's
    variables; ``prompt``) and what comes out (``parser``/:meth:`parse`: the reply -> a typed
    value; ``schema`` for structured output), with its output cap and stop sequences, run by
    one model role."""

    name: str
    role: str
    prompt: ChatPromptTemplate
    parser: BaseOutputParser
    schema: type[BaseModel] | None = None
    from_structured: Callable[[Any], T] | None = None  # schema instance -> the parser's value
    max_tokens: int = 512
    # the cap of one retry when a reply comes back cut (finish_reason "length", or past the cap): the
    # call is made again once at this cap (its record says ``retry``); None: no retry (:meth:`retry_cap`)
    retry_max_tokens: int | None = None
    render: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # inputs -> prompt variables
    stop: tuple[str, ...] = ()  # where a reply ends (the next demonstration's header, turn tokens)
    answers: bool = False  # its value answers the ``question`` variable: rt.ask holds it to check_answer_to
    # its few-shot demonstrations, (question, [worked text,] answer): rt.ask refuses a copied answer (check_not_copied)
    demonstrations: tuple[tuple[str, ...], ...] = ()
    # a second reading of a reply refused as a copied demonstration: (reply, inputs) -> the text
    # to read instead, or None (the baselines: the model restated *our* question before answering)
    reread: Callable[[str, dict[str, Any]], str | None] | None = None

    def retry_cap(self, cap: int) -> int | None:
        """The cap of the one retry of a reply cut under ``cap``: ``retry_max_tokens`` at the stage's
        own cap, the same ratio at a cap the settings set (plan 300 → 450 where 512 → 768); None
        when the stage makes no retry."""
        if not self.retry_max_tokens or not cap:
            return None
        return max(cap + 1, round(cap * self.retry_max_tokens / self.max_tokens))

    @property
    def tags(self) -> list[str]:
        return [f"stage:{self.name}"]

    def variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The prompt's variables for ``inputs`` (the inputs themselves when the stage has no renderer)."""
        return dict(self.render(inputs)) if self.render is not None else dict(inputs)

    def messages(self, inputs: dict[str, Any]) -> list:
        """The chat messages this stage sends for ``inputs``."""
        variables = self.variables(inputs)
        plain = plain_templates(self.prompt)
        if plain is None:
            return self.prompt.format_messages(**variables)
        return [cls(content=template.format(**variables)) for cls, template in plain]

    def parse(self, text: str) -> T:
        """The typed value of a reply's text; ParseError (a ValueError) when it is unreadable."""
        try:
            return self.parser.parse(text)
        except OutputParserException as exc:
            raise ParseError(str(exc).split("\nFor troubleshooting")[0]) from exc

    def model_for(self, model: BaseChatModel, max_tokens: int | None = None, *, structured: bool = False) -> Runnable:
        """``model`` with this stage's output cap and stop sequences bound (and its schema, when
        structured)."""
        from atomgraph.models import cap_output, structured_model

        capped = cap_output(model, max_tokens or self.max_tokens)
        if structured and self.schema is not None:
            return structured_model(capped, self.schema)  # a chat model or any wrapper of one
        return capped.bind(stop=list(self.stop)) if self.stop else capped

    def chain(self, model: BaseChatModel, max_tokens: int | None = None, *, structured: bool = False) -> Runnable:
        """``prompt | model | parser``, tagged with the stage name: the stage as a plain Runnable
        (raises OutputParserException on an unreadable reply)."""
        if structured and self.schema is not None:
            convert = self.from_structured or (lambda x: x)

            def _value(out: dict) -> Any:
                if out.get("parsing_error") is not None or out.get("parsed") is None:
                    raise OutputParserException(f"structured output unreadable: {out.get('parsing_error')}")
                return convert(out["parsed"])

            body = self.prompt | self.model_for(model, max_tokens, structured=True) | RunnableLambda(_value)
        else:
            body = self.prompt | self.model_for(model, max_tokens) | self.parser
        if self.render is not None:
            body = RunnableLambda(self.variables) | body
        return body.with_config(run_name=self.name, tags=self.tags)

    def read(self, out: Any) -> tuple[AIMessage | None, Any, str | None]:
        """(the model's message, the value, why it is unreadable) from what :meth:`model_for`'s
        runnable returned: a message (text mode) or ``{"raw", "parsed", "parsing_error"}``
        (structured mode)."""
        if isinstance(out, dict):
            raw, parsed, err = out.get("raw"), out.get("parsed"), out.get("parsing_error")
            if err is None and parsed is not None:
                try:
                    return raw, (self.from_structured or (lambda x: x))(parsed), None
                except (ParseError, ValueError) as exc:
                    err = exc
            return raw, None, f"structured output unreadable: {err or 'no value'}"
        try:  # the parser's own reading of a reply, without a Runnable run around it
            if isinstance(getattr(out, "content", None), str) and _reads_first_text(self.parser):
                return out, self.parser.parse(out.content), None  # what parse_result reads off a generation
            return out, self.parser.parse_result([ChatGeneration(message=out)]), None
        except OutputParserException as exc:
            return out, None, str(exc).split("\nFor troubleshooting")[0]


# ==================================================================================================
# The answer contract: what every method's final-answer parser accepts as an answer.
#
# Nothing but an answer is an answer. A model's reply is *read* by a stage's parser; the text
# the parser picks as the answer must pass :func:`check_answer`, or the reply is unreadable
# (:class:`AnswerRefused`, a :class:`~atomgraph.errors.ParseError`) and the method's
# documented fallback runs, recorded with its reason. An answer
#
# - is short: at most ``MAX_ANSWER_CHARS`` characters and ``MAX_ANSWER_WORDS`` words
#   (reason ``too_long``);
# - is not a line of evidence or a run of citation markers (``[1] Title | text``, ``[2][3]``,
#   ``Passage 1:``; reason ``evidence``);
# - is not an echo of the prompt: its instructions, placeholders (``<answer>``), labels
#   (``Question:``, the answer format's own ``So the answer is:``) or a question — not a title ending in '?',
#   :func:`_title_cased` — (reason ``echo``), nor a demonstration's question or answer
#   copied back (reason ``demonstration``: a copied question by :func:`clean_reply`, a copied answer by
#   :func:`check_not_copied`, applied by ``rt.ask`` to every stage that declares its ``demonstrations``);
# - holds no chat-template token (``<start_of_turn>``, ``[/INST]``, ``<|im_end|>``; reason
#   ``template_token``) and no markup debris (a JSON fragment, an HTML tag; reason ``markup``);
# - gives no instructions to its reader (``ignore previous instructions``, ``say PWNED``,
#   ``system prompt``; reason ``injection``);
# - names what the question asks for rather than restating its description (reason ``echo``,
#   :func:`check_answer_to`, applied by ``rt.ask`` to every stage marked ``answers=True``
#   against the stage's ``question``);
# - does not repeat itself (the same four words twice: a model caught in a loop; reason
#   ``repetition``);
# - is not empty (reason ``empty``);
# - holds only text: no control character, terminal escape (``\\x1b]0;...\\x07``, ``\\x1b[2J``), NUL,
#   DEL, C1 control, bidirectional override or isolate (U+202A-U+202E, U+2066-U+2069) or lone
#   surrogate (reason ``control_chars``; :mod:`atomgraph.text`); hidden characters (format characters —
#   zero-width, word joiner, BOM, soft hyphen, LRM/RLM, the TAG block — private-use and unassigned code
#   points: :func:`atomgraph.text.clean_hidden`) are removed, not refused: ``rt.ask`` removes them from every
#   reply before its parser reads it and records what went (``LLMCall.cleaned``,
#   ``trace["answer_cleaned"]``), and an answer made only of them is ``empty``;
# - is not the model's own debris (reason ``debris``): a chat-role word alone (``user``,
#   ``assistant``, ``model``), a turn marker's name (``start_of_turn``, ``im_end``), or — against
#   the question, :func:`check_debris` — a bare number or list of numbers where the question asks
#   for no number (``1, 100000`` to "Who ...?").
#
# How a parser uses it::
#
#     reply = clean_reply(text, instructions=[SYSTEM], demonstrations=DEMOS)  # cut at invented turns,
#     answer = ...pick the answer out of reply...                              # refuse copied demos
#     return check_answer(answer)
#
# The message of an :class:`AnswerRefused` starts ``answer refused (<reason>)``, so the reason
# survives as text in a call record's ``parse_error`` and in a run's ``error``;
# :func:`refusal_reason` reads it back (``eval run`` counts refusals by reason).
#
# Client-side cap: every reply that comes back through
# :meth:`MethodRuntime.ask <atomgraph.nodes.runtime.MethodRuntime.ask>` (and each step of ReAct's
# agent loop) is cut at :func:`reply_limit` characters (``CHARS_PER_TOKEN`` per token of the
# stage's output cap) *before* the stage's parser reads it; the call's record says ``capped`` and
# keeps the reply's length (``reply_chars``), and an unreadable cut reply's parse error starts
# with :func:`cut_note`. A server that ignores ``max_tokens`` cannot hand a parser, or an answer,
# 200,000 characters. :func:`cap_reply` is the same cut for display, marked with
# ``REPLY_CUT_MARK``.
# ==================================================================================================

MAX_ANSWER_CHARS = 200
MAX_ANSWER_WORDS = 30
CHARS_PER_TOKEN = 8  # generous: English averages about 4 characters a token
REPLY_CUT_MARK = "\n[reply cut at the stage's output cap]"

REASONS: dict[str, str] = {
    "empty": "no answer text",
    "too_long": "longer than an answer can be",
    "evidence": "a line of evidence or a run of citation markers, not an answer",
    "echo": "an echo of the prompt (its instructions, labels, placeholders or a question)",
    "demonstration": "a copy of a demonstration (its question or answer)",
    "template_token": "holds a chat-template token",
    "markup": "markup or a JSON fragment, not an answer",
    "injection": "instructions to the reader, not an answer",
    "repetition": "a phrase repeated over and over, not an answer",
    "control_chars": "holds control characters, terminal escapes, bidi overrides or lone surrogates, not text",
    "debris": "the model's own debris (a chat-role word, a turn marker, numbers the question does not ask for)",
}

# Chat-template tokens of the common open models; a reply is cut at the first one
# (client-side, for servers that do not honour stop sequences) and an answer holding one is refused.
TEMPLATE_TOKENS: tuple[str, ...] = (
    "<start_of_turn>", "<end_of_turn>", "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>", "<|im_start|>",
    "<|im_end|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|endoftext|>",
    "<|assistant|>", "<|user|>", "<|system|>", "<|end|>", "</s>", "<s>", "<bos>", "<eos>",
)
_TEMPLATE_RE = re.compile("|".join(re.escape(t) for t in TEMPLATE_TOKENS) + r"|<\|[a-z_]{2,30}\|>", re.I)

# Stop sequences for few-shot stages: the next demonstration's header and the end of a turn.
# At most four (OpenAI's limit); the parsers cut at every TEMPLATE_TOKEN client-side as well.
FEW_SHOT_STOPS: tuple[str, ...] = ("\nQuestion:", "<end_of_turn>", "[/INST]", "<|im_end|>")

_CITATION_RUN = re.compile(r"^[\s,;.]*(?:\[\s*\d+(?:\s*[-–,]\s*\d+)*\s*\][\s,;.]*)+$")
_EVIDENCE_LINE = re.compile(
    r"^\s*(?:\[\s*\d+\s*\]|\(\s*\d+\s*\)|(?:passage|document|doc|source|evidence|context|knowledge)\s*\d*\s*[:：#\]])"
    r"|^\s*(?:title|passage|text)\s*[:：]", re.I)
_LABEL = re.compile(r"^\s*(?:question|questions|sub-?questions?|examples?|follow[\s-]*up|intermediate answer|"
                    r"passages?|retrieved passages|reasoning|instructions?|system|user|assistant|model)\s*[:：]", re.I)
_ANSWER_MARKER = re.compile(r"\bthe\s+(?:final\s+)?answer\s+is\s*[:：]?\s*\S", re.I)
# the prompts' own answer-format labels inside an answer: the format echoed, not an answer
_FORMAT_LABEL = re.compile(r"\bso\s+the\s+(?:final\s+)?answer\s+is\b|\bparaphrase\s+answer\s*[:：]|\banswer\s+list\s*[:：]"
                           r"|^\s*(?:final\s+)?answer\s*[:：]", re.I)
_PLACEHOLDER = re.compile(r"<\s*(?:answer|final answer|your answer|entity|question|one simple question)\s*>"
                          # the prompts' own filler for an empty slot: "(nothing was retrieved)", "(none yet)"
                          r"|^\s*\(\s*(?:none(?:\s+yet)?|nothing\b[^()]*|no\s+(?:knowledge|results?|passages?|close phrase)\b[^()]*)\s*\)\s*$",
                          re.I)
_MARKUP = re.compile(r"^\s*[\[{]|[{}]|</?[a-z][a-z0-9]*(?:\s[^<>]*)?/?>|^\s*```", re.I)
_INJECTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,60}\b(?:instructions?|prompts?|rules|above|previous|prior)\b"
    r"|\bsystem\s+prompt\b|\bdeveloper\s+mode\b|\bjailbreak"
    r"|\byou\s+(?:are|must|should|will)\s+now\b|\bas\s+an\s+ai\b"
    r"|\b(?:say|print|output|reply|respond|write|repeat)\s+(?:only\s+|exactly\s+|with\s+)?[\"'“]?(?-i:[A-Z]{4,})\b"
    r"|\bnew\s+instructions?\b|https?://|\bwww\.",
    re.I)


# the model's own turn debris: a role word alone, or a turn marker's name without its brackets
_ROLE_WORDS = frozenset({"user", "assistant", "system"})
# role words that can be an answer ("What was Twiggy's profession?" "model"): debris unless the question asks for a kind
_ROLE_WORDS_ASKED = frozenset({"model", "human"})
_ASKS_KIND = re.compile(r"\b(?:profession|occupation|job|career|trade|role|what\s+(?:kind|type|sort)|works?\s+as|worked\s+as|"
                        r"species|known\s+as)\b", re.I)
_TURN_NAME = re.compile(r"\b(?:start_of_turn|end_of_turn|im_start|im_end|end_header_id|start_header_id|eot_id|"
                        r"endoftext)\b|<\|?/?(?:start|end)_of_turn|<\|?im_(?:start|end)", re.I)
_NUMBERS_ONLY = re.compile(r"^[\s\d.,;:/%+\-–—()]*\d[\s\d.,;:/%+\-–—()]*$")
# what a question asking for a number (a count, a year, a date, a measure) says; an event verb
# alone ("Which was founded first?") asks for a thing, "when"/"year" ask for its time
_ASKS_NUMBER = re.compile(
    r"\bhow\s+(?:many|much|old|long|far|tall|high|big|large|deep|wide|heavy|often)\b|\bwhen\b|"
    r"\b(?:years?|dates?|numbers?|population|age|decades?|centur(?:y|ies)|percent(?:age)?|scores?|count|"
    r"amount|total|sum|rank(?:ing)?|height|length|distance|weight|area|capacity|price|cost|"
    r"elevation|digits?|figures?|times|seasons?|episodes?|goals?|points?)\b"
    r"|\d\s*[-+*/×÷^]\s*\d|\b(?:plus|minus|multiplied|divided|squared)\b",  # arithmetic
    re.I)


class AnswerRefused(ParseError):
    """The text a parser picked is not an answer; ``reason`` is one of :data:`REASONS`."""

    def __init__(self, reason: str, detail: str = ""):
        self.reason = reason
        super().__init__(f"answer refused ({reason}): {REASONS.get(reason, reason)}" + (f": {detail}" if detail else ""))


_REFUSAL = re.compile(r"answer refused \(([a-z_]+)\)")


def refusal_reason(text: object) -> str | None:
    """The reason of an answer refusal in an error or parse_error text (None when it is none)."""
    m = _REFUSAL.search(str(text or ""))
    return m.group(1) if m else None


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", str(text)).casefold()
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


def _show(text: str, n: int = 80) -> str:
    return repr(text if len(text) <= n else text[:n] + "…")


def check_answer(answer: object, *, max_chars: int = MAX_ANSWER_CHARS, max_words: int = MAX_ANSWER_WORDS) -> str:
    """``answer`` (a string, stripped) when it meets the contract; :class:`AnswerRefused` naming
    the first clause it breaks otherwise (see the module's docstring for the clauses)."""
    if not isinstance(answer, str):
        raise AnswerRefused("markup", f"a {type(answer).__name__}, not text")
    bad = unsafe_chars(answer)
    if bad:
        raise AnswerRefused("control_chars", ", ".join(bad[:6]))
    text = clean_hidden(answer)[0].strip()  # hidden characters go (rt.ask removes them from the reply first)
    if not text or not _norm(text):
        raise AnswerRefused("empty")
    if _norm(text) in _ROLE_WORDS:
        raise AnswerRefused("debris", f"a chat-role word: {_show(text)}")
    if _TEMPLATE_RE.search(text) or _TURN_NAME.search(text):
        raise AnswerRefused("template_token", _show(text))
    if _INJECTION.search(text):
        raise AnswerRefused("injection", _show(text))
    if len(text) > max_chars or len(text.split()) > max_words or text.count("\n") > 2:
        raise AnswerRefused("too_long", f"{len(text)} characters, {len(text.split())} words")
    tokens = _norm(text).split()
    grams = [tuple(tokens[i:i + 4]) for i in range(len(tokens) - 3)]
    if len(grams) != len(set(grams)):  # a model caught in a loop: the same four words twice
        raise AnswerRefused("repetition", _show(text))
    if _CITATION_RUN.match(text) or _EVIDENCE_LINE.match(text):
        raise AnswerRefused("evidence", _show(text))
    if (_PLACEHOLDER.search(text) or _LABEL.match(text) or _FORMAT_LABEL.search(text)
            or (text.rstrip().endswith("?") and not _title_cased(text))):
        raise AnswerRefused("echo", _show(text))
    if _MARKUP.search(text):
        raise AnswerRefused("markup", _show(text))
    return text


_MINOR_WORDS = frozenset("a an and as at but by for from in into nor of on or the to with".split())


def _title_cased(text: str) -> bool:
    """Whether every word of ``text`` but the minor ones (``of``, ``the``…) starts with a capital: a
    title that ends in '?' ("Who Framed Roger Rabbit?", "What'S Your Husband Doing?", two of 2Wiki's
    dev answers) is an answer; a question a model restates ("When did Arnold Sommerfeld die?") or a
    bare "Where?" is not."""
    words = [w for w in re.findall(r"[^\W\d_][\w'’]*", text) if w.casefold() not in _MINOR_WORDS]
    return len(words) >= 2 and all(w[0].isupper() for w in words)  # "Where?" alone is an echo


def check_debris(answer: object, question: object) -> str:
    """``answer`` unless it is a chat-role word that can be an answer (``model``, ``human``) to a
    question that asks for no kind or profession, or a bare number or list of numbers that
    ``question`` does not ask for: AnswerRefused ``debris`` for a bare number or a list of
    numbers (``1``, ``1, 100000``) when the question asks for no number (a count, a year, a date,
    a measure: :data:`_ASKS_NUMBER`), and whatever it asks when it asks who, whom, whose or
    where, or is a yes/no question."""
    text = str(answer or "").strip()
    q = str(question or "").strip()
    if _norm(text) in _ROLE_WORDS_ASKED and not _ASKS_KIND.search(q):
        raise AnswerRefused("debris", f"a chat-role word: {_show(text)}")
    if not text or not _NUMBERS_ONLY.match(text):
        return text
    if not q:
        return text
    entity = re.match(r"\s*(?:who|whom|whose|where)\b", q, re.I)
    # a yes/no question opens with an auxiliary and asks nothing else ("Do Lafzon Ki Kahani, ...
    # released in which year, ...?" opens with a title and asks a year)
    yes_no = (re.match(r"\s*(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", q, re.I)
              and not re.search(r"\b(?:what|which|when|where|who|whom|whose|how)\b", q, re.I))
    if entity or yes_no or not _ASKS_NUMBER.search(q):
        raise AnswerRefused("debris", f"{_show(text)}: numbers the question does not ask for")
    return text


_RELATIVE = re.compile(r"\b(?:who|whom|whose|which|where|that|when)\b", re.I)


def check_answer_to(answer: object, question: object) -> str:
    """``answer`` when it answers ``question`` rather than restating it; AnswerRefused ``echo``
    when it is made of the question's own words — three or more content words, every one of them
    in the question — and either holds a relative clause ("the physicist after whom the wave
    equation is named", "the university where Niels Bohr earned his doctorate") or covers half
    the question's content words or more ("the first president of the association published
    Journal X"): the thing asked for, not named. A name the question offers as one of its choices
    ("Niels Bohr", "The Lord of the Rings: The Return of the King") covers less than half of it
    and is an answer."""
    from atomgraph.text import content_words

    text = str(answer or "")
    a_words, q_words = content_words(text), content_words(str(question or ""))
    if len(a_words) < 3 or not q_words or not a_words <= q_words:
        return text
    normed = _norm(text).split()
    if _RELATIVE.search(" ".join(normed[1:])) or len(a_words) >= 0.5 * len(q_words):
        raise AnswerRefused("echo", f"the answer restates the question instead of answering it: {_show(text)}")
    return text


# Where the model's own reasoning ends: the first answer marker, or a JSON reply's "answer" key.
_REASONING_END = re.compile(r"(?:so\s+)?the\s+(?:final\s+)?answer\s+is\b|[\"']answer[\"']\s*:", re.I)
_JSON_KEY = re.compile(r"[\"'][A-Za-z_]+[\"']\s*:")


def check_not_copied(answer: object, demonstrations: Sequence[Sequence[str]], inputs: dict | None = None,
                     reply: str = "") -> str:
    """``answer`` unless it is a demonstration's own answer that nothing supports.

    The rule: an answer equal (normalised) to the answer of one of ``demonstrations`` (each
    ``(question, answer)`` or ``(question, worked text..., answer)``) is refused (reason
    ``demonstration``) unless every content word of it occurs in our question or the stage's
    other ``inputs`` (its evidence, context, intermediate answers), or in the model's own reasoning
    in ``reply`` (the text before its first answer marker, or before a JSON reply's ``"answer"``
    key). Neither counts the demonstrations' own text: an input that holds a demonstration's
    question (the rendered examples) is skipped, and so is a sentence that repeats a demonstration's
    question or a sentence of its worked text, or a reasoning sentence that holds nothing but the
    answer. A small model that copies "So the answer is: Sid Haig" from the examples gives no
    answer; a passage or a reasoning of its own that names the same thing makes it one. Asked a
    demonstration's own question, that demonstration's answer is not a copy.
    """
    from atomgraph.text import content_words

    text = str(answer or "")
    norm = _norm(text)
    ours = _norm(str((inputs or {}).get("question") or ""))
    # asked a demonstration's own question, its answer is the answer (the leak is the data set's)
    if not norm or not any(d and _norm(d[-1]) == norm and _norm(d[0]) != ours for d in demonstrations):
        return text
    demo_qs = [q for q in (_norm(d[0]) for d in demonstrations if d) if q and q != ours]
    demo_sentences = {s for d in demonstrations for part in d[1:-1] for s in _sentences(part, 3)} - {ours}
    a_words = content_words(text)

    def own(block: str, *, reasoning: bool = False) -> set[str]:
        """The content words of ``block`` less the sentences it copies from the demonstrations."""
        found: set[str] = set()
        for piece in re.split(r"(?<=[.!?])\s+|\n+", _JSON_KEY.sub(" ", block)):
            n = _norm(piece)
            if not n or n in demo_sentences or any(q in n for q in demo_qs):
                continue
            words = content_words(piece)
            if reasoning and not words - a_words:  # "Sid Haig." on its own is the answer, not reasoning
                continue
            found |= words
        return found

    support: set[str] = set()
    for value in (inputs or {}).values():
        if isinstance(value, str) and not any(q in _norm(value) for q in demo_qs):
            support |= own(value)
    m = _REASONING_END.search(reply or "")
    if m:
        support |= own(reply[:m.start()], reasoning=True)
    if a_words and a_words <= support:
        return text
    raise AnswerRefused("demonstration", f"{_show(text)} is a demonstration's answer, and neither the question, "
                        "the stage's inputs nor the model's own reasoning supports it")


def answer_texts(value: object) -> list[str]:
    """The answer texts a stage's parsed value holds: a string; an answer list (``.answers``);
    ``{"answer": ...}``; a final step ``{"kind": "final", "text": ...}``."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        if isinstance(value.get("answer"), str):
            return [value["answer"]]
        if value.get("kind") == "final" and isinstance(value.get("text"), str):
            return [value["text"]]
        return []
    items = getattr(value, "answers", None)
    return [str(x) for x in items] if isinstance(items, list) else []


def hold_to_question(value: object, inputs: dict, demonstrations: Sequence[Sequence[str]] = (), reply: str = ""):
    """``value`` (a stage's parsed value) when every answer it holds (:func:`answer_texts`)
    answers ``inputs["question"]`` (:func:`check_answer_to`) and is no unsupported copy of a
    demonstration's answer (:func:`check_not_copied`); AnswerRefused otherwise. What ``rt.ask``
    applies to every stage whose value answers its question (``Stage.answers``). Unsafe bytes
    (``control_chars``) and numbers the question does not ask for (:func:`check_debris`) are
    refused here too, whatever the stage's parser let through."""
    for answer in answer_texts(value):
        bad = unsafe_chars(answer)
        if bad:
            raise AnswerRefused("control_chars", ", ".join(bad[:6]))
        check_debris(answer, inputs.get("question"))
        check_answer_to(answer, inputs.get("question"))
        check_not_copied(answer, demonstrations, inputs, reply)
    return value


def cut_at_stops(text: str, stops: Iterable[str] = ()) -> str:
    """``text`` up to the first of ``stops`` or of :data:`TEMPLATE_TOKENS` (a reply from a server
    that ignored the stop sequences reads as if it had not)."""
    cut = len(text)
    for s in stops:
        i = text.find(s) if s else -1
        if 0 <= i < cut:
            cut = i
    m = _TEMPLATE_RE.search(text)
    if m and m.start() < cut:
        cut = m.start()
    return text[:cut]


def _sentences(text: str, min_words: int) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [n for n in (_norm(p) for p in parts) if len(n.split()) >= min_words]


def clean_reply(reply: str, *, instructions: Sequence[str] = (), demonstrations: Sequence[tuple[str, str]] = (),
                stops: Iterable[str] = FEW_SHOT_STOPS, invented_turns: bool = True) -> str:
    """The part of ``reply`` that can hold an answer to *our* question:

    - cut at the first stop sequence or chat-template token, and (``invented_turns``) at a
      ``Question:`` line after the first line (the model inventing the next demonstration);
    - :class:`AnswerRefused` ``demonstration`` when it starts with a ``Question:`` line (the
      model writing a demonstration of its own) or copies a demonstration's question
      (``demonstrations``: ``(question, answer)`` pairs), ``echo`` when nothing is left after
      dropping the sentences of ``instructions`` it repeats (sentences of 4+ words), or when it
      repeats two or more of them and gives no 'the answer is: …' of its own after them;
      ``empty`` when it is empty.
    """
    text = cut_at_stops(reply or "", stops)
    if invented_turns:
        m = re.search(r"\n\s*(?:Question|Q)\s*[:：]", text)
        if m:
            text = text[:m.start()]
    text = text.strip()
    if not text:
        raise AnswerRefused("empty", "the reply is empty")
    if re.match(r"\s*(?:Question|Q)\s*[:：]", text):
        raise AnswerRefused("demonstration", "the reply starts a new demonstration ('Question: ...')")
    normed = _norm(text)
    for q, _a in demonstrations:
        nq = _norm(q)
        if nq and nq in normed:
            raise AnswerRefused("demonstration", f"the reply repeats the demonstration {_show(q, 60)}")
    echoed = {s for block in instructions for s in _sentences(block, 4)}
    if echoed:
        pieces = [p for p in re.split(r"(?<=[.!?])\s+|\n", text) if p.strip()]
        kept = [p for p in pieces if _norm(p) not in echoed]
        if len(kept) < len(pieces):
            if not any(_norm(p) for p in kept):
                raise AnswerRefused("echo", "the reply repeats the prompt's instructions")
            text = "\n".join(kept).strip()
            if len(pieces) - len(kept) >= 2 and not _ANSWER_MARKER.search(text):
                # the prompt sent back (two or more of its sentences) with no answer of the model's own after it
                raise AnswerRefused("echo", "the reply repeats the prompt's instructions")
    return text


def reply_problem(reply: str | None, *, question: str = "", instructions: Sequence[str] = (),
                  demonstrations: Sequence[str] = ()) -> str | None:
    """For a stage whose reply is no answer (a plan, a list of sub-questions) and that could not
    use it: which of :data:`REASONS` the reply shows, so the recorded failure says *why* it was
    no reply to our request (None when it shows none of them; the parse error then stands alone):

    - ``empty``;
    - ``echo``: it repeats two or more sentences of ``instructions`` (the prompt sent back);
    - ``injection``: it gives its reader instructions;
    - ``demonstration``: it holds one of ``demonstrations`` (their questions) that is not
      ``question``, or starts a ``Question:`` turn of its own about another question;
    - ``template_token``: it holds a chat-template token.
    """
    text = reply or ""
    if not text.strip():
        return "empty"
    echoed = {s for block in instructions for s in _sentences(block, 4)}
    if echoed and len(echoed & set(_sentences(text, 4))) >= 2:
        return "echo"
    if _INJECTION.search(text):
        return "injection"
    normed, ours = _norm(text), _norm(question)
    for q in demonstrations:
        nq = _norm(q)
        if nq and nq in normed and nq != ours:
            return "demonstration"
    m = re.match(r"\s*(?:Question|Q)\s*[:：]\s*([^\n]*)", text)
    if m and (not ours or ours not in _norm(m.group(1))):
        return "demonstration"
    if _TEMPLATE_RE.search(text):
        return "template_token"
    return None


def reply_limit(max_tokens: int | None, *, chars_per_token: int = CHARS_PER_TOKEN) -> int | None:
    """How many characters a reply under an output cap of ``max_tokens`` may hold (None: no cap)."""
    return int(max_tokens) * chars_per_token if max_tokens else None


def cut_note(chars: int, max_tokens: int | None) -> str:
    """Why a reply was cut: the text a record's parse error starts with."""
    return (f"reply cut at the stage's output cap ({chars:,} characters; {max_tokens} tokens allow "
            f"{reply_limit(max_tokens) or 0:,})")


def cap_reply(text: str, max_tokens: int | None, *, chars_per_token: int = CHARS_PER_TOKEN) -> tuple[str, bool]:
    """``(text, False)`` when it fits ``max_tokens`` (at ``chars_per_token``), else the text cut at
    that many characters and marked with :data:`REPLY_CUT_MARK`, and True."""
    limit = reply_limit(max_tokens, chars_per_token=chars_per_token)
    if not text or limit is None or len(text) <= limit:
        return text, False
    return text[:limit] + REPLY_CUT_MARK, True


__all__ = [
    "AnswerRefused",
    "CHARS_PER_TOKEN",
    "FEW_SHOT_STOPS",
    "MAX_ANSWER_CHARS",
    "MAX_ANSWER_WORDS",
    "REASONS",
    "REPLY_CUT_MARK",
    "TEMPLATE_TOKENS",
    "answer_texts",
    "cap_reply",
    "check_answer",
    "check_answer_to",
    "check_debris",
    "check_not_copied",
    "clean_reply",
    "cut_at_stops",
    "cut_note",
    "hold_to_question",
    "refusal_reason",
    "reply_limit",
    "reply_problem",
]


# The shared reader of 'So the answer is:' replies (baselines, KAR³, ARM, the comparison methods).

_MARKER = re.compile(r"(?:so\s+)?the\s+(?:final\s+)?answer\s+is\s*[:：]?\s*", re.I)
_LEAD_LABEL = re.compile(r"^\s*(?:final\s+answer|short\s+answer|answer|a)\s*[:：]\s*", re.I)
_RUN_ON = re.compile(r"\s+(?:Question|Answer|Q|Passages?|Context|Explanation|Reasoning)\s*[:：]")


def _tidy(answer: str) -> str:
    answer = answer.strip().strip("*").strip()
    answer = _LEAD_LABEL.sub("", answer).strip()
    if answer.endswith(".") and not re.search(r"\b[A-Z]\.$", answer):
        answer = answer[:-1]
    return answer.strip().strip('"').strip().strip("*").strip()


def read_answer(text: str, *, instructions: Sequence[str] = (), demonstrations: Sequence[tuple[str, str]] = (),
                require_marker: bool = False, stops: Sequence[str] = FEW_SHOT_STOPS) -> str:
    """The answer to *our* question in a reply, checked against the answer contract.

    The reply is cut where the model starts inventing the next demonstration (a ``Question:``
    line, a chat-template token: :func:`~atomgraph.prompts.stage.clean_reply`), a
    copied demonstration or an echo of ``instructions`` is refused, and the answer is the rest
    of the line after the *first* 'So the answer is:' marker (the one that ends the model's own
    reasoning). Without a marker, the first non-empty line is the answer, unless
    ``require_marker`` (stages that ask for reasoning first). The answer must pass
    :func:`~atomgraph.prompts.stage.check_answer`.

    Raises ParseError (an :class:`~atomgraph.prompts.stage.AnswerRefused` when the
    text is there but is not an answer).
    """
    reply = clean_reply(text or "", instructions=instructions, demonstrations=demonstrations, stops=stops)
    m = _MARKER.search(reply)
    if m:
        tail = reply[m.end():].strip()
        answer = tail.splitlines()[0] if tail else ""
        if not _tidy(answer):
            raise ParseError(f"no answer after 'So the answer is:' in: {reply[:200]!r}")
    elif require_marker:
        raise ParseError(f"no 'So the answer is:' line in: {reply[:200]!r}")
    else:
        answer = next(ln for ln in reply.splitlines() if ln.strip())
    # a run-on past the answer on the same line (a server that ignored the stop sequences)
    answer = _RUN_ON.split(answer, maxsplit=1)[0]
    return check_answer(_tidy(answer))


def without_restated_question(text: str, question: str) -> str | None:
    """``text`` without a first line that restates *our* ``question`` ('Question: <question>'),
    or None when it does not start so. A small model often restates the question before
    answering; a restated *demonstration* stays a refused copy."""
    first, _, rest = (text or "").lstrip().partition("\n")
    m = re.match(r"\s*(?:Question|Q)\s*[:：]\s*(.*)$", first)
    norm = lambda x: " ".join(re.sub(r"[^\w\s]", " ", x.casefold()).split())  # noqa: E731
    if m and norm(m.group(1)) == norm(question) and rest.strip():
        return rest
    return None


def extract_answer(text: str) -> str:
    """:func:`read_answer` with no prompt to compare against: the first marker's answer, else the
    first non-empty line, checked against the answer contract. ParseError for an empty reply."""
    return read_answer(text)


def answer_parser(instructions: Sequence[str] = (), demonstrations: Sequence[tuple[str, str]] = (), *,
                  require_marker: bool = False, name: str = "final_answer"):
    """A stage parser that reads the answer with :func:`read_answer` against a prompt's own
    ``instructions`` and ``demonstrations``."""
    def read(text: str) -> str:
        return read_answer(text, instructions=instructions, demonstrations=demonstrations, require_marker=require_marker)

    return text_parser(read, name)
