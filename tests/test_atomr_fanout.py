"""ATOMR as the authors run it: per-answer fan-out, empty answers that stay empty, and the
fallbacks of Algorithm 1 (with atomgraph's extra fallbacks as switches), counted call by
call with a scripted model over in-memory sources."""

from __future__ import annotations

import pytest

from atomgraph.graphs.atomr import build_atomr_graph
from atomgraph.nodes.atomr.execution import ALGORITHM_1, Switch, plan_operator, plan_question
from atomgraph.settings import Settings
from atomgraph.state.atomr import NodeRun, OperatorCall
from atomgraph.testing import answer_reply, atomr_scripted_model
from atomgraph.tools.base import KnowledgeSource
from atomgraph.tools.memory_source import InMemorySource

CREW = ["Neil Armstrong", "Buzz Aldrin", "Michael Collins"]
PASSAGES = [
    {"title": "Apollo 11", "text": "Apollo 11 was flown by Neil Armstrong, Buzz Aldrin and Michael Collins in 1969."},
    {"title": "Neil Armstrong", "text": "Neil Armstrong was born in Wapakoneta, Ohio."},
    {"title": "Buzz Aldrin", "text": "Buzz Aldrin was born in Glen Ridge, New Jersey."},
    {"title": "Michael Collins", "text": "Michael Collins was born in Rome, Italy."},
]
BIRTHPLACE = {"Neil Armstrong": "Wapakoneta", "Buzz Aldrin": "Glen Ridge", "Michael Collins": "Rome"}

Q = "Where were the members of the Apollo 11 crew born?"
TREE = {
    Q: ["1. Who were the crew members of Apollo 11?", "2. Where was [1] born?"],
    "1. Who were the crew members of Apollo 11?": 'Relate("Apollo 11", "crew member")',
    "2. Where was [1] born?": 'Relate([1], "place of birth")',
}


def question_of(prompt: str) -> str:
    return prompt.rsplit("Question:", 1)[-1].split("\nAnswer:")[0].strip()


def reader(crew=CREW, *, relate_unknown=False, child="Wapakoneta"):
    def answer(stage: str, prompt: str) -> str:
        q = question_of(prompt)
        if stage == "relate" and "crew members" in q:
            return answer_reply(*crew) if crew else answer_reply(paraphrase="Unknown")
        if stage == "relate":
            if relate_unknown:
                return answer_reply(paraphrase="Unknown")
            person = next(p for p in CREW if p in q)
            return answer_reply(BIRTHPLACE[person], paraphrase=f"{person} was born in {BIRTHPLACE[person]}")
        if stage == "child_reasoning":
            return answer_reply(child) if child else answer_reply(paraphrase="Unknown")
        if stage == "closed_book":
            return answer_reply("Ohio")
        return answer_reply(paraphrase="Unknown")
    return answer


def graph(answer, srcs=None):
    model = atomr_scripted_model({Q: TREE}, answer=answer)
    srcs = srcs if srcs is not None else [InMemorySource(PASSAGES, name="wikipedia"),
                                          InMemorySource(PASSAGES, name="google", kind="web")]
    return build_atomr_graph(model=model, sources=srcs, settings=Settings(cache=False)), model


def stages(model) -> list[str]:
    return [c["stage"] for c in model.calls]


def nodes_of(out) -> dict[int, dict]:
    return {n["id"]: n for n in out["trace"]["nodes"]}


async def test_relate_fans_out_once_per_referenced_answer():
    g, model = graph(reader())
    out = await g.ainvoke({"question": Q})
    node = nodes_of(out)[2]
    # one retrieval per person per source; no query names two referenced entities
    queries = [c["query"] for c in out["retriever_calls"]]
    person_queries = [q for q in queries if any(p in q for p in CREW)]
    assert len(person_queries) == 6
    assert all(sum(p in q for p in CREW) == 1 for q in person_queries)
    assert sorted({q for q in person_queries}) == sorted(
        f'Relate({p}, place of birth)' for p in CREW)
    # one executor call per person, answers and paraphrases concatenated in order
    assert stages(model) == ["plan", "relate", "relate", "relate", "relate", "child_reasoning"]
    assert node["answers"] == ["Wapakoneta", "Glen Ridge", "Rome"]
    assert node["paraphrase"] == ("Neil Armstrong was born in Wapakoneta; Buzz Aldrin was born in Glen Ridge; "
                                  "Michael Collins was born in Rome")
    assert [s["question"] for s in node["subcalls"]] == [f"Where was {p} born?" for p in CREW]
    assert [s["args"] for s in node["subcalls"]] == [[p, "place of birth"] for p in CREW]
    assert node["operator"].count("Relate(") == 3
    assert len(out["llm_calls"]) == 6 and len(out["retriever_calls"]) == 8
    # the parent sees the paraphrase and the referenced QA pair
    (child_prompt,) = [c["prompt"] for c in model.calls if c["stage"] == "child_reasoning"]
    assert 'Q: 1. Who were the crew members of Apollo 11? A: ["Neil Armstrong", "Buzz Aldrin", "Michael Collins"]' in child_prompt
    assert 'Neil Armstrong was born in Wapakoneta; Buzz Aldrin' in child_prompt
    assert '["Wapakoneta", "Glen Ridge", "Rome"]' in child_prompt


async def test_fanout_cap_limits_sub_calls():
    g, model = graph(reader())
    out = await g.ainvoke({"question": Q}, {"configurable": {"fanout_cap": 2}})
    node = nodes_of(out)[2]
    assert node["answers"] == ["Wapakoneta", "Glen Ridge"]
    assert stages(model).count("relate") == 3
    assert any("fanout_cap=2: 1 sub-calls not run" in n for n in node["notes"])


async def test_llm_budget_is_exact_with_fan_out():
    g, model = graph(reader())
    out = await g.ainvoke({"question": Q}, {"configurable": {"max_llm_calls": 3}})
    assert len(out["llm_calls"]) == 3 and len(model.calls) == 3
    assert "budget" in out["stopped"]
    assert nodes_of(out)[2]["answers"] == ["Wapakoneta"]
    # one birthplace of three is no prediction: an error, the partial tree as the trace
    assert out["answer"] == "" and "no prediction" in out["error"]
    assert out["trace"]["partial"]["node"] == 2


async def test_empty_reference_is_skipped_and_nothing_says_unknown():
    g, model = graph(reader(crew=[], child=None))
    out = await g.ainvoke({"question": Q})
    nodes = nodes_of(out)
    assert nodes[1]["answers"] == [] and nodes[1]["fallback"] is None  # Unknown is no operator failure
    assert nodes[2]["answers"] == [] and nodes[2]["subcalls"] == []
    assert "skipped: referenced node [1] has no answer" in nodes[2]["notes"]
    # no call over the empty reference, no query and no prompt with "Unknown" substituted
    assert stages(model) == ["plan", "relate", "child_reasoning", "direct_rag", "closed_book"]
    assert not any("Unknown" in c["query"] for c in out["retriever_calls"])
    assert not any("Where was Unknown" in c["prompt"] for c in model.calls)
    (child_prompt,) = [c["prompt"] for c in model.calls if c["stage"] == "child_reasoning"]
    assert "A: []" in child_prompt
    # the root ended empty: the closed-book stage answered
    assert out["answer"] == "Ohio" and out["error"] is None
    assert "closed-book answer" in nodes[0]["fallback"]


async def test_closed_book_can_be_switched_off_and_an_empty_run_has_an_error():
    g, model = graph(reader(crew=[], child=None))
    out = await g.ainvoke({"question": Q}, {"configurable": {"closed_book_root": False}})
    assert out["answer"] == "" and out["answers"] == [] and "no answer" in out["error"]
    assert "closed_book" not in stages(model)


async def test_every_model_call_failing_sets_error():
    def fail(stage, prompt):
        raise ConnectionError("model server down")

    model = atomr_scripted_model({Q: TREE}, answer=fail)
    model.stages["plan"] = ConnectionError("model server down")
    g = build_atomr_graph(model=model, sources=[InMemorySource(PASSAGES, name="wikipedia")],
                          settings=Settings(cache=False))
    out = await g.ainvoke({"question": Q})
    assert out["answer"] == "" and "model server down" in out["error"]


class Silent(KnowledgeSource):
    """A source that finds nothing (an empty index, a query it cannot match)."""

    name, description, kind = "silent", "Finds nothing.", "text"

    def search(self, query, k=3):
        return []


async def test_operator_failure_without_evidence_goes_to_direct_rag_with_a_fresh_retrieval():
    answered = {"direct_rag": 0}

    def answer(stage, prompt):
        if stage == "direct_rag":
            answered["direct_rag"] += 1
            return answer_reply("somewhere")
        return reader()(stage, prompt)

    g, model = graph(answer, srcs=[Silent()])
    out = await g.ainvoke({"question": Q})
    nodes = nodes_of(out)
    assert nodes[1]["fallback"] == "operator failure: no evidence from any selected source"
    # no executor call without evidence; direct RAG retrieved again with the leaf's question
    assert "relate" not in stages(model)
    rag_queries = [c["query"] for c in out["retriever_calls"] if not c["query"].startswith("Relate(")]
    assert rag_queries[0] == "Who were the crew members of Apollo 11?"
    # [2] then fans out over [1]'s answer (one) and fails the same way
    assert nodes[2]["subcalls"][0]["question"] == "Where was somewhere born?"
    assert answered["direct_rag"] == 2


async def test_an_unknown_leaf_stays_empty_without_direct_rag():
    g, model = graph(reader(relate_unknown=True))
    out = await g.ainvoke({"question": Q})
    assert nodes_of(out)[2]["fallback"] is None and "direct_rag" not in stages(model)


def asked_part(prompt: str) -> str:
    """What a prompt asks about, after its last demonstration's answer line: the knowledge, the
    child or referenced QA pairs and the question, not the instructions and examples (which
    say how to write Unknown)."""
    tail = prompt.rsplit("(2) Answer List:", 1)[-1]
    return tail.split("\n", 1)[1] if "\n" in tail else tail


@pytest.mark.parametrize("configurable", [
    {}, {"closed_book_root": False}, {"fanout_cap": 1},
])
@pytest.mark.parametrize("answers", [dict(crew=[], child=None), dict(relate_unknown=True, child=None),
                                     dict(child=None)], ids=["empty-crew", "unknown-births", "unknown-root"])
async def test_no_query_and_no_question_ever_says_unknown(configurable, answers):
    """Whatever ends empty, with or without the closed-book root and the fan-out cap: no retrieval query, no asked
    question, no operator call and no answer in the run contains "Unknown"."""
    g, model = graph(reader(**answers))
    out = await g.ainvoke({"question": Q}, {"configurable": configurable})
    texts = [c["query"] for c in out["retriever_calls"]] + [out["answer"], *out["answers"]]
    for n in out["trace"]["nodes"]:
        texts += [n["resolved_question"], n["operator"] or "", n["answer"], *n["answers"]]
        for sub in n["subcalls"]:
            texts += [sub["question"], sub["query"], *sub["args"], *sub["answers"]]
    texts += [asked_part(c["prompt"]) for c in model.calls if c["stage"] != "plan"]
    assert len(out["retriever_calls"]) >= 2 and len(model.calls) >= 3
    assert any("A: [" in t for t in texts)  # the prompts' asked parts, QA pairs included, are checked
    assert not [t for t in texts if "unknown" in t.lower()]


# --- the fan-out rules, pure --------------------------------------------------------------------
def answered(i, *answers):
    return NodeRun(id=i, kind="operator", question="q", answers=list(answers), answer=", ".join(answers))


RUNS = {1: answered(1, "A", "B"), 2: answered(2, "X", "Y"), 3: answered(3, "P"), 4: answered(4)}


def test_plan_operator_rules():
    rel = plan_operator("Where was [1] born?", OperatorCall(name="Relate", args=["[1]", "place of birth"]), RUNS)
    assert rel.calls == [("Where was A born?", ["A", "place of birth"]), ("Where was B born?", ["B", "place of birth"])]
    two = plan_operator("How is [1] related to [2]?", OperatorCall(name="Relate", args=["[1]", "[2]"]), RUNS)
    assert len(two.calls) == 4 and two.calls[1] == ("How is A related to Y?", ["A", "Y"])
    flt = plan_operator("Who among [1] is tall?", OperatorCall(name="Filter", args=["[1]", "tall"]), RUNS)
    assert flt.calls == [("Who among A, B is tall?", ["A, B", "tall"])]
    srch = plan_operator("What is [3]?", OperatorCall(name="Search", args=["[3]", "film by [1]"]), RUNS)
    assert [c[1] for c in srch.calls] == [["P", "film by A"], ["P", "film by B"]]
    empty = plan_operator("Where was [4] born?", OperatorCall(name="Relate", args=["[4]", "place of birth"]), RUNS)
    assert empty.calls == [] and "[4] has no answer" in empty.skipped
    capped = plan_operator("How is [1] related to [2]?", OperatorCall(name="Relate", args=["[1]", "[2]"]), RUNS, cap=3)
    assert len(capped.calls) == 3 and capped.capped == 1


def test_plan_question_rules_for_direct_rag():
    assert [q for q, _ in plan_question("Where was [1] born?", RUNS).calls] == ["Where was A born?", "Where was B born?"]
    assert len(plan_question("Did [1] meet [2]?", RUNS).calls) == 4
    assert plan_question("Who among [1] is tall?", RUNS).calls == [("Who among A, B is tall?", [])]
    assert plan_question("[1], [2] or [3]?", RUNS).calls == [("A, B, X, Y or P?", [])]
    assert plan_question("Where was [4] born?", RUNS).skipped
    assert plan_question("No refs here?", RUNS).calls == [("No refs here?", [])]


def test_algorithm_table_reads_as_the_paper_by_default():
    switches = {k: v for k, v in ALGORITHM_1.items() if isinstance(v, Switch)}
    assert {v.name for v in switches.values()} == {"closed_book_root"}
    # an Unknown operator and any [DR] outcome settle the node (no fallback in the paper)
    assert ALGORITHM_1[("operate", "empty")] is None
    assert all(ALGORITHM_1[("siblings", o)] is None for o in ("answered", "empty", "failed", "skipped"))
    assert ALGORITHM_1[("operate", "failed")] == "rag"
    assert ALGORITHM_1[("children", "empty")] == "select"
    assert ALGORITHM_1[("select", "fallback")] == "rag"


@pytest.mark.parametrize("n_sources,calls", [(2, 0), (3, 1)])
async def test_source_selection_only_with_three_sources(n_sources, calls):
    srcs = [InMemorySource(PASSAGES, name=n, kind=k) for n, k in
            [("wikipedia", "text"), ("google", "web"), ("wikidata", "kg")][:n_sources]]
    g, model = graph(reader(), srcs=srcs)
    await g.ainvoke({"question": Q})
    assert stages(model).count("source_selection") == 2 * calls
    if calls:  # the first referenced answer in place of [1], as the authors substitute it
        asked = [c["prompt"].rsplit("\nQ: ", 1)[-1].split("\nA:")[0] for c in model.calls
                 if c["stage"] == "source_selection"]
        assert asked == ["Who were the crew members of Apollo 11?", "Where was Neil Armstrong born?"]


# --- eval run picks the dataset's prompt pack ------------------------------------------------------
async def test_eval_run_uses_the_datasets_prompt_pack(tmp_path):
    from atomgraph.evaluation.datasets import Example, prompt_pack_for
    from atomgraph.evaluation.runner import EvalOptions, arun_eval

    assert prompt_pack_for("hotpotqa-dev-100") == "hotpotqa" and prompt_pack_for("2wiki-test-500") == "2wiki"
    assert prompt_pack_for("hipporag-musique") == "musique" and prompt_pack_for("blendqa") == "blendqa"
    assert prompt_pack_for("crag-test-500") == "crag" and prompt_pack_for("my/own.jsonl") is None
    model = atomr_scripted_model({Q: TREE}, answer=reader())
    srcs = [InMemorySource(PASSAGES, name="wikipedia")]
    examples = [Example(id="q1", question=Q, answers=["Wapakoneta"])]
    await arun_eval("atomr", examples, tmp_path / "run", EvalOptions(
        dataset_name="hotpotqa-dev-100", model=model, sources=srcs, settings=Settings(cache=False), progress=False))
    plan_prompt = next(c["prompt"] for c in model.calls if c["stage"] == "plan")
    assert "Dataset rules (HotpotQA)" in plan_prompt
    # told otherwise (the settings name a pack): that pack
    model = atomr_scripted_model({Q: TREE}, answer=reader())
    settings = Settings(cache=False, atomr={"prompt_pack": "musique"})
    await arun_eval("atomr", examples, tmp_path / "run2", EvalOptions(
        dataset_name="hotpotqa-dev-100", model=model, sources=srcs, settings=settings, progress=False))
    assert "Dataset rules (MuSiQue)" in next(c["prompt"] for c in model.calls if c["stage"] == "plan")


def test_search_descriptor_and_filter_condition_reach_the_executor_question():
    from atomgraph.nodes.atomr.node_reasoning import executor_question

    assert executor_question("Search", "What is Wild Strawberries?", ["Wild Strawberries", "1957 Swedish film"]) == \
        "What is Wild Strawberries? (1957 Swedish film)"
    assert executor_question("Search", "What is the 1957 Swedish film Wild Strawberries?",
                             ["Wild Strawberries", "1957 Swedish film"]) == "What is the 1957 Swedish film Wild Strawberries?"
    assert executor_question("Filter", "Which of A, B qualify?", ["A, B", "born in 1955"]) == \
        "Which of A, B qualify? (Filter condition: born in 1955)"
    assert executor_question("Relate", "Who directed X?", ["X", "director"]) == "Who directed X?"
