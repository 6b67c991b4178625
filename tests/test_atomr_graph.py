"""ATOMR graph: whole questions through every stage, with a scripted model.

Knowledge comes from in-memory sources here (the node logic is under test); the
end-to-end tests over real embedded stores are in test_atomr_end_to_end.py.
"""

from __future__ import annotations

import json
import re

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from atomgraph.errors import ConfigError
from atomgraph.graphs.atomr import build_atomr_graph
from atomgraph.prompts.atomr.packs import HOTPOTQA_PLAN
from atomgraph.settings import Settings
from atomgraph.state.run import InvalidQuestion
from atomgraph.testing import answer_reply, atomr_scripted_model
from atomgraph.tools.base import KnowledgeSource
from atomgraph.tools.memory_source import InMemorySource

PASSAGES = [
    {"title": "Kuhle Wampe", "text": "Kuhle Wampe is a 1932 German film directed by Slatan Dudow."},
    {"title": "Slatan Dudow", "text": "Slatan Dudow was a Bulgarian film director born in Tsaribrod in 1903."},
    {"title": "Bill Gates", "text": "Bill Gates was born in Seattle in 1955 and co-founded Microsoft."},
    {"title": "Steve Jobs", "text": "Steve Jobs was born in San Francisco in 1955 and co-founded Apple."},
    {"title": "Lionel Messi", "text": "Lionel Messi is an Argentine footballer who plays as a forward."},
    {"title": "Grouplogic", "text": "GroupLogic was a software company established in 1988."},
    {"title": "Inbios", "text": "InBios International is a biotech company founded in 1996."},
]

BRIDGE_Q = "Who directed the 1932 German film Kuhle Wampe, and where was he born?"
BRIDGE_TREE = {
    BRIDGE_Q: ["1. What is the film Kuhle Wampe?", "2. Who directed [1]?", "3. Where was [2] born?"],
    "1. What is the film Kuhle Wampe?": 'Search("Kuhle Wampe", "1932 German film")',
    "2. Who directed [1]?": 'Relate([1], "director")',
    "3. Where was [2] born?": 'Relate([2], "place of birth")',
}
COMPARE_Q = "Which one was established first, Grouplogic or Inbios?"
COMPARE_TREE = {
    COMPARE_Q: ["1. When was Grouplogic established?", "2. When was Inbios established?",
                "3. Given answers of [1] and [2], which one was established first?"],
    "1. When was Grouplogic established?": 'Relate("Grouplogic", "established date")',
    "2. When was Inbios established?": 'Relate("Inbios", "established date")',
    "3. Given answers of [1] and [2], which one was established first?": "[END]",
}
FILTER_Q = "Which of Bill Gates, Steve Jobs and Lionel Messi were born in 1955?"
FILTER_TREE = {
    FILTER_Q: ["1. Who are Bill Gates, Steve Jobs and Lionel Messi?", "2. Who among [1] was born in 1955?"],
    "1. Who are Bill Gates, Steve Jobs and Lionel Messi?": 'Search("Bill Gates, Steve Jobs, Lionel Messi")',
    "2. Who among [1] was born in 1955?": 'Filter([1], "born in 1955")',
}


def sources(*extra: KnowledgeSource):
    return [
        InMemorySource(PASSAGES, name="wikipedia", description="Encyclopedia passages."),
        InMemorySource(PASSAGES[:4], name="google", description="Web search results.", kind="web"),
        *extra,
    ]


def last_question(text: str) -> str:
    """The question a stage prompt is about: what follows its last 'Question:'."""
    return text.rsplit("Question:", 1)[-1]


def default_answers(stage: str, text: str) -> str:
    tail = last_question(text)
    if stage == "search" and "Kuhle Wampe" in tail:
        return answer_reply("Kuhle Wampe (1932 film)")
    if stage == "search":
        return answer_reply("Bill Gates", "Steve Jobs", "Lionel Messi")
    if stage == "relate" and "Who directed" in tail:
        return answer_reply("Slatan Dudow")
    if stage == "relate" and "Where was" in tail:
        return answer_reply("Tsaribrod")
    if stage == "relate" and "Grouplogic" in tail:
        return answer_reply("1988")
    if stage == "relate" and "Inbios" in tail:
        return answer_reply("1996")
    if stage == "filter":
        return answer_reply("Bill Gates", "Steve Jobs")
    if stage == "sibling_reasoning":
        return answer_reply("Grouplogic")
    if stage == "child_reasoning" and "Kuhle Wampe" in tail:
        return answer_reply("Slatan Dudow, born in Tsaribrod", paraphrase="Slatan Dudow was born in Tsaribrod")
    if stage in ("child_reasoning", "direct_rag"):
        return answer_reply("Grouplogic") if "Grouplogic" in tail else answer_reply("Bill Gates", "Steve Jobs")
    raise AssertionError(f"unexpected stage {stage}")


PLANS = {BRIDGE_Q: BRIDGE_TREE, COMPARE_Q: COMPARE_TREE, FILTER_Q: FILTER_TREE}


def graph_with(answer=default_answers, plans=PLANS, srcs=None, **kw):
    model = atomr_scripted_model(plans, answer=answer, sources_reply="Wikipedia, Google")
    g = build_atomr_graph(model=model, sources=srcs if srcs is not None else sources(), settings=Settings(cache=False), **kw)
    return g, model


def stages(model) -> list[str]:
    return [c["stage"] for c in model.calls]


async def test_bridge_question_resolves_references_and_records_usage():
    graph, model = graph_with()
    out = await graph.ainvoke({"question": BRIDGE_Q})
    assert out["answers"] == ["Slatan Dudow, born in Tsaribrod"]
    nodes = {n["id"]: n for n in out["trace"]["nodes"]}
    # [1] and [2] were replaced by the answers before the nodes ran
    assert nodes[2]["resolved_question"] == "Who directed Kuhle Wampe (1932 film)?"
    assert nodes[2]["operator"] == 'Relate("Kuhle Wampe (1932 film)", "director")'
    assert nodes[3]["resolved_question"] == "Where was Slatan Dudow born?"
    assert all(nodes[i]["sources"] == ["wikipedia", "google"] for i in (1, 2, 3))
    assert nodes[1]["evidence"] and nodes[1]["evidence"][0]["title"] == "Kuhle Wampe"
    # plan + 3 operators + child reasoning: with two sources nothing is chosen (no selection call)
    assert len(out["llm_calls"]) == 5
    assert "source_selection" not in stages(model)
    assert sorted(c["role"] for c in out["llm_calls"]).count("executor") == 3
    assert all(c["prompt_tokens"] > 0 and c["completion_tokens"] > 0 for c in out["llm_calls"])
    assert {c["source"] for c in out["retriever_calls"]} == {"wikipedia", "google"}
    assert len(out["retriever_calls"]) == 6
    assert "Kuhle Wampe" in out["retrieved_titles"]
    assert out["stopped"] is None


async def test_independent_branches_run_in_the_same_superstep():
    graph, model = graph_with(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t1"}}
    out = await graph.ainvoke({"question": COMPARE_Q}, cfg)
    assert out["answer"] == "Grouplogic"
    history = [s async for s in graph.aget_state_history(cfg)]
    # both leaves' source selection, then both operators, were dispatched together
    assert any(s.next.count("select_sources") == 2 for s in history)
    assert any(s.next.count("run_operator") == 2 for s in history)
    # [DR] node 3 reasoned over its referenced siblings 1 and 2
    sib = [p for p in model.prompts if "which one was established first" in last_question(p).lower()
           and "1988" in p and "1996" in p]
    assert sib, "sibling reasoning saw both sibling answers"


async def test_sequential_mode_runs_one_node_at_a_time():
    graph, _ = graph_with(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "seq", "max_parallel": 1}}
    out = await graph.ainvoke({"question": COMPARE_Q}, cfg)
    assert out["answer"] == "Grouplogic"
    history = [s async for s in graph.aget_state_history(cfg)]
    assert all(len(s.next) <= 1 for s in history)


WIKI_ONLY = [InMemorySource(PASSAGES, name="wikipedia", description="Encyclopedia passages.")]


async def test_filter_drops_entities_below_overlap_threshold():
    # One source and top-1 retrieval, so each entity is judged on its own passage:
    # "Lionel Messi born 1955" overlaps Messi's passage in 2 of 4 words... below t once the
    # condition says more ("born in Seattle or San Francisco in 1955" is not used: keep it simple).
    graph, model = graph_with(srcs=WIKI_ONLY)
    out = await graph.ainvoke({"question": FILTER_Q}, {"configurable": {"top_k": 1, "filter_threshold": 0.6}})
    node = {n["id"]: n for n in out["trace"]["nodes"]}[2]
    assert node["filter_dropped"] == ["wikipedia: Lionel Messi"]
    assert node["answers"] == ["Bill Gates", "Steve Jobs"]
    # per-entity top-1 retrieval with "{entity} {condition}", one per candidate
    filter_calls = [c for c in out["retriever_calls"] if c["query"].startswith("Filter(")]
    assert len(filter_calls) == 3
    knowledge = next(p for p in model.prompts if "Condition:" in p).rsplit("Retrieved Knowledge:", 1)[-1]
    assert "Bill Gates" in knowledge and "Lionel Messi" not in knowledge.split("Condition:")[0]


async def test_filter_threshold_is_a_per_run_setting():
    graph, _ = graph_with(srcs=WIKI_ONLY)
    out = await graph.ainvoke({"question": FILTER_Q}, {"configurable": {"top_k": 1, "filter_threshold": 0.0}})
    node = {n["id"]: n for n in out["trace"]["nodes"]}[2]
    # t = 0 keeps everyone, but Gates and Jobs score 1.0 on their passages: the 0.85 cut keeps only them
    assert node["filter_dropped"] == ["wikipedia: Lionel Messi"]
    out = await graph.ainvoke({"question": FILTER_Q}, {"configurable": {"top_k": 1, "filter_threshold": 1.0}})
    node = {n["id"]: n for n in out["trace"]["nodes"]}[2]
    assert node["filter_dropped"] == ["wikipedia: Lionel Messi"] and node["answers"] == ["Bill Gates", "Steve Jobs"]


async def test_unparseable_plan_is_an_empty_answer_with_error_as_the_authors_score_it():
    plans = {COMPARE_Q: "I would rather not write JSON today."}
    graph, model = graph_with(plans=plans)
    out = await graph.ainvoke({"question": COMPARE_Q})
    assert out["answer"] == "" and out["answers"] == []
    assert "could not be parsed" in out["trace"]["plan_fallback"] and "could not be parsed" in out["error"]
    assert stages(model) == ["plan"]


async def test_plan_for_another_question_is_a_parse_failure():
    other = {"Who wrote Dune?": 'Relate("Dune", "author")'}
    graph, model = graph_with(plans={COMPARE_Q: other})
    out = await graph.ainvoke({"question": COMPARE_Q})
    assert "is not the question asked" in out["error"]
    assert stages(model) == ["plan"]


# A planner demonstration of the hotpotqa pack, as a small model copies it into its reply.
DEMO_Q, DEMO_TREE = HOTPOTQA_PLAN[0]


@pytest.mark.parametrize("reply", [
    # one JSON object: the copied demonstration's entries, then ours
    json.dumps({**DEMO_TREE, **COMPARE_TREE}),
    # ours first, then the demonstration
    json.dumps({**COMPARE_TREE, **DEMO_TREE}),
    # two JSON objects one after the other, with prose between them
    json.dumps(DEMO_TREE) + "\nNow the plan for the question:\n" + json.dumps(COMPARE_TREE),
    # children before their parents (the root written last), after the demonstration
    json.dumps({**DEMO_TREE, **dict(reversed(list(COMPARE_TREE.items())))}),
])
async def test_a_reply_with_several_plans_runs_the_plan_for_the_question(reply):
    graph, model = graph_with(plans={COMPARE_Q: reply})
    out = await graph.ainvoke({"question": COMPARE_Q})
    assert out["error"] is None and out["answer"] == "Grouplogic"
    trace = out["trace"]
    assert [n["question"] for n in trace["nodes"]] == [
        "When was Grouplogic established?", "When was Inbios established?",
        "Given answers of [1] and [2], which one was established first?", COMPARE_Q]
    assert any("the reply holds 2 plans; kept the one for the question asked" in r and DEMO_Q in r
               for r in trace["repairs"])
    assert "Haymo" not in json.dumps(trace["plan"])
    assert stages(model) == ["plan", "relate", "relate", "sibling_reasoning", "child_reasoning"]


async def test_a_reply_with_only_other_questions_plans_is_a_parse_failure():
    """Two plans, neither for the question asked: no tree, one call."""
    other = {"Who wrote Dune?": 'Relate("Dune", "author")'}
    graph, model = graph_with(plans={COMPARE_Q: json.dumps({**DEMO_TREE, **other})})
    out = await graph.ainvoke({"question": COMPARE_Q})
    assert out["answer"] == "" and "none of the 2 plans in the reply has the question asked as its root" in out["error"]
    assert DEMO_Q in out["error"] and "Who wrote Dune?" in out["error"]
    assert stages(model) == ["plan"]


async def test_operator_failure_falls_back_to_direct_rag_on_retrieved_knowledge():
    def answers(stage, text):
        if stage == "relate" and "Inbios" in last_question(text):
            return "I am not sure what format you want."  # no answer in it at all
        return default_answers(stage, text)

    graph, model = graph_with(answer=answers)
    out = await graph.ainvoke({"question": COMPARE_Q})
    node = {n["id"]: n for n in out["trace"]["nodes"]}[2]
    assert node["fallback"].startswith("operator failure: unreadable model output")
    assert node["done"] and node["answer"]
    # direct RAG retrieved again with the rewritten question (Algorithm 1, line 10)
    assert stages(model).count("direct_rag") == 1
    rag_query = [c["query"] for c in out["retriever_calls"]][-2:]
    assert all(q == "When was Inbios established?" for q in rag_query)


async def test_unknown_child_answer_triggers_source_selection_and_direct_rag():
    def answers(stage, text):
        if stage == "sibling_reasoning":
            return answer_reply(paraphrase="Unknown")
        return default_answers(stage, text)

    graph, model = graph_with(answer=answers)
    out = await graph.ainvoke({"question": COMPARE_Q})
    node = {n["id"]: n for n in out["trace"]["nodes"]}[3]
    # the paper: no fallback after sibling reasoning ([DR], Algorithm 1 lines 14–15)
    assert node["fallback"] is None and node["answers"] == []
    assert stages(model)[-2:] == ["sibling_reasoning", "child_reasoning"]
    assert "direct_rag" not in stages(model)


async def test_model_call_failure_is_recorded_and_survived():
    def answers(stage, text):
        if stage == "relate" and "Grouplogic" in last_question(text):
            raise TimeoutError("model server timed out")
        return default_answers(stage, text)

    graph, _ = graph_with(answer=answers)
    out = await graph.ainvoke({"question": COMPARE_Q})
    failed = [c for c in out["llm_calls"] if c["error"]]
    assert len(failed) == 1 and "timed out" in failed[0]["error"]
    assert out["answer"] == "Grouplogic"


class BrokenSource(KnowledgeSource):
    name, description, kind = "broken", "Always fails.", "text"

    def search(self, query, k=3):
        raise ConnectionError("connection refused")


async def test_failing_selected_source_keeps_other_evidence():
    graph = build_atomr_graph(
        model=atomr_scripted_model(PLANS, answer=default_answers, sources_reply="Wikipedia, broken"),
        sources=sources(BrokenSource()), settings=Settings(cache=False),
    )
    out = await graph.ainvoke({"question": BRIDGE_Q})
    errors = [c for c in out["retriever_calls"] if c["error"]]
    assert errors and all(c["source"] == "broken" and "connection refused" in c["error"] for c in errors)
    node1 = {n["id"]: n for n in out["trace"]["nodes"]}[1]
    assert node1["evidence"] and any("broken" in n for n in node1["notes"])
    assert out["answers"] == ["Slatan Dudow, born in Tsaribrod"]


async def test_llm_budget_stops_with_an_error_and_the_partial_tree():
    graph, _ = graph_with()
    out = await graph.ainvoke({"question": COMPARE_Q}, {"configurable": {"max_llm_calls": 2}})
    assert len(out["llm_calls"]) == 2
    assert "budget" in out["stopped"] and "no prediction" in out["error"]
    assert out["answer"] == ""  # a depth-2 node's answer is never the prediction
    assert out["trace"]["partial"]["answers"][0] in {"1988", "1996"}


async def test_tree_over_node_limit_is_answered_by_direct_rag():
    graph, model = graph_with()
    out = await graph.ainvoke({"question": BRIDGE_Q}, {"configurable": {"max_nodes": 2}})
    assert "max_nodes=2" in out["trace"]["plan_fallback"]
    assert stages(model) == ["plan", "direct_rag"]


@pytest.mark.parametrize("question", ["", "   ", "x" * 5000, None])
async def test_empty_or_huge_questions_get_a_clear_error(question):
    graph, _ = graph_with()
    with pytest.raises(InvalidQuestion, match="question"):
        await graph.ainvoke({"question": question})


async def test_hostile_question_text_passes_through_every_prompt():
    hostile = 'Who is {x} "}; DROP TABLE q; -- \n [9] {{answer}} ?'
    asked = " ".join(hostile.split())  # the question as check_question passes it on
    graph, model = graph_with(plans={asked: {asked: 'Search("{x} \\"}; DROP")'}},
                              answer=lambda s, t: answer_reply("weird"))
    out = await graph.ainvoke({"question": hostile})
    assert out["answer"] == "weird"
    assert any("DROP TABLE" in p for p in model.prompts)
    # a braces reply is markup, not an answer (the answer contract): refused, with its reason
    graph, model = graph_with(plans={asked: {asked: 'Search("{x} \\"}; DROP")'}},
                              answer=lambda s, t: answer_reply("{x}"))
    out = await graph.ainvoke({"question": hostile})
    assert out["answer"] == "" and "answer refused (markup)" in str(out["error"]) + str(out["llm_calls"])


async def test_no_model_configured_names_the_setting():
    graph = build_atomr_graph(sources=sources(), settings=Settings(cache=False))
    with pytest.raises(ConfigError, match="ATOMGRAPH_MODEL"):
        await graph.ainvoke({"question": BRIDGE_Q})


async def test_interrupted_run_resumes_without_repeating_work():
    graph, model = graph_with(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "resume"}}
    await graph.ainvoke({"question": BRIDGE_Q}, cfg, interrupt_before=["reason_children"])
    before = len(model.prompts)
    assert before == 4  # plan + 3 operators, stopped before child reasoning
    out = await graph.ainvoke(None, cfg)
    assert out["answers"] == ["Slatan Dudow, born in Tsaribrod"]
    assert len(model.prompts) == before + 1
    assert len(out["llm_calls"]) == 5


async def test_stream_yields_node_level_progress():
    graph, _ = graph_with()
    seen = []
    async for chunk in graph.astream({"question": COMPARE_Q}, stream_mode="updates"):
        seen.extend(chunk)
    assert seen[0] == "plan" and seen[-1] == "finalize"
    assert {"select_sources", "run_operator", "reason_siblings"} <= set(seen)


def test_sync_invoke_and_json_trace():
    graph, _ = graph_with()
    out = graph.invoke({"question": COMPARE_Q})
    json.dumps(out["trace"])  # the trace is plain JSON
    assert re.search(r"Grouplogic", out["answer"])


async def test_an_async_run_hands_nothing_to_a_worker_thread():
    """Every node of the graph (the scheduler, review, finalize, the door too) runs on the event loop,
    and small in-memory sources are searched in place: a warm async run submits nothing to the loop's
    executor (each hand-off costs more than such a node, and a loaded machine multiplies it)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    class Counting(ThreadPoolExecutor):  # the default executor as it is, counting what it is handed
        submitted = 0

        def submit(self, *args, **kwargs):
            self.submitted += 1
            return super().submit(*args, **kwargs)

    model = atomr_scripted_model({COMPARE_Q: COMPARE_TREE, BRIDGE_Q: BRIDGE_TREE})
    graph = build_atomr_graph(model=model, sources=sources(), settings=Settings(cache=False))
    await graph.ainvoke({"question": COMPARE_Q})  # sources open on first use (off the loop)
    loop = asyncio.get_running_loop()
    executor = Counting()
    loop.set_default_executor(executor)
    out = await graph.ainvoke({"question": BRIDGE_Q})
    assert out["answer"] and executor.submitted == 0
