"""ReAct with the knowledge sources as tools, on LangChain's own agent loop.

Each run builds a ``langchain.agents.create_agent`` agent (cheap: it is a small compiled
graph) with this run's parameters:

- one tool per available source, shaped like ``KnowledgeSource.as_tool()`` (``search_<name>``,
  the source's description, one ``query`` argument) but querying through
  :meth:`MethodRuntime.retrieve`, so every call and the evidence ids are recorded;
- the ``react`` stage's output cap on every model call (a capped model copy, or the cap
  passed through the request's model settings);
- :class:`StageCalls` middleware: every model call of the agent goes through the kit's model
  call (:func:`atomgraph.nodes.call.model_call`, as every stage call does): the stage's cap, the
  run's deadline, the reply cut at the cap; the kit's :class:`~atomgraph.nodes.call.CallRecorder`
  (a callback on the agent's run) records every model call the agent makes (tokens, latency,
  errors, cache hits);
- ``ModelCallLimitMiddleware(run_limit=max_steps)``: the step bound (plus a recursion limit
  as a second fence);
- ``search_first`` (ours; ``auto``: in-process models only): the first model call must call a
  tool (``tool_choice="any"``), later ones choose freely; the trace says whether it was on.

The agent's last message is read as every stage's reply is (:func:`atomgraph.nodes.call.read_reply`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool

from atomgraph import cache as reply_cache
from atomgraph.models import cap_output, model_name
from atomgraph.state.run import Evidence, RetrieverCall, check_question, render_evidence
from atomgraph.nodes.compare.common import hits
from atomgraph.nodes.call import (CallRecorder, Reply, cut_message, deadline_of, message_text, model_call,
                                  model_call_sync, read_reply, refresh_of, stage_config)
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.nodes.sync import call_model, run_sync
from atomgraph.prompts.compare import react as P
from atomgraph.state.compare import ReactState

try:  # langchain 1.x
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware, ModelCallLimitMiddleware
except ImportError:  # pragma: no cover - langchain>=1 is a dependency
    create_agent = None  # type: ignore[assignment]
    AgentMiddleware = object  # type: ignore[assignment,misc]
    ModelCallLimitMiddleware = None  # type: ignore[assignment]


@dataclass
class Recorded:
    """What one agent run retrieved, collected as it goes (kept even when the run fails midway)."""

    retriever_calls: list[RetrieverCall] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)


def cut_response(response: Any, cap: int | None) -> tuple[Any, int | None]:
    """An agent step's model response with each model message cut at the output cap (as a stage's
    reply is), and the longest original length of one that was over it."""
    messages = getattr(response, "result", None)
    if not isinstance(messages, list):
        return response, None
    kept, longest = [], None
    for m in messages:
        if isinstance(m, AIMessage):
            m, over = cut_message(m, cap)
            if over is not None:
                longest = max(longest or 0, over)
        kept.append(m)
    response.result = kept
    return response, longest


class StageCalls(AgentMiddleware):
    """Agent middleware: every model call of the agent is a call of the ``react`` stage through the
    kit's model call (:func:`~atomgraph.nodes.call.model_call`): under the stage's output cap and the
    run's deadline, recorded by the stage's :class:`CallRecorder`, the reply cut client-side at the
    cap (its record marked ``capped``) before the agent or the final-answer parser reads it."""

    def __init__(self, cap_kwargs: dict, cap: int | None, recorder: CallRecorder, deadline: float | None = None,
                 bound_s: float | None = None, question: str = "", refresh: bool = False, search_first: bool = False):
        super().__init__()
        self.search_first = search_first
        self.cap_kwargs = cap_kwargs
        self.cap = cap
        self.recorder = recorder
        self.deadline = deadline
        self.bound_s = bound_s
        self.question = question
        self.refresh = refresh

    def _readable(self, reply: Reply) -> AIMessage | None:
        """The step's model message when the agent could read it — a well-formed tool call, or a final
        reply the ``react`` stage reads as an answer (the same reading as the final answer's) — else
        None. Only a readable step is written to the response cache."""
        messages = [m for m in getattr(reply.out, "result", None) or [] if isinstance(m, AIMessage)]
        if not messages:
            return None
        m = messages[-1]
        if m.tool_calls:
            return None if m.invalid_tool_calls else m
        trial = Reply(AIMessage(content=message_text(m)), reply.call.model_copy(), over=reply.over)
        return m if read_reply(P.AGENT, {"question": self.question}, trial, self.cap).ok else None

    @property
    def name(self) -> str:
        return "StageCalls"

    def _capped(self, request):
        """The step's request under the stage's cap; with ``search_first``, the agent's first step
        (no search result among its messages yet) must call a tool."""
        changes: dict[str, Any] = {"model_settings": {**request.model_settings, **self.cap_kwargs}}
        if self.search_first and request.tools and not any(isinstance(m, ToolMessage) for m in request.messages):
            changes["tool_choice"] = "any"
        return request.override(**changes)

    def wrap_model_call(self, request, handler):
        with reply_cache.holding() as pending, reply_cache.refreshing(self.refresh):
            reply = model_call_sync(lambda: handler(self._capped(request)), self.recorder, self.cap, self.deadline,
                                    bound_s=self.bound_s, cut=cut_response)
            if reply.failed:
                raise reply.error
            read = self._readable(reply)
            if read is not None:
                reply_cache.keep(pending, read)
        return reply.out

    async def awrap_model_call(self, request, handler: Callable[[Any], Awaitable[Any]]):
        with reply_cache.holding() as pending, reply_cache.refreshing(self.refresh):
            reply = await model_call(lambda: handler(self._capped(request)), self.recorder, self.cap, self.deadline,
                                     bound_s=self.bound_s, cut=cut_response)
            if reply.failed:
                raise reply.error
            read = self._readable(reply)
            if read is not None:
                await asyncio.to_thread(reply_cache.keep, pending, read)  # SQLite, off the event loop
        return reply.out



def source_tools(rt: MethodRuntime, k: int, out: Recorded) -> list[BaseTool]:
    """One search tool per available source, recorded through the runtime."""
    tools = []
    for name, source in rt.sources().available.items():
        shape = source.as_tool(k)

        async def search(query: str, _name: str = name) -> str:
            evidence, calls, notes = await rt.retrieve([_name], query=query, k=k)
            out.evidence.extend(evidence)
            out.retriever_calls.extend(calls)
            return render_evidence(evidence) or ("; ".join(notes) if notes else "No results.")

        def search_sync(query: str, _name: str = name) -> str:  # the agent's sync run (graph.invoke)
            return run_sync(search(query, _name))

        tools.append(StructuredTool.from_function(func=search_sync, coroutine=search, name=shape.name,
                                                  description=shape.description, args_schema=shape.args_schema))
    return tools


def tool_calling_problem(model: Any, tools: list[BaseTool]) -> str | None:
    """Why ``model`` cannot drive a tool-calling agent, or None."""
    if not tools:
        return None
    try:
        model.bind_tools(tools)
    except NotImplementedError:
        return (f"the model {model_name(model)!r} ({type(model).__name__}) cannot call tools (no bind_tools); "
                "ReAct needs a tool-calling chat model")
    except Exception as exc:  # a provider rejecting the tool schema
        return f"the model {model_name(model)!r} cannot be given the search tools: {type(exc).__name__}: {exc}"[:500]
    return None


def message_steps(messages: list[BaseMessage]) -> list[dict]:
    """The agent's thoughts, actions and observations, for the trace."""
    steps: list[dict] = []
    for m in messages:
        if isinstance(m, AIMessage):
            steps.append({"kind": "thought", "text": message_text(m),
                          "tool_calls": [{"tool": c["name"], "args": c["args"]} for c in m.tool_calls]})
        elif isinstance(m, ToolMessage):
            steps.append({"kind": "observation", "tool": m.name, "text": str(m.content)[:2000],
                          **({"error": True} if m.status == "error" else {})})
    return steps


def make_agent_node(rt: MethodRuntime) -> Callable:
    """Run the ReAct agent on the question; record its calls; read its answer."""

    async def agent(state: ReactState, config: RunnableConfig) -> dict[str, Any]:
        from langgraph.errors import GraphRecursionError

        question = check_question(state.get("question"))
        params = rt.params(config)
        rec = Recorded()
        model = await rt.amodel(P.AGENT.role)
        tools = source_tools(rt, params.top_k, rec)
        base = {"question": question, "unavailable_sources": dict(rt.sources().unavailable),
                "tools": [t.name for t in tools]}
        cap = rt.stage_cap(P.AGENT)
        capped = cap_output(model, cap)  # a capped copy of the model, or a binding carrying the cap
        if isinstance(capped, BaseChatModel):
            agent_model, cap_kwargs = capped, {}
        else:
            agent_model, cap_kwargs = model, dict(getattr(capped, "kwargs", {}) or {})
        problem = tool_calling_problem(agent_model, tools)
        if problem:
            return {"answer": "", "answers": [], "error": problem, "stopped": None, "llm_calls": [],
                    "trace": {"method": "react", **base, "steps": [], "evidence": []},
                    "retrieved_ids": [], "retrieved_titles": []}
        recorder = CallRecorder(role=P.AGENT.role, stage=P.AGENT.name, model=model_name(model), cap=cap)
        search_first = params.search_first == "on" or (params.search_first == "auto" and rt.model_facts(model)[1])
        base["search_first"] = search_first
        graph = create_agent(agent_model, tools, middleware=[
            StageCalls(cap_kwargs, cap, recorder, deadline_of(config), rt.request_bound(), question,
                       refresh_of(config), search_first=search_first),
            ModelCallLimitMiddleware(run_limit=params.max_steps, exit_behavior="end")], name="react_agent")
        run_config: RunnableConfig = {**stage_config(config, P.AGENT, recorder, cap),
                                      "recursion_limit": 4 * params.max_steps + 8}
        messages: list[BaseMessage] = P.AGENT.prompt.format_messages(question=question)
        stopped = error = None
        try:
            final = await call_model(graph, {"messages": messages}, run_config)  # sync in a sync run
            messages = list(final.get("messages") or messages)
        except GraphRecursionError:
            stopped = f"step limit reached (recursion limit of the agent loop, {params.max_steps} steps)"
        except Exception as exc:  # the model call failed (recorded), or a tool raised
            error = f"agent: {type(exc).__name__}: {exc}"[:500]
        model_replies = [m for m in messages if isinstance(m, AIMessage)]
        from_model = [m for m in model_replies if m.usage_metadata]  # not the limit middleware's own note
        wanted_more = bool(from_model and from_model[-1].tool_calls)
        if error is None and stopped is None and wanted_more and len(recorder.calls) >= params.max_steps:
            stopped = f"step limit reached ({params.max_steps} model calls) before the agent gave an answer"
        answer = ""
        if error is None and stopped is None:
            last = model_replies[-1] if model_replies else None
            last_call = recorder.calls[-1] if recorder.calls else recorder.refused("no model call was made")
            final_reply = Reply(AIMessage(content=message_text(last) if last is not None else ""), last_call,
                                over=last_call.reply_chars if last_call.capped else None)
            result = read_reply(P.AGENT, {"question": question}, final_reply, cap)  # the stage's parser, as every stage
            if result.ok:
                answer = result.value
            else:
                error = f"final answer: {result.problem}"
        elif stopped is not None:
            error = "no answer within the step limit"
        if error is None and tools and not rec.retriever_calls:
            # the README's promise: ReAct answers from what it searched, so a run that never
            # called a tool has no answer of the method's own (its reply stays in the trace)
            error = ("the agent never searched: the model answered without calling a search tool "
                     f"({', '.join(t.name for t in tools)})")
            answer = ""
        evidence = rec.evidence
        return {
            "answer": answer, "answers": [answer] if answer else [], "stopped": stopped, "error": error,
            "llm_calls": recorder.calls, "retriever_calls": rec.retriever_calls,
            "retrieved_ids": list(dict.fromkeys(e.id for e in evidence if e.id)),
            "retrieved_titles": list(dict.fromkeys(e.title for e in evidence if e.title)),
            "trace": {"method": "react", **base, "steps": message_steps(messages[1:]),
                      "retrievals": [{"source": c.source, "query": c.query, "hits": c.hits, "error": c.error}
                                     for c in rec.retriever_calls],
                      "evidence": hits(evidence)},
        }

    return agent
