"""ReAct with the knowledge sources as tools, on LangChain's own agent loop.

Each run builds a ``langchain.agents.create_agent`` agent (cheap: it is a small compiled
graph) with this run's parameters:

- one tool per available source, shaped like ``KnowledgeSource.as_tool()`` (``search_<name>``,
  the source's description, one ``query`` argument) but querying through
  :meth:`MethodRuntime.retrieve`, so every call and the evidence ids are recorded;
- the ``react`` stage's output cap on every model call (a capped model copy, or the cap
  passed through the request's model settings);
- :class:`StageRecorder` middleware: every model call is recorded as an :class:`~atomgraph.state.usage.LLMCall` (tokens, latency, errors);
- ``ModelCallLimitMiddleware(run_limit=max_steps)``: the step bound (plus a recursion limit
  as a second fence).

The agent's last message is read with the ``react`` stage's parser.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool

from atomgraph.models import cap_output, message_text, model_name
from atomgraph.state.output import check_question
from atomgraph.nodes.compare.common import hits
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.compare import react as P
from atomgraph.state.evidence import Evidence, render_evidence
from atomgraph.state.usage import LLMCall, RetrieverCall

try:  # langchain 1.x
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware, ModelCallLimitMiddleware
except ImportError:  # pragma: no cover - langchain>=1 is a dependency
    create_agent = None  # type: ignore[assignment]
    AgentMiddleware = object  # type: ignore[assignment,misc]
    ModelCallLimitMiddleware = None  # type: ignore[assignment]


@dataclass
class Recorded:
    """What one agent run did, collected as it goes (kept even when the run fails midway)."""

    llm_calls: list[LLMCall] = field(default_factory=list)
    retriever_calls: list[RetrieverCall] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    wanted_more: bool = False  # the last model reply asked for tools


class StageRecorder(AgentMiddleware):
    """Agent middleware: run each model call under the stage's output cap and record it."""

    def __init__(self, stage_name: str, role: str, model_label: str, cap: int, cap_kwargs: dict, out: Recorded):
        super().__init__()
        self.stage_name, self.role, self.model_label = stage_name, role, model_label
        self.cap, self.cap_kwargs, self.out = cap, cap_kwargs, out

    @property
    def name(self) -> str:
        return "StageRecorder"

    def _record(self, t0: float, response: Any = None, error: BaseException | None = None) -> None:
        rec = LLMCall(role=self.role, stage=self.stage_name, model=self.model_label, max_tokens=self.cap,
                      latency_s=time.perf_counter() - t0)
        if error is not None:
            rec.error = f"{type(error).__name__}: {error}"[:500]
        else:
            msg = next((m for m in reversed(getattr(response, "result", []) or []) if isinstance(m, AIMessage)), None)
            usage = getattr(msg, "usage_metadata", None) or {}
            rec.prompt_tokens = int(usage.get("input_tokens", 0) or 0)
            rec.completion_tokens = int(usage.get("output_tokens", 0) or 0)
            self.out.wanted_more = bool(msg is not None and msg.tool_calls)
        self.out.llm_calls.append(rec)

    def _capped(self, request):
        return request.override(model_settings={**request.model_settings, **self.cap_kwargs})

    def wrap_model_call(self, request, handler):
        t0 = time.perf_counter()
        try:
            response = handler(self._capped(request))
        except Exception as exc:
            self._record(t0, error=exc)
            raise
        self._record(t0, response)
        return response

    async def awrap_model_call(self, request, handler: Callable[[Any], Awaitable[Any]]):
        t0 = time.perf_counter()
        try:
            response = await handler(self._capped(request))
        except Exception as exc:
            self._record(t0, error=exc)
            raise
        self._record(t0, response)
        return response


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

        tools.append(StructuredTool.from_function(coroutine=search, name=shape.name, description=shape.description,
                                                  args_schema=shape.args_schema))
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

    async def agent(state: dict, config: RunnableConfig) -> dict[str, Any]:
        from langgraph.errors import GraphRecursionError

        question = check_question(state.get("question"))
        params = rt.params(config)
        rec = Recorded()
        model = rt.model(P.AGENT.role)
        tools = source_tools(rt, params.top_k, rec)
        base = {"question": question, "unavailable_sources": dict(rt.sources().unavailable),
                "tools": [t.name for t in tools]}
        cap = rt.settings().stage_cap(P.AGENT.name, P.AGENT.max_tokens)
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
        recorder = StageRecorder(P.AGENT.name, P.AGENT.role, model_name(model), cap, cap_kwargs, rec)
        graph = create_agent(agent_model, tools, middleware=[recorder, ModelCallLimitMiddleware(
            run_limit=params.max_steps, exit_behavior="end")], name="react_agent")
        run_config: RunnableConfig = {
            "callbacks": config.get("callbacks"), "metadata": dict(config.get("metadata") or {}),
            "tags": [*(config.get("tags") or []), *P.AGENT.tags],
            "recursion_limit": 4 * params.max_steps + 8,
        }
        messages: list[BaseMessage] = P.AGENT.prompt.format_messages(question=question)
        stopped = error = None
        try:
            final = await graph.ainvoke({"messages": messages}, config=run_config)
            messages = list(final.get("messages") or messages)
        except GraphRecursionError:
            stopped = f"step limit reached (recursion limit of the agent loop, {params.max_steps} steps)"
        except Exception as exc:  # the model call failed (recorded), or a tool raised
            error = f"agent: {type(exc).__name__}: {exc}"[:500]
        model_replies = [m for m in messages if isinstance(m, AIMessage)]
        if error is None and stopped is None and rec.wanted_more and len(rec.llm_calls) >= params.max_steps:
            stopped = f"step limit reached ({params.max_steps} model calls) before the agent gave an answer"
        answer = ""
        if error is None and stopped is None:
            last = model_replies[-1] if model_replies else None
            text = message_text(last) if last is not None else ""
            try:
                answer = P.AGENT.parser.invoke(AIMessage(content=text))
            except Exception as exc:  # OutputParserException: unreadable final message
                reason = str(exc).split("\nFor troubleshooting")[0]
                if rec.llm_calls:
                    rec.llm_calls[-1].parse_error = reason
                error = f"final answer: unreadable model output ({reason})"
        elif stopped is not None:
            error = "no answer within the step limit"
        evidence = rec.evidence
        return {
            "answer": answer, "answers": [answer] if answer else [], "stopped": stopped, "error": error,
            "llm_calls": rec.llm_calls, "retriever_calls": rec.retriever_calls,
            "retrieved_ids": list(dict.fromkeys(e.id for e in evidence if e.id)),
            "retrieved_titles": list(dict.fromkeys(e.title for e in evidence if e.title)),
            "trace": {"method": "react", **base, "steps": message_steps(messages[1:]),
                      "retrievals": [{"source": c.source, "query": c.query, "hits": c.hits, "error": c.error}
                                     for c in rec.retriever_calls],
                      "evidence": hits(evidence)},
        }

    return agent
