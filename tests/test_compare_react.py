"""ReAct on LangChain's agent constructor: scripted tool calls, recorded accounting, the
step bound, bad output, and models that cannot call tools."""

from __future__ import annotations

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from atomgraph.demo_pack import load_passages
from atomgraph.errors import SourceError
from atomgraph.graphs.registry import build_method
from atomgraph.settings import Settings
from atomgraph.state.run import OUTPUT_KEYS
from atomgraph.testing import ScriptedChatModel, tool_call
from atomgraph.tools.memory_source import InMemorySource

Q = "In which city did Werner Heisenberg's doctoral advisor die?"


@pytest.fixture(scope="module")
def wiki():
    return InMemorySource(load_passages(), name="wikipedia", description="Encyclopedia passages.")


class DownSource(InMemorySource):
    def search(self, query, k=3):
        raise SourceError("web is down")


def agent_reply(prompt: str):
    if "died in Munich" in prompt and "Sommerfeld" in prompt:
        return "Sommerfeld, Heisenberg's advisor, died in Munich.\nSo the answer is: Munich"
    return tool_call("search_wikipedia", query="Arnold Sommerfeld Heisenberg doctoral advisor died")


def react(model, sources, **context):
    graph = build_method("react", model=model, sources=sources, settings=Settings(cache=False))
    return graph.invoke({"question": Q}, context=context or None)


def test_react_searches_with_tools_and_answers(wiki):
    model = ScriptedChatModel(stages={"react": agent_reply})
    out = react(model, [wiki], top_k=2)
    assert set(out) == set(OUTPUT_KEYS) and out["trace"]["method"] == "react"
    assert out["answer"] == "Munich" and out["error"] is None and out["stopped"] is None
    assert [c["stage"] for c in out["llm_calls"]] == ["react", "react"]
    assert all(c["prompt_tokens"] > 0 and c["completion_tokens"] > 0 and c["max_tokens"] == 384 for c in out["llm_calls"])
    assert [(c["source"], c["query"], c["hits"]) for c in out["retriever_calls"]] == [
        ("wikipedia", "Arnold Sommerfeld Heisenberg doctoral advisor died", 2)]
    assert out["retrieved_ids"] and "Arnold Sommerfeld" in out["retrieved_titles"]
    calls = model.calls
    assert all(c["stage"] == "react" and c["tools"] == ["search_wikipedia"] and c["max_tokens"] == 384 for c in calls)
    kinds = [s["kind"] for s in out["trace"]["steps"]]
    assert kinds == ["thought", "observation", "thought"]
    assert out["trace"]["steps"][0]["tool_calls"][0]["tool"] == "search_wikipedia"
    assert out["trace"]["tools"] == ["search_wikipedia"]


def test_react_step_bound(wiki):
    model = ScriptedChatModel(stages={"react": lambda p: tool_call("search_wikipedia", query="more")})
    out = react(model, [wiki], max_steps=3)
    assert len(model.calls) == 3 and len(out["llm_calls"]) == 3 and len(out["retriever_calls"]) == 3
    assert "step limit reached (3 model calls)" in out["stopped"]
    assert out["answer"] == "" and out["error"] == "no answer within the step limit"


def test_react_bad_output_and_failures_are_data(wiki):
    out = react(ScriptedChatModel(stages={"react": ""}), [wiki])
    assert out["answer"] == "" and out["error"].startswith("final answer: unreadable model output")
    assert out["llm_calls"][-1]["parse_error"]

    out = react(ScriptedChatModel(stages={"react": RuntimeError("rate limited")}), [wiki])
    assert "rate limited" in out["error"] and out["llm_calls"][0]["error"] and out["answer"] == ""

    # an unknown tool name and a failing source come back to the agent as observations
    replies = iter([tool_call("search_nowhere", query="x"), tool_call("search_web", query="x"),
                    "So the answer is: Munich"])
    web = DownSource([("a", "b")], name="web")
    out = react(ScriptedChatModel(stages={"react": lambda p: next(replies)}), [wiki, web])
    assert out["answer"] == "Munich" and out["error"] is None
    obs = [s for s in out["trace"]["steps"] if s["kind"] == "observation"]
    assert "search_nowhere" in obs[0]["text"] and "web is down" in obs[1]["text"]
    assert out["retriever_calls"][0]["error"] and "web is down" in out["retriever_calls"][0]["error"]


class NoToolsModel(BaseChatModel):
    """A chat model without tool calling (BaseChatModel.bind_tools raises NotImplementedError)."""

    @property
    def _llm_type(self) -> str:
        return "no-tools"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="So the answer is: x"))])


def test_react_needs_a_tool_calling_model(wiki):
    out = react(NoToolsModel(), [wiki])
    assert out["answer"] == "" and "cannot call tools" in out["error"] and "NoToolsModel" in out["error"]
    assert out["llm_calls"] == []


async def test_react_async_and_an_unusable_source_asked_for():
    from atomgraph.errors import SourceUnavailable

    model = ScriptedChatModel(stages={"react": "I know this one.\nSo the answer is: Munich"})
    graph = build_method("react", model=model, sources=[InMemorySource([], name="wikipedia")],
                         settings=Settings(cache=False))
    with pytest.raises(SourceUnavailable, match="wikipedia: the collection is empty"):
        await graph.ainvoke({"question": Q})
    assert model.calls == []


def test_react_that_never_searched_says_so(wiki):
    model = ScriptedChatModel(stages={"react": "I think it is Munich.\nSo the answer is: Munich"})
    out = react(model, [wiki])
    assert out["answer"] == "" and out["retriever_calls"] == []
    assert out["error"].startswith("the agent never searched") and "search_wikipedia" in out["error"]
    assert out["trace"]["steps"][0]["text"].endswith("Munich")  # the reply stays in the trace


def test_react_search_first_makes_the_first_step_call_a_tool(wiki):
    # on: the first call asks for a tool call (tool_choice 'any'), the later ones choose freely
    model = ScriptedChatModel(stages={"react": agent_reply})
    out = react(model, [wiki], search_first="on")
    assert out["answer"] == "Munich" and out["trace"]["search_first"] is True
    assert [c.get("tool_choice") for c in model.calls] == ["any", None]
    # auto: a served (here scripted, not in-process) model is free from the first call; off: free
    for switch in ("auto", "off"):
        model = ScriptedChatModel(stages={"react": agent_reply})
        out = react(model, [wiki], search_first=switch)
        assert out["trace"]["search_first"] is False and all("tool_choice" not in c for c in model.calls)
