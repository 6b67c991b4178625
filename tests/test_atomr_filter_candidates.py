"""Filter chooses among whole answers: its candidates are the referenced
node's answer list as it stands, never a string split again on "," or " and ". Checked on
every Filter leaf of the authors' released HotpotQA/2Wiki trees (pure planning) and by a
scripted-model run of released trees whose referenced answers hold commas and "and"."""

from __future__ import annotations

import json

import pytest

from atomgraph.graphs.atomr import build_atomr_graph
from atomgraph.nodes.atomr.execution import filter_candidates, plan_operator, refs_in
from atomgraph.prompts.atomr import TreeParseError, parse_tree
from atomgraph.settings import Settings
from atomgraph.state.atomr import NodeRun, OperatorCall
from atomgraph.testing import answer_reply, atomr_scripted_model
from atomgraph.tools.memory_source import InMemorySource
from oxigraph_server import oxigraph_endpoint, oxigraph_server  # noqa: F401 - fixtures

# Whole answers that a splitter on "," / " and " would break apart.
WHOLE = ["Wapakoneta, Ohio", "Glen Ridge, New Jersey", "Rome, Italy", "Pride and Prejudice"]


def released(shared_data, name):
    path = shared_data / "atomr" / "released" / f"{name}_test_500_trees.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def filter_leaves(shared_data, name):
    """(index, tree, node id) of every parsed Filter leaf of a released file."""
    out = []
    for rec in released(shared_data, name):
        try:
            tree = parse_tree(rec["reasoning_tree"], rec["question"])
        except TreeParseError:
            continue
        for i, node in tree.nodes.items():
            if node.operator is not None and node.operator.name == "Filter":
                out.append((rec, tree, i))
    return out


def answered(i, answers):
    return NodeRun(id=i, kind="operator", question="q", answers=list(answers), answer=", ".join(answers))


@pytest.mark.parametrize("name", ["hotpotqa", "2Wiki"])
def test_every_released_filter_leaf_keeps_whole_answers(shared_data, name):
    leaves = filter_leaves(shared_data, name)
    referencing = 0
    for rec, tree, i in leaves:
        node = tree.nodes[i]
        runs = {j: answered(j, WHOLE) for j in tree.nodes if j != i}
        planned = plan_operator(node.question, node.operator, runs)
        listed = refs_in(node.operator.args[0], runs) if node.operator.args else []
        if listed:
            referencing += 1
            # the referenced list as it stands: four candidates, none split
            assert planned.candidates == WHOLE, (rec["index"], node.operator.render())
        else:  # a literal argument is one candidate (the authors' reading), never split
            assert all(c in (node.operator.args[0].strip(), ) or node.operator.args[0].lstrip().startswith("[")
                       for c in planned.candidates), (rec["index"], node.operator.render())
    assert leaves and referencing >= len(leaves) * 0.8  # most Filter leaves take an earlier answer


def test_filter_candidates_rules():
    runs = {1: answered(1, WHOLE), 2: answered(2, ["Bath", "Wapakoneta, Ohio"])}
    assert filter_candidates("[1]", [1], runs) == WHOLE
    assert filter_candidates("[1], [2]", [1, 2], runs) == WHOLE + ["Bath"]  # both lists, each answer once
    assert filter_candidates("Pride and Prejudice, Emma", [], runs) == ["Pride and Prejudice, Emma"]
    assert filter_candidates('["Pride and Prejudice", "Emma"]', [], runs) == ["Pride and Prejudice", "Emma"]
    assert filter_candidates("", [], runs) == []
    flt = plan_operator("Which of [1] is in Ohio?", OperatorCall(name="Filter", args=["[1]", "in Ohio"]), runs)
    assert flt.candidates == WHOLE and len(flt.calls) == 1
    # the model still reads the list as one comma-separated text
    assert flt.calls[0][1][0] == "Wapakoneta, Ohio, Glen Ridge, New Jersey, Rome, Italy, Pride and Prejudice"


PASSAGES = [{"title": t, "text": f"{t} is a place or a book mentioned here, in Ohio or not."} for t in WHOLE]


@pytest.mark.parametrize("name", ["hotpotqa", "2Wiki"])
async def test_released_filter_trees_run_one_retrieval_per_whole_answer(shared_data, name):
    """Scripted runs of the first three released trees whose Filter takes an earlier answer:
    the Filter node retrieves once per whole answer per text source, and the sub-call records
    those whole answers as its candidates."""
    picked = [(rec, tree, i) for rec, tree, i in filter_leaves(shared_data, name)
              if refs_in(tree.nodes[i].operator.args[0], {j: None for j in tree.nodes})][:3]
    assert picked
    ran = 0
    for rec, tree, i in picked:
        def answer(stage, prompt):
            return answer_reply(*WHOLE)

        model = atomr_scripted_model({rec["question"]: rec["reasoning_tree"]}, answer=answer)
        graph = build_atomr_graph(model=model, sources=[InMemorySource(PASSAGES, name="wikipedia")],
                                  settings=Settings(cache=False))
        out = await graph.ainvoke({"question": rec["question"]})
        node = next(n for n in out["trace"]["nodes"] if n["id"] == i)
        if not node["subcalls"]:  # a referenced node ended empty upstream: nothing to filter
            continue
        ran += 1
        (sub, *_) = node["subcalls"]
        assert sub["candidates"] == WHOLE, (rec["index"], node["operator"])
        per_candidate = [c["query"] for c in out["retriever_calls"] if c["query"].startswith("Filter(")
                         and any(c["query"].startswith(f"Filter({w},") for w in WHOLE)]
        assert len([q for q in per_candidate]) >= len(WHOLE)
        assert not [c for c in out["retriever_calls"] if c["query"].startswith(("Filter(Ohio", "Filter(New Jersey",
                                                                                "Filter(Italy", "Filter(Prejudice"))]
    assert ran >= 1


KG_QUESTION = "Which of the things named in the list is located in the United States?"
KG_TREE = {
    KG_QUESTION: ["1. Which places and books does the list name?", "2. Which of [1] is located in the United States?"],
    "1. Which places and books does the list name?": 'Search("Paris")',
    "2. Which of [1] is located in the United States?": 'Filter([1], "located in the United States")',
}
KG_WHOLE = ["Paris, Texas", "Paris, France", "Pride and Prejudice"]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_wikidata_filter_gets_the_whole_answers_on_a_real_sparql_server(oxigraph_endpoint, mode):
    """A scripted ATOMR run over Wikidata on a real SPARQL server (Oxigraph on loopback): node 1
    answers three whole answers holding "," and " and "; the Filter node hands them to the
    knowledge graph as a list, which looks up each one whole: no "Texas", "Pride" or "Prejudice"."""
    from atomgraph.tools.sparql_backends import SparqlEndpoint
    from atomgraph.tools.wikidata_source import WikidataSource

    prompts = []

    def answer(stage, prompt):
        prompts.append((stage, prompt))
        return answer_reply(*KG_WHOLE) if stage == "search" else answer_reply("Paris, Texas")

    source = WikidataSource(SparqlEndpoint(oxigraph_endpoint, user_agent="atomgraph-tests/0.1 (test suite)",
                                           timeout=30, retries=2))
    model = atomr_scripted_model({KG_QUESTION: KG_TREE}, answer=answer, sources_reply="Wikidata")
    graph = build_atomr_graph(model=model, sources=[source], settings=Settings(cache=False))
    out = graph.invoke({"question": KG_QUESTION}) if mode == "sync" else await graph.ainvoke({"question": KG_QUESTION})
    nodes = {n["id"]: n for n in out["trace"]["nodes"]}
    assert nodes[1]["answers"] == KG_WHOLE
    (sub,) = nodes[2]["subcalls"]
    assert sub["candidates"] == KG_WHOLE
    (call,) = [c for c in out["retriever_calls"] if c["source"] == "wikidata" and c["query"].startswith("Filter(")]
    assert json.dumps(KG_WHOLE) in call["query"] and not call.get("error")
    # the executor's knowledge: each whole candidate's country, judged; nothing for a fragment
    (filter_prompt,) = [p for s, p in prompts if s == "filter"]
    assert "(Paris, country, United States)" in filter_prompt and "(Paris, country, France)" in filter_prompt
    assert nodes[2]["answers"] == ["Paris, Texas"]
