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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.outputs import ChatGeneration
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel

from atomgraph.errors import ParseError

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


def text_parser(fn: Callable[[str], T], name: str = "text") -> TextParser:
    return TextParser(fn=fn, name_=name)


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
    render: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # inputs -> prompt variables
    stop: tuple[str, ...] = ()  # where a reply ends (the next demonstration's header, turn tokens)
    answers: bool = False  # its value answers the ``question`` variable: rt.ask holds it to check_answer_to
    # its few-shot demonstrations, (question, [worked text,] answer): rt.ask refuses a copied answer (check_not_copied)
    demonstrations: tuple[tuple[str, ...], ...] = ()
    # a second reading of a reply refused as a copied demonstration: (reply, inputs) -> the text
    # to read instead, or None (the baselines: the model restated *our* question before answering)
    reread: Callable[[str, dict[str, Any]], str | None] | None = None

    @property
    def tags(self) -> list[str]:
        return [f"stage:{self.name}"]

    def variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The prompt's variables for ``inputs`` (the inputs themselves when the stage has no renderer)."""
        return dict(self.render(inputs)) if self.render is not None else dict(inputs)

    def messages(self, inputs: dict[str, Any]) -> list:
        """The chat messages this stage sends for ``inputs``."""
        return self.prompt.format_messages(**self.variables(inputs))

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
            return out, self.parser.parse_result([ChatGeneration(message=out)]), None
        except OutputParserException as exc:
            return out, None, str(exc).split("\nFor troubleshooting")[0]
