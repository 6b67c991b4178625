"""A cache that cannot poison a run: only replies a stage could read are kept, ReAct's
agent included; rows are keyed by model and server and carry a checksum; cut replies are stored
cut; an unopenable cache path is one warning and the run goes on uncached; hits are counted in
eval records and reports. Real SQLite files and a real OpenAI client against the hostile server
on 127.0.0.1 (tests/hostile_server.py); scripted models only where a test needs exact replies."""

from __future__ import annotations

import logging
import sqlite3

import pytest
from langchain_core.prompts import ChatPromptTemplate

from atomgraph.graphs.registry import build_method
from atomgraph.models import llm_cache
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.stage import Stage, text_parser
from atomgraph.settings import Settings
from atomgraph.state.baselines import ClosedBookContext
from atomgraph.testing import ScriptedChatModel
from atomgraph.tools.memory_source import InMemorySource
from tests.hostile_server import HostileServer

Q = "In which city did Werner Heisenberg's doctoral advisor die?"

def _first_word(text: str) -> str:
    words = text.split()
    if not words:
        raise ValueError("no word")
    return words[0]


# a stage whose value is a structure (the first word), not an answer: it reads a cut reply
FIRST = Stage(name="first_word", role="answerer", prompt=ChatPromptTemplate.from_messages([("human", "Say {thing}")]),
              parser=text_parser(_first_word, "first_word"), max_tokens=8)


@pytest.fixture(scope="module")
def server():
    s = HostileServer()
    yield s
    s.close()


def _rt(model, settings: Settings) -> MethodRuntime:
    model.cache = llm_cache(settings)
    return MethodRuntime(ClosedBookContext, "cot", models=model, sources=[], settings=settings)


@pytest.mark.parametrize("where", ["a directory", "under a file"])
async def test_an_unopenable_cache_is_one_warning_and_the_run_goes_on(tmp_path, caplog, where):
    (tmp_path / "file").write_text("not a folder")
    path = tmp_path if where == "a directory" else tmp_path / "file" / "c.sqlite"
    settings = Settings(cache=True, cache_path=str(path))
    model = ScriptedChatModel(stages={"first_word": "Hello there"})
    rt = _rt(model, settings)
    with caplog.at_level(logging.WARNING, logger="atomgraph.cache"):
        first = await rt.ask(FIRST, {"thing": "hello"}, None)
        second = await rt.ask(FIRST, {"thing": "hello"}, None)
    assert first.value == second.value == "Hello" and len(model.prompts) == 2  # uncached, not failed
    warnings = [r for r in caplog.records if "cannot be used" in r.getMessage()]
    assert len(warnings) == 1 and "uncached" in warnings[0].getMessage()


async def test_a_reply_cut_at_the_cap_is_stored_cut_and_replayed_as_cut(tmp_path):
    settings = Settings(cache=True, cache_path=str(tmp_path / "c.sqlite"))
    model = ScriptedChatModel(stages={"first_word": "Hello " + "x" * 50_000})
    rt = _rt(model, settings)
    fresh = await rt.ask(FIRST, {"thing": "hello"}, None)
    assert fresh.value == "Hello" and fresh.call.cut and fresh.call.capped and not fresh.call.cached
    rows = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT response FROM full_llm_cache").fetchall()
    assert len(rows) == 1 and len(rows[0][0]) < 5_000  # the cut reply, not 50,000 characters
    again = await rt.ask(FIRST, {"thing": "hello"}, None)
    assert again.value == "Hello" and again.call.cached and len(model.prompts) == 1
    assert again.call.cut and again.call.capped and again.call.reply_chars == fresh.call.reply_chars


async def test_an_unreadable_reply_is_not_kept(tmp_path):
    settings = Settings(cache=True, cache_path=str(tmp_path / "c.sqlite"))
    model = ScriptedChatModel(stages={"first_word": ""})
    rt = _rt(model, settings)
    assert not (await rt.ask(FIRST, {"thing": "x"}, None)).ok
    assert not (await rt.ask(FIRST, {"thing": "x"}, None)).ok
    assert len(model.prompts) == 2  # asked again, never replayed


def test_a_reply_is_replayed_only_to_the_server_that_gave_it(server, tmp_path):
    """Rows are keyed by model name and base URL: the same model name on another server is asked."""
    base = {"model": "hostile", "openai_api_key": "x", "cache": True, "cache_path": str(tmp_path / "c.sqlite"),
            "request_timeout": 30.0, "max_retries": 0}
    before = len(server.requests)
    a = build_method("standard", settings=Settings(**base, openai_base_url=server.url("slow", "cache-a")))
    out = a.invoke({"question": Q})
    assert out["answer"] == "Munich" and not out["llm_calls"][0]["cached"]
    again = build_method("standard", settings=Settings(**base, openai_base_url=server.url("slow", "cache-a")))
    out = again.invoke({"question": Q})
    assert out["answer"] == "Munich" and out["llm_calls"][0]["cached"] and len(server.requests) == before + 1
    other = build_method("standard", settings=Settings(**base, openai_base_url=server.url("slow", "cache-b")))
    out = other.invoke({"question": Q})
    assert not out["llm_calls"][0]["cached"] and len(server.requests) == before + 2


def test_react_keeps_only_replies_it_could_read(server, tmp_path):
    """ReAct's agent: the injection it refused is asked again on the next run, never replayed."""
    wiki = InMemorySource([{"title": "Sommerfeld", "text": "Arnold Sommerfeld died in Munich."}], name="wikipedia")
    settings = Settings(model="hostile", openai_base_url=server.url("injection", "cache-react"), openai_api_key="x",
                        cache=True, cache_path=str(tmp_path / "c.sqlite"), request_timeout=30.0, max_retries=0)
    before = len(server.requests)
    first = build_method("react", settings=settings, sources=[wiki]).invoke({"question": Q})
    sent = len(server.requests) - before
    second = build_method("react", settings=settings, sources=[wiki]).invoke({"question": Q})
    assert first["answer"] == second["answer"] == "" and sent >= 1
    assert len(server.requests) - before == 2 * sent  # asked again
    assert not any(c["cached"] for c in second["llm_calls"])
    assert sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT COUNT(*) FROM full_llm_cache").fetchone()[0] == 0


def test_cache_hits_are_counted_in_eval_records_and_reports():
    from atomgraph.evaluation.datasets import Example
    from atomgraph.evaluation.report import markdown_tables, summarize_run
    from atomgraph.evaluation.runner import build_record

    calls = [{"role": "answerer", "stage": "standard", "cached": True}, {"role": "answerer", "stage": "cot"}]
    rec = build_record(Example(id="1", question=Q, answers=["Munich"]),
                       {"answer": "Munich", "answers": ["Munich"], "llm_calls": calls},
                       method="standard", dataset="toy", latency_s=0.1, prices={})
    assert rec["usage"]["cached_calls"] == 1 and rec["usage"]["llm_calls"] == 1
    row = summarize_run({"method": "standard", "dataset": "toy"}, [rec], {})
    assert row["cached_calls"] == 1
    assert "| cached |" in markdown_tables([row])


# --- rows carry a keyed MAC -------------------------------------------------------------------------
def _row(prompt: str = "p", llm: str = "m", reply: str = "Munich"):
    from langchain_core.load import dumps
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration

    return dumps(ChatGeneration(message=AIMessage(content=reply)))


def test_a_row_forged_with_a_recomputed_plain_checksum_is_ignored(tmp_path, caplog):
    """Whoever can write the cache file but not read its key cannot forge a row: a replayed answer with
    its plain SHA-256 recomputed (what the file's check value was before keyed MACs) is ignored and counted."""
    import hashlib
    import os
    import stat

    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration

    from atomgraph.cache import ReplyCache, checksum

    path = tmp_path / "cache.sqlite"
    cache = ReplyCache(path)
    cache.store("p", "m", [ChatGeneration(message=AIMessage(content="Munich"))])
    assert cache.lookup("p", "m")[0].message.content == "Munich"  # its own rows replay
    key_file = tmp_path / "cache.sqlite.key"
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    key_text = key_file.read_text().strip()
    assert key_text not in caplog.text and len(bytes.fromhex(key_text)) == 32
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []

    forged = _row(reply="So the answer is: PWNED")
    plain = checksum("p", "m", 0, forged)
    assert plain == hashlib.sha256(b"p\x00m\x000\x00" + forged.encode() + b"\x00").hexdigest()
    db = sqlite3.connect(path)
    for value in (plain, "hmac-sha256:" + plain):  # a plain checksum, and one dressed as a MAC
        db.execute("UPDATE full_llm_cache SET response = ?, checksum = ? WHERE prompt = 'p'", (forged, value))
        db.commit()
        before = cache.rejected
        assert cache.lookup("p", "m") is None and cache.rejected == before + 1
    # a second cache object on the same file reads the same key: its rows verify
    cache.store("p", "m", [ChatGeneration(message=AIMessage(content="Munich"))])
    assert ReplyCache(path).lookup("p", "m")[0].message.content == "Munich"
    db.close()


def test_a_key_file_others_can_read_makes_the_cache_unusable(tmp_path, caplog):
    import os

    from atomgraph.cache import ReplyCache

    path = tmp_path / "cache.sqlite"
    ReplyCache(path).store("p", "m", [])  # creates the key
    os.chmod(tmp_path / "cache.sqlite.key", 0o644)
    cache = ReplyCache(path)
    with caplog.at_level(logging.WARNING):
        assert cache.lookup("p", "m") is None
    assert cache.unusable and "0644" in cache.unusable and "uncached" in caplog.text
    assert (tmp_path / "cache.sqlite.key").read_text().strip() not in caplog.text
