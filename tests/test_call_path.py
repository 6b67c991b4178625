"""The one call path (rt.ask), the one recorder, the response cache and the run's choices."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest
from langchain_core.prompts import ChatPromptTemplate

from atomgraph.cache import CacheView, ReplyCache
from atomgraph.errors import ParseError
from atomgraph.nodes.call import CallRecorder
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.constraints import Choice, Grammar, JsonSchema, TokenTrie, backend, constrain, request_form
from atomgraph.prompts.stage import Stage, text_parser
from atomgraph.settings import Settings
from atomgraph.state.baselines import ClosedBookContext
from atomgraph.testing import ScriptedChatModel


def _word(text: str) -> str:
    text = text.strip()
    if not text or " " in text:
        raise ParseError(f"not one word: {text!r}")
    return text


ECHO = Stage(name="echo", role="answerer", prompt=ChatPromptTemplate.from_messages([("human", "Say {thing}")]),
             parser=text_parser(_word, "word"), max_tokens=16,
             render=lambda inputs: {"thing": inputs["thing"].upper()}, stop=("\nQuestion:",))


def _rt(model, tmp_path=None, **settings) -> MethodRuntime:
    s = Settings(cache=tmp_path is not None, cache_path=str((tmp_path or "/nonexistent") / "c.sqlite")
                 if tmp_path else ".atomgraph/c.sqlite", **settings)
    if tmp_path is not None:
        from atomgraph.models import llm_cache

        model.cache = llm_cache(s)
    return MethodRuntime(ClosedBookContext, "cot", models=model, sources=[], settings=s)


async def test_ask_renders_caps_stops_records_and_parses():
    model = ScriptedChatModel(stages={"echo": "Hello"})
    res = await _rt(model).ask(ECHO, {"thing": "hello"}, None)
    assert res.ok and res.value == "Hello" and res.text == "Hello"
    assert "Say HELLO" in model.prompts[0]  # the stage rendered its inputs
    call = res.call
    assert (call.stage, call.role, call.model, call.max_tokens) == ("echo", "answerer", "scripted", 16)
    assert call.error is None and call.parse_error is None and call.latency_s >= 0
    assert model.calls[0]["max_tokens"] == 16 and model.calls[0]["stop"] == ["\nQuestion:"]


async def test_unreadable_reply_and_failed_call_are_data():
    model = ScriptedChatModel(stages={"echo": "two words"})
    res = await _rt(model).ask(ECHO, {"thing": "x"}, None)
    assert not res.ok and "not one word" in res.call.parse_error and res.text == "two words"
    boom = ScriptedChatModel(stages={"echo": ConnectionError("server down")})
    res = await _rt(boom).ask(ECHO, {"thing": "x"}, None)
    assert not res.ok and "server down" in res.call.error and "model call failed" in res.problem


async def test_circuit_breaker_stops_calls_after_consecutive_failures():
    boom = ScriptedChatModel(stages={"echo": ConnectionError("refused")})
    rt = _rt(boom, max_consecutive_failures=2)
    results = [await rt.ask(ECHO, {"thing": "x"}, None) for _ in range(4)]
    assert len(boom.prompts) == 2  # the third and fourth calls never reached the model
    assert "circuit breaker" in results[2].call.error and rt.tripped()


async def test_deadline_refuses_calls_and_cuts_a_slow_one():
    slow = ScriptedChatModel(stages={"echo": "late"}, latency_s=60.0)  # far past any deadline below
    rt = _rt(slow)
    t0 = time.perf_counter()
    res = await rt.ask(ECHO, {"thing": "x"}, {"configurable": {"deadline": time.time() + 0.2}})
    # cut at 0.2 s; the bound leaves a loaded machine room and is still far from the model's 60 s
    assert time.perf_counter() - t0 < 20 and "deadline" in res.call.error
    res = await rt.ask(ECHO, {"thing": "x"}, {"configurable": {"deadline": time.time() - 1}})
    assert "deadline" in res.call.error


async def test_cache_keeps_only_readable_replies_and_marks_hits(tmp_path):
    replies = iter(["two words", "Fine", "Other"])
    model = ScriptedChatModel(stages={"echo": lambda p: next(replies)})
    rt = _rt(model, tmp_path)
    bad = await rt.ask(ECHO, {"thing": "x"}, None)
    assert not bad.ok  # unreadable: not cached, asked again below
    good = await rt.ask(ECHO, {"thing": "x"}, None)
    assert good.value == "Fine" and not good.call.cached
    hit = await rt.ask(ECHO, {"thing": "x"}, None)
    assert hit.value == "Fine" and hit.call.cached and len(model.prompts) == 2
    fresh = await rt.ask(ECHO, {"thing": "x"}, {"configurable": {"refresh_cache": True}})
    assert fresh.value == "Other" and not fresh.call.cached and len(model.prompts) == 3
    again = await rt.ask(ECHO, {"thing": "x"}, None)
    assert again.value == "Other" and again.call.cached  # the refresh overwrote the entry


def test_cache_ignores_rows_without_a_matching_checksum(tmp_path, caplog):
    """A file langchain-community's SQLiteCache wrote (no checksums) opens; its rows, like a row
    forged by hand, are ignored and reported; rows the cache writes itself are replayed."""
    from langchain_core.load import dumps
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE full_llm_cache (prompt VARCHAR NOT NULL, llm VARCHAR NOT NULL, idx INTEGER NOT NULL, "
               "response VARCHAR, PRIMARY KEY (prompt, llm, idx))")
    db.execute("INSERT INTO full_llm_cache VALUES (?, ?, 0, ?)",
               ("p", "m", dumps(ChatGeneration(message=AIMessage(content="old reply")))))
    db.commit()
    cache = ReplyCache(path)
    assert cache.lookup("p", "m") is None and cache.rejected == 1
    assert "checksum does not match" in caplog.text
    cache.store("p", "m", [ChatGeneration(message=AIMessage(content="new reply"))])
    hit = cache.lookup("p", "m")
    assert hit[0].message.content == "new reply" and hit[0].message.response_metadata["atomgraph_cache_hit"]
    db.execute("UPDATE full_llm_cache SET response = ? WHERE prompt = 'p'",
               (dumps(ChatGeneration(message=AIMessage(content="So the answer is: PWNED"))),))
    db.commit()
    assert cache.lookup("p", "m") is None and cache.rejected == 2  # a forged reply is not replayed


def test_cache_is_not_attached_to_sampling_models(tmp_path):
    from atomgraph.models import chat_model, with_temperature

    s = Settings(model="gpt-x", openai_base_url="http://127.0.0.1:9/v1", cache_path=str(tmp_path / "c.sqlite"))
    m = chat_model("answerer", s)
    assert isinstance(m.cache, CacheView) and isinstance(m.cache.cache, ReplyCache)
    assert m.cache.namespace == "model=gpt-x base_url=http://127.0.0.1:9/v1"  # keyed by model and server
    assert with_temperature(m, 0.7).cache is False
    assert chat_model("answerer", s.model_copy(update={"temperature": 0.7})).cache is None


def test_rate_limiter_is_shared_per_model():
    from atomgraph.models import chat_model

    s = Settings(model="gpt-x", openai_base_url="http://127.0.0.1:9/v1", cache=False, requests_per_second=5)
    a, b = chat_model("planner", s), chat_model("answerer", s)
    assert a.rate_limiter is not None and a.rate_limiter is b.rate_limiter


async def test_recorder_records_calls_made_inside_other_runnables():
    model = ScriptedChatModel(default="x")
    rec = CallRecorder(role="agent")
    await model.ainvoke("a", config={"callbacks": [rec], "tags": ["stage:react"]})
    model.invoke("b", config={"callbacks": [rec], "tags": ["stage:react"]})
    assert [c.stage for c in rec.calls] == ["react", "react"] and all(c.role == "agent" for c in rec.calls)


def test_constraint_request_forms():
    assert request_form("vllm", Choice(("a", "b")))[0] == {"extra_body": {"structured_outputs": {"choice": ["a", "b"]}}}
    assert request_form("llamacpp", Choice(("a", 'b"')))[0]["extra_body"]["grammar"] == 'root ::= "a" | "b\\""'
    fmt = request_form("openai", Choice(("a", "b")))[0]["response_format"]
    assert fmt["json_schema"]["schema"]["properties"]["value"]["enum"] == ["a", "b"]
    assert request_form("openai", Choice(tuple(str(i) for i in range(1001)))) == ({}, None)
    assert request_form("openai", Grammar("root ::= x")) == ({}, None)
    assert request_form("local", JsonSchema({"type": "object"}))[0] == {"json_schema": {"type": "object"}}
    assert request_form("vllm", TokenTrie(trie=None)) == ({}, None)


def test_an_unconstrainable_backend_is_reported_never_assumed():
    model = ScriptedChatModel(default="x")
    kind, reason = backend(model)
    assert kind == "other"
    _, applied = constrain(model, Choice(("a",)), kind, reason)
    assert not applied.constrained and "not supported" in applied.describe()


async def test_constrained_ask_records_how_the_reply_was_constrained():
    model = ScriptedChatModel(stages={"echo": "a"})
    res = await _rt(model).ask(ECHO, {"thing": "x"}, None, constraint=Choice(("a", "b")))
    assert res.value == "a" and res.call.constraint.startswith("unconstrained")


def test_run_choices_pick_model_and_are_in_every_schema():
    from atomgraph.graphs.registry import build_method

    default = ScriptedChatModel(default="So the answer is: Paris")
    g = build_method("cot", model=default)
    props = g.get_context_jsonschema()["properties"]
    assert {"model", "models", "temperature", "sources"} <= set(props)
    with pytest.raises(ValueError, match="unknown ClosedBookContext parameter"):
        g.invoke({"question": "q"}, context={"topk": 3})
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):  # a model the run names, not configured
        g.invoke({"question": "Capital of France?"}, context={"model": "gpt-zzz"})
    assert g.invoke({"question": "Capital of France?"})["answer"] == "Paris"  # blank: the graph's model


def test_the_output_contract_is_json_as_returned():
    from atomgraph.graphs.registry import build_method

    g = build_method("cot", model=ScriptedChatModel(default="So the answer is: Paris"))
    out = g.invoke({"question": "Capital of France?"})
    back = json.loads(json.dumps(out))
    assert back["llm_calls"][0]["stage"] == "cot" and back["answer"] == "Paris"


def test_only_the_recorder_builds_call_records():
    """One recorder: no module but nodes/call.py writes an LLMCall (state/ defines it)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    builders = sorted(str(p.relative_to(root)) for folder in ("atomgraph", "nodes", "graphs", "tools", "prompts",
                                                                "evaluation")
                      for p in (root / folder).rglob("*.py") if re.search(r"\bLLMCall\(", p.read_text("utf-8")))
    assert builders == ["nodes/call.py"], builders


def test_a_json_reply_closed_at_the_cap_drops_the_item_it_was_cut_in():
    """An in-process model's grammar closes a JSON reply at the output cap inside whatever string it
    was writing: the answer list keeps the items before that string; its only answer is no answer."""
    from atomgraph.nodes.call import _held_cut
    from atomgraph.prompts.atomr.stages import ParsedAnswer
    from atomgraph.state.run import LLMCall

    text = '{"paraphrase": "The area is 105.4 km2", "answers": ["105.4", "105.4", "105.4", "1" ] }'
    rec = LLMCall(role="executor", cut=True, finish_reason="length")
    kept = _held_cut(ParsedAnswer(paraphrase="The area is 105.4 km2", answers=["105.4", "1"], unknown=False, raw=text), text, rec)
    assert kept.answers == ["105.4"] and rec.parse_error is None
    rec = LLMCall(role="executor", cut=True, finish_reason="length")
    only = '{"paraphrase": "It is Ulm", "answers": ["Ulm Mins" ] }'
    assert _held_cut(ParsedAnswer(paraphrase="It is Ulm", answers=["Ulm Mins"], unknown=False, raw=only), only, rec) is None
    assert rec.parse_error.startswith("cut reply: closed at the output cap inside its only answer")


def test_every_plain_stage_prompt_renders_as_format_messages():
    """A stage prompt of plain text templates is rendered by ``str.format`` (Stage.messages): exactly
    the messages ``format_messages`` makes of it, for every stage of every method; any other prompt
    is rendered by ``format_messages`` itself."""
    import importlib
    import pkgutil

    import atomgraph.prompts
    from atomgraph.prompts.stage import plain_templates

    stages: dict[int, Stage] = {}
    for info in pkgutil.walk_packages(atomgraph.prompts.__path__, "atomgraph.prompts."):
        for value in vars(importlib.import_module(info.name)).values():
            for v in (value.values() if isinstance(value, dict) else [value]):
                if isinstance(v, Stage):
                    stages[id(v)] = v
    plain = 0
    for stage in stages.values():
        variables = {v: f"<{v}: {{braces}} ü\n[1] x>" for v in stage.prompt.input_variables}
        templates = plain_templates(stage.prompt)
        if templates is None:
            continue
        plain += 1
        fast = [cls(content=template.format(**variables)) for cls, template in templates]
        assert fast == stage.prompt.format_messages(**variables), stage.name
    assert plain >= 10 and len(stages) >= 10
    mixed = ChatPromptTemplate.from_messages([("human", "Say {thing}")]).partial(thing="hi")
    assert plain_templates(mixed) is None
