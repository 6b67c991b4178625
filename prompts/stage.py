"""A prompt stage: a prompt and its parser travelling together as one object.

Every LLM step of every method is a :class:`Stage`: its name (the tag ``stage:<name>``
on the run, which LangSmith, Studio and the scripted test models see), the model role that
runs it, the chat prompt, a LangChain output parser for plain-text replies, an optional
pydantic schema for structured output (``with_structured_output``), and a default
output-token cap.

>>> chain = PLAN_STAGE.chain(model)             # prompt | model (capped) | parser, tagged
>>> tree_json = chain.invoke({"question": "..."})

Nodes call stages through the method runtime (:meth:`MethodRuntime.ask`), which also keeps
the raw reply and a usage record, and turns a failed call or an unreadable reply into data
instead of an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import BaseOutputParser
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
    """One LLM step: prompt + parser (+ structured-output schema), run by one model role."""

    name: str
    role: str
    prompt: ChatPromptTemplate
    parser: BaseOutputParser
    schema: type[BaseModel] | None = None
    from_structured: Callable[[Any], T] | None = None  # schema instance -> the parser's value
    max_tokens: int = 512

    @property
    def tags(self) -> list[str]:
        return [f"stage:{self.name}"]

    def model_for(self, model: BaseChatModel, max_tokens: int | None = None, *, structured: bool = False) -> Runnable:
        """``model`` with this stage's output cap bound (and its schema, when structured)."""
        from atomgraph.models import cap_output

        capped = cap_output(model, max_tokens or self.max_tokens)
        if structured and self.schema is not None:
            return capped.with_structured_output(self.schema, include_raw=True)
        return capped

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
        return body.with_config(run_name=self.name, tags=self.tags)

    def recorded_chain(self, model: BaseChatModel, max_tokens: int | None = None, *,
                       structured: bool = False) -> Runnable:
        """The stage returning ``{"raw": AIMessage, "parsed": value | None, "parsing_error": str | None}``:
        what the runtime needs to keep usage and report an unreadable reply as data."""
        if structured and self.schema is not None:
            convert = self.from_structured or (lambda x: x)

            def _structured(out: dict) -> dict:
                err = out.get("parsing_error")
                parsed = out.get("parsed")
                if err is None and parsed is not None:
                    try:
                        return {"raw": out.get("raw"), "parsed": convert(parsed), "parsing_error": None}
                    except (ParseError, ValueError) as exc:
                        err = exc
                return {"raw": out.get("raw"), "parsed": None,
                        "parsing_error": f"structured output unreadable: {err or 'no value'}"}

            body = self.prompt | self.model_for(model, max_tokens, structured=True) | RunnableLambda(_structured)
        else:
            parser = self.parser

            def _text(msg: AIMessage) -> dict:
                try:
                    return {"raw": msg, "parsed": parser.invoke(msg), "parsing_error": None}
                except OutputParserException as exc:
                    return {"raw": msg, "parsed": None, "parsing_error": str(exc).split("\nFor troubleshooting")[0]}

            body = self.prompt | self.model_for(model, max_tokens) | RunnableLambda(_text)
        return body.with_config(run_name=self.name, tags=self.tags)
