"""Method graphs as LangChain components: ``graph.as_tool()`` and ``graph.as_retriever()``.

Every method's builder returns a :class:`MethodGraph`: a Runnable holding the compiled LangGraph
graph (``.graph``), which checks each run's input and context at the door, resolves the run's
parameters once, and adds two LangChain conveniences:

>>> tool = build_method("atomr", model=m).as_tool()          # for an agent: question -> answer
>>> tool.invoke({"question": "Where did Heisenberg's advisor die?"})
'Munich'
>>> tool.invoke({"question": "...", "with_evidence": True})   # the answer and what it rests on
>>> build_method("kar3", model=m).as_retriever(search_kwargs={"k": 3})   # ARM and KAR³ only

The tool returns the method's answer (not ``str()`` of the whole output dict); with
``with_evidence`` (per call) or ``evidence=True`` (for every call) it adds the retrieved
items. Called with a tool call (as agents do), the tool also returns an artifact: the
answer, retrieved ids and titles, ``stopped`` and ``error`` (JSON-serialisable).
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Iterator

from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field

from atomgraph.errors import ConfigError, DeadlineExceeded


class MethodToolInput(BaseModel):
    question: str = Field(description="a self-contained natural-language question")
    with_evidence: bool = Field(False, description="also return the passages or objects the answer rests on")


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def evidence_lines(out: dict, max_chars: int = 300) -> list[str]:
    """The retrieved items of one method output, one line each: ``[i] Title (id): text``
    (text where the trace carries it)."""
    texts: dict[str, str] = {}
    named: dict[str, str] = {}
    for e in (out.get("trace") or {}).get("evidence") or []:
        if isinstance(e, dict) and e.get("id"):
            texts.setdefault(str(e["id"]), str(e.get("text") or ""))
            named.setdefault(str(e["id"]), str(e.get("title") or ""))
    ids = [str(i) for i in out.get("retrieved_ids") or []]
    titles = [str(t) for t in out.get("retrieved_titles") or []]
    lines = []
    if ids:
        for n, i in enumerate(ids, 1):
            title = named.get(i) or (titles[n - 1] if len(titles) == len(ids) else "")
            text = texts.get(i, "")
            text = text[: max_chars - 3] + "..." if len(text) > max_chars else text
            lines.append(f"[{n}] {title + ' ' if title else ''}({i})" + (f": {text}" if text else ""))
    else:
        lines = [f"[{n}] {t}" for n, t in enumerate(titles, 1)]
    return lines


def tool_artifact(out: dict) -> dict:
    """The JSON-serialisable part of a method output an agent's caller may want."""
    return json.loads(json.dumps({
        "answer": out.get("answer") or "", "answers": list(out.get("answers") or []),
        "retrieved_ids": list(out.get("retrieved_ids") or []), "retrieved_titles": list(out.get("retrieved_titles") or []),
        "stopped": out.get("stopped"), "error": out.get("error"),
    }, default=str))


def tool_content(out: dict, with_evidence: bool) -> str:
    answer = str(out.get("answer") or "")
    if not answer:
        answer = f"(no answer: {out['error']})" if out.get("error") else "(no answer)"
    if not with_evidence:
        return answer
    lines = evidence_lines(out)
    return answer + "\n\nEvidence:\n" + ("\n".join(lines) if lines else "(none)")


def context_values(context: Any) -> dict:
    """The values a run's ``context`` gives: a dict's items, a dataclass's fields, none for None."""
    import dataclasses
    from collections.abc import Mapping

    if context is None:
        return {}
    if isinstance(context, Mapping):
        return dict(context)
    if dataclasses.is_dataclass(context) and not isinstance(context, type):
        return {f.name: getattr(context, f.name) for f in dataclasses.fields(context)}
    raise ConfigError(f"run context must be a dict or a dataclass, not {type(context).__name__}")


def check_door(graph: Any, input: Any, context: Any = None, accepted: list[str] | None = None) -> None:
    """Input validation at the door of every method graph (:class:`MethodGraph`: Python and the
    CLI): a new run's input (of a graph whose input schema names one) needs a ``question`` (a non-empty
    string, :func:`~atomgraph.state.run.check_question`) and no key the graph's input schema
    does not name; its ``context`` is validated as the graph's context schema (unknown
    parameters, a bad value, an unknown ``prompt_pack``) and its ``models`` name known roles.
    Each failure is one :class:`~atomgraph.errors.AtomgraphError` naming what is accepted. A
    resume (``None``, a ``Command``) passes. ``accepted``: the input schema's keys, where the
    caller has read them already (:func:`input_keys`)."""
    import dataclasses
    from collections.abc import Mapping

    from atomgraph.state.run import InvalidQuestion, check_question  # noqa: F401

    if isinstance(input, Mapping):
        accepted = input_keys(graph) if accepted is None else accepted
        asks = not accepted or "question" in accepted  # an index graph takes no question
        if asks and "question" not in input:
            raise InvalidQuestion(f"the input has no 'question' (got {sorted(map(str, input)) or 'no keys'}); "
                                  f"accepted: {', '.join(accepted) if accepted else 'question'}")
        if asks and not isinstance(input["question"], str):
            check_question(input["question"])  # not text: an error here; an empty one is the method's output error
        unknown = sorted(str(k) for k in input if accepted and k not in accepted)
        if unknown:
            raise ConfigError(f"unknown input key(s) {unknown}; accepted: {', '.join(accepted)}")
    if isinstance(context, Mapping):
        models = context.get("models")
        if models:
            from atomgraph.methods import known_roles

            roles = known_roles()
            if not isinstance(models, Mapping):
                raise ConfigError(f"context 'models' must map a role to a model (roles: {', '.join(roles)})")
            bad = sorted(str(k) for k in models if k not in roles)
            if bad:
                raise ConfigError(f"unknown model role(s) {bad} in the context's 'models'; roles are {', '.join(roles)}")
        schema = getattr(graph, "context_schema", None)
        if schema is not None and dataclasses.is_dataclass(schema):
            from atomgraph.state.run import validate_params

            validate_params(schema, context)  # unknown parameters, bad values, an unknown prompt pack


def input_keys(graph: Any) -> list[str]:
    """The keys the graph's input schema names ([] when it cannot tell)."""
    try:
        return sorted((graph.get_input_jsonschema() or {}).get("properties") or {})
    except Exception:  # noqa: BLE001 - a schema that cannot be drawn: no key check
        return []


class MethodGraph(Runnable[Any, Any]):
    """A method's graph as Python callers use it: a Runnable that holds the compiled LangGraph graph
    (:attr:`graph`, what ``langgraph.json`` serves) and starts each of its runs at the door:

    - the input and context are checked (:func:`check_door`), with the input's own keys (the
      compiled graph sees only those its input schema names);
    - the context goes to the graph as a dict (``{}`` for none), which LangGraph builds into the
      graph's context schema for the run, stamping the default bound of a question-answering run
      that sets no ``configurable["deadline"]`` (its start plus the settings' ``question_timeout``);
      the graph's edge from ``START`` resolves the run's parameters once
      (:meth:`~atomgraph.nodes.runtime.MethodRuntime.door`), for every node to read;
    - ``invoke`` / ``ainvoke`` of a run stopped at its deadline plus grace (a node still running
      then) return the output contract with the reason instead of raising.

    ``stream`` / ``astream`` / ``batch`` / ``abatch`` go through the same door; ``as_tool`` and
    ``as_retriever`` fit LangChain's conveniences to a method; everything else (``get_graph``,
    ``get_state``, ``checkpointer``, ``context_schema``, ...) is the compiled graph's."""

    def __init__(self, graph: CompiledStateGraph) -> None:
        self.graph = graph
        self.name = graph.name
        self._accepted: list[str] | None = None  # the input schema's keys, read at the first run

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or "graph" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["graph"], name)

    def __repr__(self) -> str:
        return f"MethodGraph({self.graph.name!r})"

    def _context(self, input: Any, config: Any, kwargs: dict) -> dict:  # noqa: A002 - LangGraph's name
        """The door: ``input`` and ``context`` checked; the context as the dict LangGraph builds
        the run's context from."""
        context = kwargs.pop("context", None)
        if self._accepted is None:
            self._accepted = input_keys(self.graph)
        check_door(self.graph, input, context, self._accepted)
        return context_values(context)

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        """``graph.invoke`` through the door; a run stopped at its deadline plus grace returns the
        output contract with the reason instead of raising."""
        from atomgraph.state.run import with_cleaning_noted

        context = self._context(input, config, kwargs)
        try:
            return with_cleaning_noted(self.graph.invoke(input, config, context=context, **kwargs))
        except DeadlineExceeded as exc:
            return _stopped_at_deadline(exc)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        """``graph.ainvoke``, through the door and stopped at the deadline as :meth:`invoke` is."""
        from atomgraph.state.run import with_cleaning_noted

        context = self._context(input, config, kwargs)
        try:
            return with_cleaning_noted(await self.graph.ainvoke(input, config, context=context, **kwargs))
        except DeadlineExceeded as exc:
            return _stopped_at_deadline(exc)

    def stream(self, input: Any, config: Any = None, **kwargs: Any) -> Iterator[Any]:  # noqa: A002
        context = self._context(input, config, kwargs)  # checked now, not at the first chunk
        return self.graph.stream(input, config, context=context, **kwargs)

    def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:  # noqa: A002
        context = self._context(input, config, kwargs)
        return self.graph.astream(input, config, context=context, **kwargs)

    # the compiled graph's face where Runnable has one of its own
    @property
    def InputType(self) -> Any:  # noqa: N802 - LangChain's name
        return self.graph.InputType

    @property
    def OutputType(self) -> Any:  # noqa: N802
        return self.graph.OutputType

    def get_input_schema(self, config: Any = None) -> Any:
        return self.graph.get_input_schema(config)

    def get_output_schema(self, config: Any = None) -> Any:
        return self.graph.get_output_schema(config)

    def get_input_jsonschema(self, config: Any = None) -> dict:
        return self.graph.get_input_jsonschema(config)

    def get_output_jsonschema(self, config: Any = None) -> dict:
        return self.graph.get_output_jsonschema(config)

    @property
    def config_specs(self) -> Any:
        return self.graph.config_specs

    def get_graph(self, config: Any = None, *, xray: Any = False) -> Any:
        return self.graph.get_graph(config, xray=xray)

    def copy(self, update: dict | None = None) -> "MethodGraph":
        """The same method over a copy of the compiled graph (e.g. ``{"checkpointer": saver}``)."""
        return MethodGraph(self.graph.copy(update))

    def with_config(self, config: Any = None, **kwargs: Any) -> "MethodGraph":
        return MethodGraph(self.graph.with_config(config, **kwargs))

    def as_tool(self, args_schema: Any = None, *, name: str | None = None, description: str | None = None,
                arg_types: Any = None, evidence: bool = False, context: dict | None = None) -> BaseTool:
        """The method as an agent tool: ``question`` (and ``with_evidence``) in, the answer out.
        ``context``: run parameters for every call (e.g. ``{"top_k": 5}``)."""
        if args_schema is not None or arg_types is not None:  # LangChain's generic form, as asked
            return super().as_tool(args_schema, name=name, description=description, arg_types=arg_types)
        graph = self
        method = self.name or "method"

        def run(question: str, with_evidence: bool = False) -> tuple[str, dict]:
            out = graph.invoke({"question": question}, context=context)
            return tool_content(out, evidence or with_evidence), tool_artifact(out)

        async def arun(question: str, with_evidence: bool = False) -> tuple[str, dict]:
            out = await graph.ainvoke({"question": question}, context=context)
            return tool_content(out, evidence or with_evidence), tool_artifact(out)

        return StructuredTool.from_function(
            func=run, coroutine=arun, name=name or f"ask_{method}", args_schema=MethodToolInput,
            description=description or _description(method), response_format="content_and_artifact",
        )

    def as_retriever(self, search_kwargs: dict | None = None, **kwargs: Any):
        """ARM or KAR³ as a LangChain retriever (:class:`~atomgraph.retrievers.ArmRetriever`,
        :class:`~atomgraph.retrievers.Kar3Retriever`): ``search_kwargs={"k": n}`` objects/chunks."""
        from atomgraph.imports import import_object
        from atomgraph.methods import registered

        offering = {m.name: m.retriever for m in registered() if m.retriever}
        if (self.name or "") not in offering:
            raise ConfigError(f"method {self.name!r} answers questions but is not a retrieval method; "
                              f"as_retriever is offered by {', '.join(offering)} (use as_tool for agents)")
        cls = import_object(offering[self.name])
        return cls(graph=self, search_kwargs=dict(search_kwargs or {}), **kwargs)


def _stopped_at_deadline(exc: BaseException) -> dict:
    from atomgraph.state.run import output_of

    return output_of({"error": str(exc), "stopped": "deadline"})


def _description(method: str) -> str:
    from atomgraph.methods import method_descriptions

    line = method_descriptions().get(method) or f"the {method} method"
    return (f"Answers a knowledge-intensive question with {line}. Input: a self-contained question; "
            "set with_evidence to also get the evidence.")
