"""Every method through ``ChatOpenAI`` against a real OpenAI-compatible server: llama-cpp-python's own
(``python -m llama_cpp.server``, its ``server`` extra) on 127.0.0.1, serving the bundled Gemma-3-270M,
started once for the module and stopped by it (``make test-qwen``: the instruction-tuned Qwen2.5-Coder-1.5B-Instruct
with its own chat template, ``LLAMA_SERVER_TEST_MODEL=qwen``).

Mechanics, not accuracy (a 270M base model follows no prompt): a run completes with the method
contract, every call record is well-formed and was answered by the server, an answer meets the
answer contract, a failure is recorded as data. The server is recognised by the probe and gets its
own structured-output forms (GBNF ``grammar``; ``response_format`` ``json_object`` with a ``schema``):
a request in another dialect would come back as an error in the records. Every stage's output cap is
small (``CAP`` tokens) to keep the module cheap."""

from __future__ import annotations

import os
import time

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("fastapi", reason="llama-cpp-python's server extra (pip install 'atomgraph[server]')")
pytest.importorskip("starlette_context", reason="llama-cpp-python's server extra (pip install 'atomgraph[server]')")

from atomgraph.backends import backend, probe_server  # noqa: E402
from atomgraph.demo_pack import load_passages  # noqa: E402
from atomgraph.graphs.registry import build_method, method_names  # noqa: E402
from atomgraph.local.server import llama_cpp_server  # noqa: E402
from atomgraph.prompts.stage import check_answer  # noqa: E402
from atomgraph.settings import Settings  # noqa: E402
from atomgraph.state.run import OUTPUT_KEYS  # noqa: E402
from atomgraph.tools.memory_source import InMemorySource  # noqa: E402
from tests.openai_compat_server import all_stages  # noqa: E402

pytestmark = pytest.mark.slow  # the module: about 100 s of one CPU (the server's generation and the runs)

# the served model: the bundled Gemma-3-270M; `make test-qwen` serves the instruction-tuned Qwen instead
if os.environ.get("LLAMA_SERVER_TEST_MODEL") == "qwen":
    from tests.qwen_model import qwen_file_or_skip

    MODEL_FILE, ALIAS, CHAT_FORMAT, TIMEOUT = qwen_file_or_skip("the served-model suite"), "qwen", None, 600.0
else:
    MODEL_FILE, ALIAS, CHAT_FORMAT, TIMEOUT = None, "gemma-270m", "gemma", 120.0
QUESTION = "In which city did Werner Heisenberg's doctoral advisor die?"
CAP = 12  # every stage's output cap: mechanics, not answers
START_S = 180.0  # a loaded machine loads the model slowly


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """``python -m llama_cpp.server`` with the served model on 127.0.0.1 (:mod:`atomgraph.local.server`)."""
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    probe_server.cache_clear()
    with llama_cpp_server(MODEL_FILE, alias=ALIAS, chat_format=CHAT_FORMAT, start_s=START_S, log=log) as url:
        yield url
    probe_server.cache_clear()


def settings_for(url: str, **kw) -> Settings:
    """The project's normal OpenAI path (``ChatOpenAI``, base URL to the server), every stage capped."""
    caps = {name: CAP for name in all_stages()}
    return Settings(model=ALIAS, openai_base_url=url, openai_api_key="not-needed", cache=False, max_retries=0,
                    request_timeout=TIMEOUT, stage_max_tokens=caps, **kw)


@pytest.fixture(scope="module")
def wiki():
    return InMemorySource(load_passages(), name="wikipedia", description="Encyclopedia passages.")


@pytest.fixture(scope="module")
def arm_index():
    from atomgraph.tools.arm_index import ArmIndex
    from tests.arm_graph_fixtures import OBJECTS

    return ArmIndex.build(OBJECTS, use_cache=False)


@pytest.fixture(scope="module")
def kar3_atoms(tmp_path_factory):
    from tests.kar3_fixtures import build_demo_index, demo_source

    folder = tmp_path_factory.mktemp("llama_kar3")
    build_demo_index(folder, limit=2)  # a real atom index (scripted atomizer): KAR³ needs one to run
    return folder, demo_source(folder)


def run_method(method: str, url: str, request, wiki, **settings):
    extra: dict = {}
    if method == "kar3":
        folder, atoms = request.getfixturevalue("kar3_atoms")
        sources, extra = [atoms, wiki], {"chroma_path": str(folder)}
    elif method == "arm":
        sources = request.getfixturevalue("arm_index")
    else:
        sources = [wiki]
    graph = build_method(method, settings=settings_for(url, **extra, **settings), sources=sources)
    return graph


def check_records(out: dict, method: str) -> list[dict]:
    """The method contract and well-formed records; every call reached the server and was answered."""
    assert set(OUTPUT_KEYS) <= set(out), (method, sorted(out))
    calls = [c if isinstance(c, dict) else c.model_dump() for c in out["llm_calls"]]
    assert calls, method
    for c in calls:
        assert c["model"] == ALIAS and c["stage"] and c["max_tokens"], (method, c)
        assert not c["error"], (method, c["stage"], c["error"])  # the server took every request in its dialect
        assert c["completion_tokens"] <= (c["max_tokens"] or 0) + 1 and c["latency_s"] > 0, (method, c)
        assert c["prompt_tokens"] > 0, (method, c)  # the server's usage reached the record
    answer = out["answer"]
    if answer:
        assert check_answer(answer) == answer.strip(), (method, answer)
    else:  # no answer: the run says why, as data
        assert out["error"] or (out.get("trace") or {}).get("problems"), (method, out)
    return calls


def test_the_probe_recognises_llama_cpp_pythons_server(llama_server):
    from langchain_openai import ChatOpenAI

    kind, why = backend(ChatOpenAI(model=ALIAS, base_url=llama_server, api_key="x"))
    assert (kind, why) == ("llamacpp", f"llama.cpp at {llama_server}: GBNF grammar")


# each method's loops bounded low (mechanics, not answers); ATOMR's plan under its grammar (the switch)
CONTEXT = {"ircot": {"max_steps": 2}, "self_ask": {"max_follow_ups": 1}, "react": {"max_steps": 2},
           "iter_retgen": {"rounds": 1}, "decomposed_rag": {"max_sub_questions": 1}, "arm": {"drafts": 1, "k": 2},
           "atomr": {"plan_constraint": "on"}, "kar3": {"max_chunks": 1}}


@pytest.mark.parametrize("method", sorted(method_names()))
def test_every_method_runs_through_the_served_model(llama_server, request, wiki, method):
    out = run_method(method, llama_server, request, wiki).invoke({"question": QUESTION}, context=CONTEXT.get(method))
    calls = check_records(out, method)
    constrained = [c["constraint"] for c in calls if c["constraint"]]
    if method == "atomr":  # the plan goes under the plan grammar, in the server's own form
        assert [c for c in calls if c["stage"] == "plan"][0]["constraint"] == "llama.cpp grammar"
    if method == "arm":
        assert out["trace"]["decoding"]["backend"] == "llamacpp"
        assert out["trace"]["decoding"]["grammar"]["form"] == "corpus"
        assert any(c == "llama.cpp response_format json_object schema" for c in constrained), constrained
    assert not [c for c in constrained if c.startswith("unconstrained")], constrained


def test_structured_output_in_the_servers_dialect(llama_server, request, wiki):
    """structured_output=True: every schema-declaring stage asks with_structured_output, sent as
    response_format json_object + schema (the type json_schema is refused by this server)."""
    out = run_method("kar3", llama_server, request, wiki, structured_output=True).invoke(
        {"question": QUESTION}, context=CONTEXT["kar3"])
    check_records(out, "kar3")


def test_arm_decodes_each_keywords_candidates_under_a_grammar(llama_server, request, wiki):
    graph = run_method("arm", llama_server, request, wiki)
    out = graph.invoke({"question": QUESTION}, context={"served_alignment": "candidates", "k": 2, "drafts": 1})
    calls = check_records(out, "arm")
    grammar = out["trace"]["decoding"]["grammar"]
    assert grammar["form"] == "candidates" and grammar["keywords"], grammar
    lists = [c for c in calls if c["stage"] == "arm_align_list"]
    with_candidates = [kw for kw, s in grammar["keywords"].items() if s["ngrams"]]
    assert len(lists) == len(with_candidates) and all(c["constraint"] == "llama.cpp grammar" for c in lists)
    assert all(0 < grammar["keywords"][kw]["bytes"] <= grammar["bytes_max"] for kw in with_candidates)
    assert all(index_has(request, a["ngram"]) for a in out["trace"]["aligned"])


def index_has(request, ngram: str) -> bool:
    return request.getfixturevalue("arm_index").has_ngram(ngram)


def test_streaming_tokens_from_the_server(llama_server, wiki):
    graph = build_method("standard", settings=settings_for(llama_server), sources=[wiki])
    chunks = [msg for msg, _ in graph.stream({"question": QUESTION}, stream_mode="messages")]
    assert chunks and any(getattr(m, "content", "") for m in chunks)


def test_a_deadline_ends_the_run_with_its_reason(llama_server, request, wiki):
    graph = run_method("atomr", llama_server, request, wiki)
    t0 = time.monotonic()
    # 0.02 s: an eighth of the quickest planner reply (0.16 s with its prompt in the server's cache), so the
    # time runs out during the call (or, on a slow start, before it: the same error)
    out = graph.invoke({"question": QUESTION}, config={"configurable": {"deadline": time.time() + 0.02}})
    assert time.monotonic() - t0 < 30
    assert set(OUTPUT_KEYS) <= set(out) and not out["answer"] and "deadline" in str(out["error"]).lower(), out["error"]
