"""The comparison methods (Self-Ask, IRCoT, Iter-RetGen, decomposed RAG) with a scripted
model over the demo pack's passages: answers, accounting, bounds, and bad model output."""

from __future__ import annotations

import pytest

from atomgraph.demo_pack import load_passages
from atomgraph.graphs.registry import build_method, method_descriptions
from atomgraph.settings import Settings
from atomgraph.state.run import OUTPUT_KEYS
from atomgraph.testing import ScriptedChatModel
from atomgraph.tools.memory_source import InMemorySource

Q = "In which city did Werner Heisenberg's doctoral advisor die?"
METHODS = ("self_ask", "ircot", "react", "iter_retgen", "decomposed_rag")


@pytest.fixture(scope="module")
def wiki():
    return InMemorySource(load_passages(), name="wikipedia", description="Encyclopedia passages.")


def run(method, model, sources, **context):
    graph = build_method(method, model=model, sources=sources, settings=Settings(cache=False))
    return graph.invoke({"question": Q}, context=context or None)


def stages(out):
    return [c["stage"] for c in out["llm_calls"]]


def check_contract(out, method):
    assert set(out) == set(OUTPUT_KEYS)
    assert out["trace"]["method"] == method


def test_every_method_is_registered_with_a_description():
    descriptions = method_descriptions()
    for m in METHODS:
        assert descriptions[m], m


def test_settings_sections_and_env(monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_IRCOT__MAX_STEPS", "2")
    monkeypatch.setenv("ATOMGRAPH_REACT__TOP_K", "7")
    s = Settings.load()
    assert s.ircot.max_steps == 2 and s.react.top_k == 7
    assert s.self_ask.max_follow_ups == 4 and s.iter_retgen.rounds == 3 and s.decomposed_rag.max_sub_questions == 4
    assert s.iter_retgen.stop_when_stable is False  # the paper runs every round


# --- Self-Ask -------------------------------------------------------------------------------

def test_self_ask_answers_follow_ups_from_the_sources(wiki):
    steps = iter(["Follow up: Who was the doctoral advisor of Werner Heisenberg?",
                  "Follow up: In which city did Arnold Sommerfeld die?",
                  "So the final answer is: Munich"])
    answers = iter(["So the answer is: Arnold Sommerfeld", "So the answer is: Munich"])
    model = ScriptedChatModel(stages={"self_ask_step": lambda p: next(steps), "self_ask_answer": lambda p: next(answers)})
    out = run("self_ask", model, [wiki])
    check_contract(out, "self_ask")
    assert out["answer"] == "Munich" and out["error"] is None and out["stopped"] is None
    assert stages(out) == ["self_ask_step", "self_ask_answer"] * 2 + ["self_ask_step"]
    assert [c["query"] for c in out["retriever_calls"]] == ["Who was the doctoral advisor of Werner Heisenberg?",
                                                          "In which city did Arnold Sommerfeld die?"]
    assert "Arnold Sommerfeld" in out["retrieved_titles"] and out["retrieved_ids"]
    # the intermediate answer was asked from the retrieved passage, and fed into the next step
    calls = model.calls
    assert "Sommerfeld" in calls[1]["prompt"] and "Passages:" in calls[1]["prompt"]
    assert "Intermediate answer: Arnold Sommerfeld" in calls[2]["prompt"]
    assert [c["max_tokens"] for c in calls[:2]] == [128, 256]
    kinds = [s["kind"] for s in out["trace"]["steps"]]
    assert kinds == ["follow_up", "search", "intermediate_answer"] * 2 + ["final_answer"]


def test_self_ask_follow_up_bound(wiki):
    model = ScriptedChatModel(stages={"self_ask_step": "Follow up: What else?", "self_ask_answer": "So the answer is: x",
                                      "self_ask_final": "So the final answer is: Munich"})
    out = run("self_ask", model, [wiki], max_follow_ups=2)
    assert stages(out) == ["self_ask_step", "self_ask_answer"] * 2 + ["self_ask_final"]
    assert len(out["retriever_calls"]) == 2
    assert "follow-up limit reached (2)" in out["stopped"] and out["answer"] == "Munich" and out["error"] is None


def test_self_ask_bad_output_ends_with_a_trace(wiki):
    model = ScriptedChatModel(stages={"self_ask_step": "Hmm, let me think about that."})
    out = run("self_ask", model, [wiki])
    assert out["answer"] == "" and out["error"].startswith("follow_up: unreadable model output")
    assert out["trace"]["steps"][-1]["response"] == "Hmm, let me think about that."
    assert out["llm_calls"][0]["parse_error"]

    model = ScriptedChatModel(stages={"self_ask_step": "Follow up: Who?", "self_ask_answer": RuntimeError("rate limited")})
    out = run("self_ask", model, [wiki])
    assert "rate limited" in out["error"] and out["error"].startswith("intermediate_answer")
    assert len(out["retriever_calls"]) == 1 and out["llm_calls"][-1]["error"]


# --- IRCoT ------------------------------------------------------------------------------------

def ircot_step(prompt: str) -> str:
    reasoning = prompt.rsplit("Reasoning:\n", 1)[1]
    return "So the answer is: Munich" if "Sommerfeld" in reasoning else "Heisenberg's doctoral advisor was Arnold Sommerfeld."


def test_ircot_interleaves_reasoning_and_retrieval(wiki):
    model = ScriptedChatModel(stages={"ircot_step": ircot_step, "ircot_read": "He died in Munich.\nSo the answer is: Munich"})
    out = run("ircot", model, [wiki], top_k=2)
    check_contract(out, "ircot")
    assert out["answer"] == "Munich" and out["error"] is None and out["stopped"] is None
    assert stages(out) == ["ircot_step", "ircot_step", "ircot_read"]
    assert [c["query"] for c in out["retriever_calls"]] == [Q, "Heisenberg's doctoral advisor was Arnold Sommerfeld."]
    assert all(c["hits"] == 2 for c in out["retriever_calls"])
    assert out["trace"]["reasoning"] == ["Heisenberg's doctoral advisor was Arnold Sommerfeld.", "So the answer is: Munich"]
    from atomgraph.render import render_trace

    shown = render_trace(out["trace"]).splitlines()  # what `atomgraph ask --method ircot` prints
    assert [line.split(" ")[1] for line in shown] == ["retrieve", "reason", "retrieve", "reason", "read_answer"]
    # the reader saw every passage gathered
    read_prompt = model.calls[-1]["prompt"]
    assert all(t in read_prompt for t in ("Werner Heisenberg", "Arnold Sommerfeld"))


def test_ircot_step_bound_and_passage_cap(wiki):
    model = ScriptedChatModel(stages={"ircot_step": "Physics was popular in Germany.", "ircot_read": "So the answer is: Munich"})
    out = run("ircot", model, [wiki], max_steps=3, top_k=3, max_passages=4)
    assert stages(out) == ["ircot_step"] * 3 + ["ircot_read"]
    assert len(out["retriever_calls"]) == 3  # the question, then one per sentence before the bound
    assert "step limit reached (3" in out["stopped"] and out["answer"] == "Munich"
    assert "\n[4] " in model.calls[-1]["prompt"] and "\n[5] " not in model.calls[-1]["prompt"]  # max_passages


def test_ircot_bad_output(wiki):
    out = run("ircot", ScriptedChatModel(stages={"ircot_step": ""}), [wiki])
    assert out["answer"] == "" and out["error"].startswith("reason:") and "empty" in out["error"]
    model = ScriptedChatModel(stages={"ircot_step": "So the answer is: Munich", "ircot_read": "   "})
    out = run("ircot", model, [wiki])
    assert out["answer"] == "" and out["error"].startswith("read_answer:")


# --- Iter-RetGen ------------------------------------------------------------------------------

def test_iter_retgen_retrieves_with_the_previous_generation(wiki):
    gens = iter(["Heisenberg studied under Arnold Sommerfeld.\nSo the answer is: Arnold Sommerfeld",
                 "Sommerfeld died in Munich.\nSo the answer is: Munich",
                 "Sommerfeld died in Munich.\nSo the answer is: munich"])
    model = ScriptedChatModel(stages={"iter_retgen": lambda p: next(gens)})
    out = run("iter_retgen", model, [wiki])
    check_contract(out, "iter_retgen")
    assert out["answer"] == "munich" and out["stopped"] is None and out["error"] is None  # rounds 2 and 3 agree
    queries = [c["query"] for c in out["retriever_calls"]]
    assert queries[0] == Q and queries[1].startswith(Q + " Heisenberg studied under Arnold Sommerfeld.")
    assert "Sommerfeld died in Munich" in queries[2]
    assert out["trace"]["rounds"] == 3


def test_iter_retgen_round_bound(wiki):
    n = iter(range(100))
    model = ScriptedChatModel(stages={"iter_retgen": lambda p: f"So the answer is: guess {next(n)}"})
    out = run("iter_retgen", model, [wiki], rounds=2, stop_when_stable=True)  # the switch (ours)
    assert stages(out) == ["iter_retgen"] * 2 and len(out["retriever_calls"]) == 2
    assert "round limit reached (2)" in out["stopped"] and out["answer"] == "guess 1"
    out = run("iter_retgen", model, [wiki], rounds=2)
    assert out["stopped"] is None and len(out["llm_calls"]) == 2  # the paper's fixed rounds (the default)


def test_iter_retgen_bad_output(wiki):
    out = run("iter_retgen", ScriptedChatModel(stages={"iter_retgen": RuntimeError("boom")}), [wiki])
    assert out["error"].startswith("generate:") and "boom" in out["error"] and out["answer"] == ""
    assert len(out["retriever_calls"]) == 1


# --- decomposed RAG -----------------------------------------------------------------------------

def test_decomposed_rag_fans_out_and_merges(wiki):
    model = ScriptedChatModel(stages={
        "decomposed_rag_plan": "1. Who was Werner Heisenberg's doctoral advisor?\n2. Where did Arnold Sommerfeld die?",
        "decomposed_rag_answer": "So the answer is: Munich"})
    out = run("decomposed_rag", model, [wiki], top_k=2)
    check_contract(out, "decomposed_rag")
    assert out["answer"] == "Munich" and out["error"] is None and out["stopped"] is None
    assert sorted(c["query"] for c in out["retriever_calls"]) == ["Where did Arnold Sommerfeld die?",
                                                               "Who was Werner Heisenberg's doctoral advisor?"]
    assert out["trace"]["sub_questions"][0].startswith("Who was")
    answer_prompt = model.calls[-1]["prompt"]
    assert "1. Who was Werner Heisenberg's doctoral advisor?" in answer_prompt and "Arnold Sommerfeld |" in answer_prompt
    ids = out["retrieved_ids"]
    assert len(ids) == len(set(ids)) <= 4


def test_decomposed_rag_sub_question_bound_and_bad_output(wiki):
    plan = "\n".join(f"{i}. Question number {i}?" for i in range(1, 7))
    model = ScriptedChatModel(stages={"decomposed_rag_plan": plan, "decomposed_rag_answer": "So the answer is: x"})
    out = run("decomposed_rag", model, [wiki], max_sub_questions=3)
    assert len(out["retriever_calls"]) == 3 and "sub-question limit reached (3): 3 more" in out["stopped"]
    # an unreadable decomposition: retrieval on the question itself, recorded as a fallback
    model = ScriptedChatModel(stages={"decomposed_rag_plan": "no idea",
                                      "decomposed_rag_answer": "Sommerfeld died in Munich.\nSo the answer is: Munich"})
    out = run("decomposed_rag", model, [wiki])
    assert out["error"] is None and out["answer"] == "Munich"
    assert [c["query"] if isinstance(c, dict) else c.query for c in out["retriever_calls"]] == [Q]
    assert out["trace"]["sub_questions"] == [Q]
    assert out["trace"]["fallbacks"][0]["stage"] == "decomposed_rag_plan"
    assert out["trace"]["fallbacks"][0]["reason"].startswith("retrieval on the question: unreadable model output")
    # the switch off: the paper-less strict behaviour, the run ends with the error
    out = run("decomposed_rag", ScriptedChatModel(stages={"decomposed_rag_plan": "no idea"}), [wiki],
              fallback_to_question=False)
    assert out["error"].startswith("decompose:") and out["retriever_calls"] == [] and out["answer"] == ""


# --- shared behaviour --------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["self_ask", "ircot", "iter_retgen", "decomposed_rag"])
async def test_an_unusable_source_asked_for_is_an_error_before_any_model_call(method):
    from atomgraph.errors import SourceUnavailable
    from atomgraph.tools.memory_source import InMemorySource as M

    empty = M([], name="wikipedia")  # unavailable: the collection is empty
    model = ScriptedChatModel(default="So the answer is: Munich", stages={
        "self_ask_step": "So the final answer is: Munich", "ircot_step": "So the answer is: Munich",
        "decomposed_rag_plan": "1. Who?"})
    graph = build_method(method, model=model, sources=[empty], settings=Settings(cache=False))
    with pytest.raises(SourceUnavailable, match="wikipedia: the collection is empty"):
        await graph.ainvoke({"question": Q})
    assert model.calls == []  # never a silent closed-book answer


def test_configurable_overrides_context(wiki):
    model = ScriptedChatModel(stages={"ircot_step": "Nothing yet.", "ircot_read": "So the answer is: x"})
    graph = build_method("ircot", model=model, sources=[wiki], settings=Settings(cache=False))
    out = graph.invoke({"question": Q}, config={"configurable": {"max_steps": 1}}, context={"max_steps": 5})
    assert stages(out) == ["ircot_step", "ircot_read"]


@pytest.mark.parametrize("method", METHODS)
def test_studio_parameter_form_and_module_graph(method):
    """Each module's compiled ``graph`` (langgraph.json) builds without a model and offers a
    described run-parameter form."""
    import importlib
    import json
    from pathlib import Path

    graph = importlib.import_module(f"atomgraph.graphs.{method}").graph
    schema = graph.get_context_jsonschema()
    assert schema["properties"] and all(p.get("description") for p in schema["properties"].values())
    config = json.loads((Path(__file__).resolve().parents[1] / "langgraph.json").read_text())
    assert config["graphs"][method] == f"./graphs/{method}.py:graph"
