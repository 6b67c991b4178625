"""ARM alignment on every decoding path: the constraint reaches the server in the form it
offers, and an aligned keyword is a corpus n-gram whatever the model returns."""

from __future__ import annotations

from typing import Any

import pytest

from atomgraph.graphs.arm import build_arm_graph
from atomgraph.nodes.arm.pipeline import decoding_mode
from atomgraph.backends import probe_server
from atomgraph.testing import ScriptedChatModel
from atomgraph.tools.arm_index import ArmIndex

from tests.arm_graph_fixtures import HOSTILE, OBJECTS, QUESTION, LoopbackServer

MODES = ["vllm_choice", "llamacpp_grammar", "openai_json_schema", "free"]


@pytest.fixture(scope="module")
def index() -> ArmIndex:
    return ArmIndex.build(OBJECTS, use_cache=False)


class RecordingModel(ScriptedChatModel):
    """A scripted model that also keeps the keyword arguments each call was bound with."""

    seen: list = []

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs: Any):
        from atomgraph.testing import stage_of

        self.seen.append((stage_of(run_manager), kwargs))
        return await super()._agenerate(messages, stop, run_manager, **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any):  # a sync run's calls
        from atomgraph.testing import stage_of

        self.seen.append((stage_of(run_manager), kwargs))
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("reply", HOSTILE)
def test_aligned_keywords_are_corpus_ngrams_on_every_path(index, mode, reply):
    model = ScriptedChatModel(stages={"arm_decompose": '["Heisenberg advisor", "death place", "singer"]',
                                      "arm_align": reply}, default="")
    out = build_arm_graph(model=model, objects=index).invoke(
        {"question": QUESTION}, context={"decoding": mode, "answer": False, "served_alignment": "shortlist"})
    aligned = out["trace"]["aligned"]
    assert all(index.has_ngram(a["ngram"]) for a in aligned), aligned
    assert out["trace"]["decoding"]["mode"] == mode
    assert out["retrieved_ids"]


@pytest.mark.parametrize("mode,key", [("vllm_choice", "structured_outputs"), ("llamacpp_grammar", "grammar"),
                                      ("openai_json_schema", "response_format")])
def test_the_constraint_is_bound_to_the_model_call(index, mode, key):
    model = RecordingModel(stages={"arm_decompose": '["singers"]', "arm_align": "singer"}, default="")
    model.seen = []
    build_arm_graph(model=model, objects=index).invoke(
        {"question": "Which singers come from France?"}, context={"decoding": mode, "answer": False, "served_alignment": "shortlist"})
    align_kwargs = [kw for stage, kw in model.seen if stage == "arm_align"]
    assert align_kwargs
    kw = align_kwargs[0]
    body = kw["response_format"] if key == "response_format" else kw["extra_body"]
    if mode == "vllm_choice":
        allowed = body["structured_outputs"]["choice"]
    elif mode == "llamacpp_grammar":
        assert body["grammar"].startswith("root ::= ")
        allowed = [x.strip().strip('"') for x in body["grammar"][len("root ::= "):].split(" | ")]
    else:
        allowed = body["json_schema"]["schema"]["properties"]["ngram"]["enum"]
    assert "singer" in allowed and all(index.has_ngram(a) for a in allowed)
    verify_kwargs = [kw for stage, kw in model.seen if stage == "arm_verify"]
    assert verify_kwargs  # the verifier is constrained to the draft's ids as well
    vk = verify_kwargs[0]
    schema = (vk["response_format"]["json_schema"]["schema"] if mode == "openai_json_schema"
              else vk["extra_body"]["response_format"]["schema"] if mode == "llamacpp_grammar"
              else vk["extra_body"]["structured_outputs"]["json"])
    assert set(schema["properties"]["objects"]["items"]["enum"]) <= {o.id for o in OBJECTS}


def test_auto_mode_is_free_for_models_without_constraints():
    assert decoding_mode(ScriptedChatModel(default="x"))["mode"] == "free"
    assert decoding_mode(ScriptedChatModel(default="x"), "vllm")["mode"] == "vllm_choice"


@pytest.mark.parametrize("owned_by,mode,key", [("vllm", "vllm_choice", "structured_outputs"),
                                               ("llamacpp", "llamacpp_grammar", "grammar"),
                                               ("someone", "free", None)])
def test_auto_detects_the_server_and_sends_its_constraint(index, owned_by, mode, key):
    def reply(stage, body):
        if stage == "arm_decompose":
            return '["Heisenberg doctoral advisor"]'
        if stage == "arm_align":
            return "a server that ignored the constraint"
        if stage == "arm_verify":
            return '{"reasoning": "r", "objects": ["p1", "p2"]}'
        return "So the answer is: Munich"

    server = LoopbackServer(owned_by, reply)
    try:
        probe_server.cache_clear()
        out = build_arm_graph(model=server.model(), objects=index).invoke({"question": QUESTION},
                                                                                    context={"k": 2, "served_alignment": "shortlist"})
    finally:
        server.close()
    trace = out["trace"]
    assert trace["decoding"]["mode"] == mode
    assert all(index.has_ngram(a["ngram"]) for a in trace["aligned"]) and trace["aligned"]
    assert all(a["path"] in ("snapped", "fallback") for a in trace["aligned"])
    align_bodies = [b for b in server.requests if "Options:" in b["messages"][-1]["content"]]
    assert align_bodies
    if key:
        assert key in align_bodies[0]
        assert align_bodies[0]["max_tokens"]  # the output cap travels with the constraint
    else:
        assert "structured_outputs" not in align_bodies[0] and "grammar" not in align_bodies[0]
    # log-probabilities were asked for and weighted the vote
    assert any(b.get("logprobs") for b in server.requests)
    assert trace["decoding"]["vote"] == "logprobs" and trace["verdicts"][0]["weights"]
    assert out["answer"] == "Munich"


def test_openai_structured_outputs_through_with_structured_output(index):
    def reply(stage, body):
        if stage == "arm_align":
            assert body["response_format"]["type"] == "json_schema"
            return '{"ngram": "sommerfeld"}'
        if stage == "arm_verify":
            return '{"reasoning": "r", "objects": ["p2"]}'
        return '["Sommerfeld"]' if stage == "arm_decompose" else "So the answer is: Munich"

    server = LoopbackServer("openai", reply)
    try:
        out = build_arm_graph(model=server.model(), objects=index).invoke(
            {"question": "Where did Sommerfeld die?"}, context={"decoding": "openai_json_schema", "k": 2})
    finally:
        server.close()
    assert out["trace"]["decoding"]["mode"] == "openai_json_schema"
    assert [(a["ngram"], a["path"]) for a in out["trace"]["aligned"]] == [("sommerfeld", "constrained")]
    align = next(b for b in server.requests if "Options:" in b["messages"][-1]["content"])
    enum = align["response_format"]["json_schema"]["schema"]["properties"]["ngram"]["enum"]
    assert "sommerfeld" in enum and len(enum) <= 1000
    assert out["retrieved_ids"][0] == "p2"
