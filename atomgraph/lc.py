"""Method graphs as LangChain components: ``graph.as_tool()`` and ``graph.as_retriever()``.

Every method graph compiles to a :class:`MethodGraph` (a LangGraph ``CompiledStateGraph``;
nothing else changes), which adds two LangChain conveniences:

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
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import StateGraph
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


def check_door(graph: Any, input: Any, context: Any = None) -> None:
    """Input validation at the door of every method graph (Python, CLI and Studio alike, since
    each runs ``stream``/``astream``): a new run's input (of a graph whose input schema names
    one) needs a ``question`` (a non-empty
    string, :func:`~atomgraph.state.run.check_question`) and no key the graph's input schema
    does not name; its ``context`` is validated as the graph's context schema (unknown
    parameters, a bad value, an unknown ``prompt_pack``) and its ``models`` name known roles.
    Each failure is one :class:`~atomgraph.errors.AtomgraphError` naming what is accepted. A
    resume (``None``, a ``Command``) passes."""
    import dataclasses
    from collections.abc import Mapping

    from atomgraph.state.run import InvalidQuestion, check_question  # noqa: F401

    if isinstance(input, Mapping):
        accepted = _input_keys(graph)
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


def _input_keys(graph: Any) -> list[str]:
    """The keys the graph's input schema names ([] when it cannot tell)."""
    try:
        return sorted((graph.get_input_jsonschema() or {}).get("properties") or {})
    except Exception:  # noqa: BLE001 - a schema that cannot be drawn: no key check
        return []


class MethodGraph(CompiledStateGraph):
    """A method's compiled graph with LangChain's ``as_tool`` / ``as_retriever`` made to fit it, its
    input and context checked at the door (:func:`check_door`), and a default bound per question: a
    run that sets no ``configurable["deadline"]`` gets one at its start plus the settings'
    ``question_timeout`` (question-answering graphs)."""

    default_bound_s: Any = None  # () -> seconds or None (set from the method's runtime)

    def _with_deadline(self, config: Any) -> Any:
        conf = (config or {}).get("configurable") or {}
        if conf.get("deadline") is not None or self.default_bound_s is None:
            return config
        seconds = self.default_bound_s()
        if not seconds:
            return config
        import time

        from langchain_core.runnables.config import merge_configs

        return merge_configs(config, {"configurable": {"deadline": time.time() + seconds}})

    def stream(self, input: Any, config: Any = None, **kwargs: Any):  # noqa: A002 - LangGraph's name
        check_door(self, input, kwargs.get("context"))
        return super().stream(input, self._with_deadline(config), **kwargs)

    def astream(self, input: Any, config: Any = None, **kwargs: Any):  # noqa: A002
        check_door(self, input, kwargs.get("context"))
        return super().astream(input, self._with_deadline(config), **kwargs)

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        """``graph.invoke``; a run stopped at its deadline plus grace (a node still running then)
        returns the output contract with the reason instead of raising."""
        from atomgraph.state.run import with_cleaning_noted

        try:
            return with_cleaning_noted(super().invoke(input, config, **kwargs))
        except DeadlineExceeded as exc:
            return _stopped_at_deadline(exc)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        """``graph.ainvoke``, stopped at the deadline as :meth:`invoke` is."""
        from atomgraph.state.run import with_cleaning_noted

        try:
            return with_cleaning_noted(await super().ainvoke(input, config, **kwargs))
        except DeadlineExceeded as exc:
            return _stopped_at_deadline(exc)

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


class MethodStateGraph(StateGraph):
    """A ``StateGraph`` whose ``compile()`` gives a :class:`MethodGraph`."""

    def compile(self, *args: Any, **kwargs: Any) -> MethodGraph:  # type: ignore[override]
        compiled = super().compile(*args, **kwargs)
        compiled.__class__ = MethodGraph  # same object, two more methods and a default question bound
        compiled.default_bound_s = getattr(self, "default_bound_s", None)
        return compiled  # type: ignore[return-value]
