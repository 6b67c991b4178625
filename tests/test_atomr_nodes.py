"""ATOMR nodes one at a time, each with a scripted chat model."""

from __future__ import annotations

import pytest
from langgraph.types import Command, Send

from atomgraph.nodes.atomr.node_reasoning import (gate, make_direct_rag_node, make_reason_children_node,
                                                  make_run_operator_node, make_select_sources_node,
                                                  overlap_coefficient, sibling_refs)
from atomgraph.text import split_entities
from atomgraph.nodes.atomr.execution import finalize, make_schedule_node
from atomgraph.nodes.atomr.plan import initial_runs, make_plan_node
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.atomr.tree_parser import parse_tree
from atomgraph.settings import Settings
from atomgraph.state.atomr import AtomRContext
from atomgraph.testing import ScriptedChatModel, answer_reply
from atomgraph.tools.memory_source import InMemorySource

Q = "Which one was established first, Grouplogic or Inbios?"
RAW = {
    Q: ["1. When was Grouplogic established?", "2. When was Inbios established?", "3. Which of [1] and [2] is earlier?"],
    "1. When was Grouplogic established?": 'Relate("Grouplogic", "inception")',
    "2. When was Inbios established?": 'Relate("Inbios", "inception")',
    "3. Which of [1] and [2] is earlier?": "[END]",
}
PASSAGES = [{"title": "Grouplogic", "text": "GroupLogic was established in 1988."},
            {"title": "Inbios", "text": "InBios was founded in 1996."}]


def runtime(model, sources=None, **settings):
    srcs = sources if sources is not None else [InMemorySource(PASSAGES, name="wikipedia"),
                                                InMemorySource(PASSAGES, name="google", kind="web")]
    return MethodRuntime(AtomRContext, "atomr", model, srcs, Settings(cache=False, **settings))


def step_input(tree, runs, i):
    return {"question": Q, "tree": tree, "runs": runs, "node_id": i, "budget": 10}


@pytest.fixture
def tree():
    return parse_tree(RAW, Q)


def test_overlap_coefficient_and_entity_lists():
    # the authors' word sets: lower-cased, split on whitespace, stop-words kept
    assert overlap_coefficient("Bill Gates born in 1955", "Bill Gates was born in Seattle in 1955 and") == 1.0
    assert overlap_coefficient("Bill Gates born in 1955", "Bill Gates was born in Seattle in 1955.") == 0.8
    # |{lionel, messi, is}| ... only lionel and messi are shared: 2 / min(5, 5)
    assert overlap_coefficient("Lionel Messi born in 1955", "Lionel Messi is a footballer.") == 2 / 5
    assert overlap_coefficient("x", "") == 0.0
    # t = 0.5, and when one entity reaches 0.85 only those ≥ 0.85 stay
    assert gate({"A": 0.4, "B": 0.6, "C": 0.7}, 0.5) == ["C", "B"]
    assert gate({"A": 0.4, "B": 0.6, "C": 0.9}, 0.5) == ["C"]
    assert split_entities('["A", "B"]') == ["A", "B"]
    assert split_entities("Bill Gates, Steve Jobs and Lionel Messi") == ["Bill Gates", "Steve Jobs", "Lionel Messi"]


async def test_plan_node_parses_and_initialises_runs(tree):
    import json

    model = ScriptedChatModel(default="```json\n" + json.dumps(RAW) + "\n```\nHope this helps!")
    out = await make_plan_node(runtime(model))({"question": f"  {Q}  "}, {})
    assert out["question"] == Q and out["plan_fallback"] is None
    assert {i: r.step for i, r in out["runs"].items()} == {0: "children", 1: "select", 2: "select", 3: "siblings"}
    assert out["llm_calls"][0].role == "planner"


@pytest.mark.parametrize("reply", ["", "{}", "TREE_PARSING_ERROR", '{"Q": ["1. a [2]", "2. b [1]"], "1. a [2]": "[END]", "2. b [1]": "[END]"}'])
async def test_plan_node_without_a_readable_plan_has_no_tree_and_an_error(reply):
    out = await make_plan_node(runtime(ScriptedChatModel(default=reply)))({"question": Q}, {})
    assert out["plan_fallback"] and out["tree"] is None and out["error"] and out["runs"] == {}


THREE = [InMemorySource(PASSAGES, name="wikipedia"), InMemorySource(PASSAGES, name="google", kind="web"),
         InMemorySource(PASSAGES, name="wikidata", kind="kg")]


async def test_select_sources_parses_choice_and_survives_failure(tree):
    runs = initial_runs(tree)
    node = make_select_sources_node(runtime(ScriptedChatModel(default="A: Google"), THREE))
    out = await node(step_input(tree, runs, 1), {})
    assert out["runs"][1].sources == ["google"] and out["runs"][1].step == "operate"
    broken = make_select_sources_node(runtime(ScriptedChatModel(default=RuntimeError("503")), THREE))
    out = await broken(step_input(tree, runs, 1), {})
    assert out["runs"][1].sources == ["wikipedia", "google", "wikidata"]
    assert "source selection failed" in out["runs"][1].notes[0] and out["llm_calls"][0].error


@pytest.mark.parametrize("n", [1, 2])
async def test_select_sources_makes_no_call_with_fewer_than_three_sources(tree, n):
    runs = initial_runs(tree)
    model = ScriptedChatModel()
    out = await make_select_sources_node(runtime(model, THREE[:n]))(step_input(tree, runs, 1), {})
    assert out["runs"][1].sources == [s.name for s in THREE[:n]] and out["llm_calls"] == [] and model.prompts == []


async def test_run_operator_retrieves_then_executes(tree):
    runs = initial_runs(tree)
    runs[1].sources = ["wikipedia"]
    runs[1].step = "operate"
    model = ScriptedChatModel(default=answer_reply("1988"))
    out = await make_run_operator_node(runtime(model))(step_input(tree, runs, 1), {"configurable": {"top_k": 1}})
    run = out["runs"][1]
    assert run.answers == ["1988"] and run.step is None
    assert [e.title for e in run.evidence] == ["Grouplogic"]
    assert "GroupLogic was established in 1988" in model.prompts[0]
    assert out["retriever_calls"][0].source == "wikipedia" and out["retriever_calls"][0].hits == 1




async def test_children_unknown_goes_to_source_selection(tree):
    runs = initial_runs(tree)
    for i, a in ((1, "1988"), (2, "1996"), (3, "Grouplogic")):
        runs[i].answers, runs[i].answer, runs[i].step = [a], a, None
    model = ScriptedChatModel(default=answer_reply(paraphrase="Unknown"))
    out = await make_reason_children_node(runtime(model))(step_input(tree, runs, 0), {})
    assert out["runs"][0].step == "select" and "Unknown" in out["runs"][0].fallback
    assert out["runs"][0].answers == []
    assert "1988" in model.prompts[0] and "Grouplogic" in model.prompts[0]


def test_sibling_refs_default_to_earlier_siblings(tree):
    tree.nodes[3].refs = []
    assert sibling_refs(step_input(tree, initial_runs(tree), 3)) == [1, 2]


async def test_direct_rag_keeps_unreadable_output_and_marks_failures(tree):
    runs = initial_runs(tree)
    runs[0].sources, runs[0].step = ["wikipedia"], "rag"
    out = await make_direct_rag_node(runtime(ScriptedChatModel(default="Thinking...\nGrouplogic, I believe, is older than Inbios here")))(
        step_input(tree, runs, 0), {})
    run = out["runs"][0]
    assert run.step == "closed_book" and run.evidence and run.notes and "unreadable" in run.notes[0]
    assert run.answers == [] and run.fallback  # the reply's text is never taken as an answer
    out = await make_direct_rag_node(runtime(ScriptedChatModel(default=TimeoutError("slow"))))(step_input(tree, runs, 0), {})
    assert out["runs"][0].answer == "" and out["runs"][0].answers == [] and "call failed" in out["runs"][0].notes[0]
    assert out["runs"][0].step == "closed_book"  # the root ended empty


async def test_schedule_dispatches_ready_nodes_within_budget_and_parallelism(tree):
    runs = initial_runs(tree)
    state = {"question": Q, "tree": tree, "runs": runs, "llm_calls": [{"stage": "plan", "retry": False}]}
    schedule = make_schedule_node(runtime(ScriptedChatModel(), THREE))
    cmd = await schedule(state, {})
    assert isinstance(cmd, Command) and [s.arg["node_id"] for s in cmd.goto] == [1, 2]
    assert all(isinstance(s, Send) and s.node == "select_sources" and s.arg["budget"] == 1 for s in cmd.goto)
    assert [s.arg["node_id"] for s in (await schedule(state, {"configurable": {"max_parallel": 1}})).goto] == [1]
    assert [s.arg["node_id"] for s in (await schedule(state, {"configurable": {"max_llm_calls": 2}})).goto] == [1]
    stop = await schedule(state, {"configurable": {"max_llm_calls": 1}})
    assert stop.goto == "finalize" and "budget" in stop.update["stopped"]


def test_finalize_answers_from_root_only(tree):
    runs = initial_runs(tree)
    runs[2].answers, runs[2].answer, runs[2].step = ["1996"], "1996", None
    runs[3].answers, runs[3].answer, runs[3].step = ["Inbios"], "Inbios", None
    out = finalize({"question": Q, "tree": tree, "runs": runs, "stopped": "LLM-call budget reached"})
    # a stopped run has no prediction: an error, and the nearest answered node in the partial trace
    assert out["answer"] == "" and out["answers"] == [] and "no prediction" in out["error"]
    assert out["trace"]["partial"] == {"node": 3, "question": runs[3].question, "answers": ["Inbios"]}
    runs[0].answers, runs[0].answer, runs[0].step = ["Grouplogic"], "Grouplogic", None
    out = finalize({"question": Q, "tree": tree, "runs": runs})
    assert out["answer"] == "Grouplogic" and out["stopped"] is None
    assert [n["id"] for n in out["trace"]["nodes"]] == tree.topological_order()


async def test_a_kg_source_answers_a_program_in_place_when_it_can():
    """A source's own ``aanswer_program`` is awaited on the loop; a source with only the sync
    ``answer_program`` (it may do I/O) is run in a worker thread."""
    import threading

    from atomgraph.nodes.atomr.node_reasoning import answer_program

    class Sync:
        def answer_program(self, program):
            return [program, threading.current_thread() is threading.main_thread()]

    class InPlace(Sync):
        async def aanswer_program(self, program):
            return ["own", threading.current_thread() is threading.main_thread()]

    assert await answer_program(Sync(), "p") == ["p", False]
    assert await answer_program(InPlace(), "p") == ["own", True]
