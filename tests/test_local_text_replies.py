"""Where the engine serves a base model (the bundled Gemma-3-270M, no chat template) in completion
format, a stage whose reply ends at stop sequences (its demonstrations show text replies) is decoded
as that text reply, read by the stage's text parser, not under its JSON schema
(``nodes/runtime.text_reply``; measured by ``bench_local_prompting --part every``).
Mechanics only: which decoding a stage gets, and that the reply is the text continuation."""

from __future__ import annotations

import asyncio

from langchain_core.runnables import RunnableBinding

from atomgraph.local.chat import ChatLocalLlama, completion_prompted
from atomgraph.nodes.runtime import MethodRuntime, text_reply
from atomgraph.prompts.atomr.stages import CLOSED_BOOK_STAGE, DIRECT_RAG_STAGE
from atomgraph.prompts.kar3.stages import ANSWER_STAGE as KAR3_ANSWER
from atomgraph.settings import Settings


def test_completion_prompted_follows_the_prompt_format():
    base = ChatLocalLlama(max_tokens=8)
    assert completion_prompted(base) and completion_prompted(base.bind(stop=["\nQuestion:"]))
    assert not completion_prompted(ChatLocalLlama(prompt_format="chat"))
    assert not completion_prompted("local") and not completion_prompted(None)


def test_stages_with_stop_sequences_reply_in_text_to_a_base_model():
    settings = Settings(model="local")
    assert settings.structured_output and "structured_output" not in settings.model_fields_set  # derived
    base = ChatLocalLlama()
    assert text_reply(DIRECT_RAG_STAGE, base, settings)
    assert not text_reply(KAR3_ANSWER, base, settings)  # no stop sequences: its prompt asks for JSON
    assert not text_reply(DIRECT_RAG_STAGE, ChatLocalLlama(prompt_format="chat"), settings)
    explicit = Settings(model="local", structured_output=True)  # the user's choice is kept
    assert not text_reply(DIRECT_RAG_STAGE, base, explicit)


def test_the_runtime_sends_the_text_stage_with_its_stops_and_reads_the_text():
    model = ChatLocalLlama()
    settings = Settings(model="local", cache=False, stage_max_tokens={"closed_book": 48})
    rt = MethodRuntime.for_method("atomr", models=model, sources=[], settings=settings)
    runnable, applied = rt._runnable(CLOSED_BOOK_STAGE, "answerer", model, True, 48, None, None, False, "auto")
    assert applied is None and isinstance(runnable, RunnableBinding)
    assert runnable.kwargs["stop"] == list(CLOSED_BOOK_STAGE.stop) and "json_schema" not in runnable.kwargs
    kar3, _ = rt._runnable(KAR3_ANSWER, "answerer", model, True, 48, None, None, False, "auto")
    assert not isinstance(kar3, RunnableBinding) or "stop" not in kar3.kwargs  # structured (JSON schema)

    result = asyncio.run(rt.ask(CLOSED_BOOK_STAGE, {"question": "What is the capital of France?"}, None))
    assert result.call.error is None and result.text is not None
    assert result.message.response_metadata["prompt_format"] == "completion"
    assert not result.text.lstrip().startswith("{")  # the demonstrations' text format, no JSON grammar
    assert result.call.completion_tokens <= 48
    assert result.ok or result.call.parse_error  # a value, or why the text parser refused it: data either way


def test_json_strings_hold_no_raw_control_characters():
    """Under a JSON-schema grammar a string cannot hold a raw newline (llama-cpp-python's converter
    admits one; JSON does not): every reply decoded under it is JSON a reader accepts."""
    import json

    from atomgraph.local.engine import json_gbnf, load_engine

    schema = {"type": "object", "properties": {"thinking": {"type": "string"}, "idx": {"type": "integer"}},
              "required": ["thinking", "idx"]}
    gbnf = json_gbnf(schema)
    assert 'char ::= [^"\\\\\\x7F\\x00-\\x1F]' in gbnf
    load_engine().json_schema_grammar(schema)  # llama.cpp parses it
    reply = ChatLocalLlama(max_tokens=40).bind(json_schema=schema).invoke(
        "Write a poem of three lines about rivers, then a number.\nReply:")
    assert isinstance(json.loads(reply.content), dict)
