"""The ``arm`` graph: each stage, the method output contract, replayed keywords, and a model
whose output is unreadable (or whose calls fail) at every stage."""

from __future__ import annotations

import json

import pytest

from langchain_core.messages import AIMessage

from atomgraph.errors import ParseError
from atomgraph.graphs.arm import arm_retriever, build_arm_graph
from atomgraph.nodes.arm.self_verification import aggregate_votes, span_logprobs
from atomgraph.prompts.arm import parse_keywords, parse_ngram, parse_selection
from atomgraph.state.run import OUTPUT_KEYS
from atomgraph.testing import ScriptedChatModel
from atomgraph.tools.arm_index import ArmIndex
from atomgraph.tools.objects import Question

from tests.arm_graph_fixtures import OBJECTS, QUESTION


@pytest.fixture(scope="module")
def index() -> ArmIndex:
    return ArmIndex.build(OBJECTS, use_cache=False)


def good_model() -> ScriptedChatModel:
    return ScriptedChatModel(stages={
        "arm_decompose": '["Heisenberg doctoral advisor", "died city"]',
        "arm_align": lambda prompt: prompt.split("Options:\n", 1)[1].splitlines()[0],
        "arm_verify": '{"reasoning": "advisor, then where he died", "objects": ["p1", "p2"]}',
        "arm_answer": "Sommerfeld died in Munich.\nSo the answer is: Munich",
    })


# --- parsers ------------------------------------------------------------------------------------

def test_parse_keywords_reads_json_lines_and_commas():
    assert parse_keywords('["a b", "c"]') == ["a b", "c"]
    assert parse_keywords('```json\n{"keywords": ["x", "y"]}\n```') == ["x", "y"]
    assert parse_keywords("Keywords:\n- singer name\n- concert year") == ["singer name", "concert year"]
    assert parse_keywords("singer, concert, year") == ["singer", "concert", "year"]
    for bad in ("", "   ", "[]", "!!! ???"):
        with pytest.raises(ParseError):
            parse_keywords(bad)
    # a keyword holding a lone surrogate or a control character never reaches a later prompt (with three
    # drafts, three unencodable verification requests would trip the circuit breaker before the answer's refusal):
    # the call path reads no stage's reply that holds one (nodes/call.py: read_reply)
    from atomgraph.nodes.call import Reply, read_reply
    from atomgraph.prompts.arm import DECOMPOSE
    from atomgraph.state.run import LLMCall

    for reply in ('["Ulm\ud800", "Munich"]', '["Munich", "\x1b[31mUlm"]'):
        got = read_reply(DECOMPOSE, {"question": "Where?"}, Reply(AIMessage(reply), LLMCall(role="decoder")), 160)
        assert got.value is None and "control_chars" in got.call.parse_error


def test_parse_ngram_and_selection():
    assert parse_ngram('{"ngram": "singer id"}') == "singer id"
    assert parse_ngram('"singer id"\nbecause ...') == "singer id"
    with pytest.raises(ParseError):
        parse_ngram("  ")
    assert parse_selection('{"reasoning": "r", "objects": ["p1"]}') == {"objects": ["p1"], "reasoning": "r"}
    assert parse_selection('["p1", "p2"]')["objects"] == ["p1", "p2"]
    assert parse_selection("They connect.\nSelected: p1, p2")["objects"] == ["p1", "p2"]
    with pytest.raises(ParseError):
        parse_selection("hmm")


# --- voting and log-probabilities ------------------------------------------------------------------

def draft(n: int, ids: list[str], rel: dict[str, float] | None = None) -> dict:
    return {"draft": n, "ids": ids, "relevance": rel or {}}


def test_the_paper_vote_ranks_every_draft_object_selected_ones_first():
    # §3.3: an object's votes are its occurrences across all drafts (softmaxed); the verifiers' selections weigh them
    drafts = [draft(0, ["a", "b", "c", "d", "e"], {"d": 0.9, "e": 0.2}),
              draft(1, ["a", "b", "c", "d", "f"], {"f": 0.95}),
              draft(2, ["a", "c", "d", "e", "g"], {"g": 0.1})]
    verdicts = [{"draft": 0, "selected": ["b"]}, {"draft": 1, "selected": ["b", "f"]}, {"draft": 2, "selected": ["g"]}]
    votes, how = aggregate_votes(drafts, verdicts, vote_weight=0.5)
    assert how == "frequency"
    # selected first by confidence (b: 2 drafts, kept twice; f and g: 1 draft each, f the more relevant), then the
    # draft-only objects by their occurrences (a, c, d: 3 drafts; ties by relevance), then e (2 drafts)
    assert [v["id"] for v in votes] == ["b", "f", "g", "d", "a", "c", "e"]
    by = {v["id"]: v for v in votes}
    assert (by["a"]["votes"], by["a"]["selected"], by["a"]["weight"]) == (3, 0, 0.0)
    assert (by["b"]["votes"], by["b"]["selected"], by["b"]["weight"]) == (2, 2, 1.0)
    assert all(by[x]["confidence"] > by[y]["confidence"] for x in "bfg" for y in "acde")
    assert [v["confidence"] for v in votes] == sorted((v["confidence"] for v in votes), reverse=True)
    # the final set reaches k when the drafts hold k objects, though the verifiers kept three
    assert len([v["id"] for v in votes][:5]) == 5
    # with log-probabilities a selection weighs the probability of its name's tokens
    weighted = [{**verdicts[0], "weights": {"b": -0.1}}, {**verdicts[1], "weights": {"b": -0.1, "f": -2.0}}, verdicts[2]]
    votes, how = aggregate_votes(drafts, weighted, vote_weight=0.5)
    # g's vote, its name not among the returned tokens, weighs 1; f, kept once with its name at probability
    # e^-2, falls below the objects of all three drafts: the paper's weighted sum, not "kept first" at any cost
    assert how == "logprobs" and [v["id"] for v in votes] == ["g", "b", "d", "a", "c", "f", "e"]
    # nothing kept: the drafts' own votes (occurrences, then relevance), as the LLM-free path ranks them
    from atomgraph.nodes.arm.self_verification import vote_drafts

    votes, _ = aggregate_votes(drafts, [], vote_weight=0.5)
    assert [v["id"] for v in votes] == vote_drafts(drafts, 10) == ["d", "a", "c", "e", "b", "f", "g"]


def test_vote_weight_zero_is_the_vote_of_the_drafts_alone():
    # benchmarks/arm_reaggregate.py --vote-weights reads vote_weight=0 as "verification=false on the same drafts"
    from atomgraph.nodes.arm.self_verification import vote_drafts

    drafts = [draft(0, ["a", "b", "c", "d", "e"], {"d": 0.9, "e": 0.2}),
              draft(1, ["a", "b", "c", "d", "f"], {"f": 0.95}),
              draft(2, ["a", "c", "d", "e", "g"], {"g": 0.1})]
    verdicts = [{"selected": ["g"], "weights": {"g": -0.01}}, {"selected": ["f", "g"]}, {"selected": ["e"]}]
    votes, _ = aggregate_votes(drafts, verdicts, vote_weight=0.0)
    assert [v["id"] for v in votes][:5] == vote_drafts(drafts, 5) == ["d", "a", "c", "e", "b"]
    votes, _ = aggregate_votes(drafts, verdicts, vote_weight=0.5)
    # at the default the kept objects come first: e (two drafts), then f and g (one each; g's name at e^-0.01)
    assert [v["id"] for v in votes][:3] == ["e", "f", "g"]


def test_vote_weighted_by_logprobs_can_reorder_equal_counts():
    verdicts = [{"selected": ["a", "b"], "weights": {"a": -3.0, "b": -0.01}},
                {"selected": ["a", "b"], "weights": {"a": -2.5, "b": -0.02}}]
    votes, how = aggregate_votes([draft(0, ["a", "b"]), draft(1, ["a", "b"])], verdicts, vote_weight=0.5)
    assert how == "logprobs"
    assert [v["id"] for v in votes] == ["b", "a"]


def test_span_logprobs_averages_the_tokens_of_a_name():
    toks = [('{"', -0.1), ("objects", -0.1), ('":["', -0.1), ("p", -1.0), ("1", -3.0), ('"]}', -0.1)]
    got = span_logprobs(toks, ["p1", "zz"])
    assert got == {"p1": pytest.approx(-2.0)}
    assert span_logprobs([], ["p1"]) == {}


# --- the graph -----------------------------------------------------------------------------------

def test_graph_returns_the_method_contract_with_retrieved_ids(index):
    model = good_model()
    out = build_arm_graph(model=model, objects=index).invoke({"question": QUESTION}, context={"k": 3})
    assert set(out) == set(OUTPUT_KEYS)
    assert out["answer"] == "Munich" and out["error"] is None
    # the paper's vote (§3.3): the verified objects first, then the drafts' other objects, k in all
    assert out["retrieved_ids"][:2] == ["p1", "p2"] and len(out["retrieved_ids"]) == 3
    assert out["retrieved_titles"][:2] == ["Werner Heisenberg", "Arnold Sommerfeld"]
    trace = out["trace"]
    assert trace["method"] == "arm" and trace["keyword_source"] == "model"
    assert trace["decoding"]["mode"] == "free"  # a scripted model offers no constraint
    assert all(index.has_ngram(a["ngram"]) for a in trace["aligned"]) and trace["aligned"]
    assert trace["drafts"] and all(d["mip"]["status"] in ("optimal", "feasible", "greedy") for d in trace["drafts"])
    assert trace["verdicts"][0]["selected"] == ["p1", "p2"]
    assert {v["id"] for v in trace["votes"] if v["selected"]} == {"p1", "p2"}
    assert {v["id"] for v in trace["votes"]} == {i for d in trace["drafts"] for i in d["ids"]}
    stages = [c["stage"] for c in out["llm_calls"]]
    assert stages[0] == "arm_decompose" and stages[-1] == "arm_answer"
    assert {"arm_align", "arm_verify"} <= set(stages)
    assert {c["source"] for c in out["retriever_calls"]} == {"arm:keyword"}
    assert [a["keyword"] for a in trace["alignment"]] and all(
        set(a) == {"keyword", "ngrams", "scores", "mode"} and all(index.has_ngram(g) for g in a["ngrams"])
        for a in trace["alignment"])
    from atomgraph.render import render_trace

    shown = render_trace(trace)  # what `atomgraph ask --method arm` prints
    assert "keywords (model): Heisenberg doctoral advisor, died city" in shown
    # every draft verified as keeping p1 (the base set's draft and its expansion's): one vote each
    assert "aligned n-grams: " in shown and f"vote p1: {len(trace['drafts'])} votes" in shown
    assert trace["drafts"][0]["steps"] == 0  # §3.2.2: the first draft is the base set itself


def test_replayed_keywords_need_no_model_for_alignment(index):
    model = good_model()
    graph = build_arm_graph(model=model, objects=index)
    out = graph.invoke({"question": QUESTION, "keywords": ["Sommerfeld", "Heisenberg"]}, context={"k": 2, "answer": False})
    assert out["trace"]["keyword_source"] == "replayed"
    assert {"arm_decompose", "arm_align", "arm_answer"}.isdisjoint(c["stage"] for c in model.calls)
    assert {a["ngram"] for a in out["trace"]["aligned"]} >= {"sommerfeld", "heisenberg"}
    assert out["answer"] == "" and out["error"] is None and len(out["retrieved_ids"]) == 2


def test_verdicts_keep_only_the_drafts_objects(index):
    model = good_model()
    model.stages["arm_verify"] = '{"reasoning": "", "objects": ["p2", "p3", "ghost"]}'
    out = build_arm_graph(model=model, objects=index).invoke({"question": QUESTION}, context={"k": 2})
    d = out["trace"]["drafts"][0]
    assert set(d["ids"]) <= set(d["pool"])
    v = out["trace"]["verdicts"][0]
    assert set(v["selected"]) <= set(d["ids"]) and "ghost" in v["ignored"]


@pytest.mark.parametrize("reply", ["", RuntimeError("server down")])
def test_unreadable_output_at_every_stage_gives_a_clear_trace(index, reply):
    model = ScriptedChatModel(default=reply)
    out = build_arm_graph(model=model, objects=index).invoke({"question": QUESTION}, context={"k": 3})
    assert set(out) == set(OUTPUT_KEYS)
    problems = " | ".join(out["trace"]["problems"])
    for stage in ("decompose", "verify", "answer"):
        assert stage in problems, problems
    assert out["trace"]["keyword_source"] == "question_ngrams"
    assert out["answer"] == "" and out["error"]
    assert len(out["retrieved_ids"]) == 3  # the drafts' own votes
    assert all(index.has_ngram(a["ngram"]) for a in out["trace"]["aligned"])
    json.dumps(out["trace"])  # the trace is plain data


@pytest.mark.parametrize("reply", ["I cannot help with that.", "{ broken json", "```json\n[1, 2"])
def test_prose_or_broken_json_everywhere_falls_back_stage_by_stage(index, reply):
    out = build_arm_graph(model=ScriptedChatModel(default=reply), objects=index).invoke({"question": QUESTION})
    problems = " | ".join(out["trace"]["problems"])
    for stage in ("decompose", "verify"):
        assert stage in problems, problems
    assert out["retrieved_ids"] and all(index.has_ngram(a["ngram"]) for a in out["trace"]["aligned"])


def test_verifications_that_keep_nothing_are_recorded_not_silent(index):
    model = good_model()
    model.stages["arm_verify"] = '{"reasoning": "", "objects": []}'
    out = build_arm_graph(model=model, objects=index).invoke({"question": QUESTION}, context={"k": 2, "answer": False})
    problems = " | ".join(out["trace"]["problems"])
    assert "kept no object" in problems and out["trace"]["decoding"]["vote"].startswith("draft votes")
    assert out["retrieved_ids"]  # the drafts' own votes, said


def test_connected_selection_cuts_what_no_draft_link_joins_and_says_so(index):
    """§3.3: the verifier checks "that selected objects are connected". The switch cuts a selection
    to its largest part joined by the draft's own links, records the cut and counts it in the summary."""
    from atomgraph.evaluation.retrieval import EvalRun, format_summary
    from atomgraph.nodes.arm.self_verification import connected_part

    links = [{"a": "t1", "b": "t2", "c": 0.4}, {"a": "t2", "b": "t3", "c": 0.3}]
    assert connected_part(["t3", "x", "t2"], links, {}) == (["t3", "t2"], ["x"])
    assert connected_part(["t1", "t3"], links, {}) == (["t1"], ["t3"])  # joined only through t2, which it left out
    assert connected_part(["t1", "t3"], links, {"t3": -0.2, "t1": -1.5}) == (["t3"], ["t1"])  # the surer name
    assert connected_part(["t1", "t2"], links, {}) == (["t1", "t2"], [])

    model = good_model()
    model.stages["arm_verify"] = '{"reasoning": "", "objects": ["p1", "p3"]}'  # the drafts link p1-p2-p3
    graph = build_arm_graph(model=model, objects=index)
    out = graph.invoke({"question": QUESTION}, context={"k": 3, "answer": False})
    assert all(v["selected"] == ["p1", "p3"] and "unconnected" not in v for v in out["trace"]["verdicts"])  # off
    out = graph.invoke({"question": QUESTION}, context={"k": 3, "answer": False, "connected_selection": True})
    for d, v in zip(out["trace"]["drafts"], out["trace"]["verdicts"]):
        assert {tuple(sorted((x["a"], x["b"]))) for x in d["links"]} == {("p1", "p2"), ("p2", "p3")}
        assert v["selected"] == ["p1"] and v["unconnected"] == ["p3"]
    assert out["retrieved_ids"][0] == "p1" and len(out["retrieved_ids"]) == 3
    ia = graph.invoke({"question": QUESTION}, context={"k": 3, "answer": False, "connected_selection": True,
                                                       "structure_alignment": False})
    assert ia["trace"]["verdicts"] and all("unconnected" not in v for v in ia["trace"]["verdicts"])  # no links drawn
    run = EvalRun("arm", 3, {}, [{"trace": out["trace"]}])
    n = len(out["trace"]["verdicts"])
    assert f"verifications: {n}, 0 unreadable (left out of the vote), 0 kept no object, {n} cut to their " \
           f"connected part ({n} objects; connected_selection)" in format_summary(run)
    from atomgraph.state.arm import ArmContext

    assert ArmContext(connected_selection=True).extensions() == {**ArmContext().extensions(), "connected_selection": True}
    with pytest.raises(ValueError, match="paper=true sets connected_selection=False"):  # a conflict, said
        ArmContext(connected_selection=True, paper=True)


def test_an_echoed_prompt_is_never_keywords(index):
    echo = '["names of entities", "attributes, relations", "denaroqq", "Keywords"]'
    model = good_model()
    model.stages["arm_decompose"] = echo
    out = build_arm_graph(model=model, objects=index).invoke({"question": QUESTION}, context={"k": 2, "answer": False})
    assert out["trace"]["keyword_source"] == "question_ngrams"
    assert "echoed prompt" in " | ".join(out["trace"]["problems"])
    model.stages["arm_decompose"] = '["Heisenberg", "names of entities"]'
    out = build_arm_graph(model=model, objects=index).invoke({"question": QUESTION}, context={"k": 2, "answer": False})
    assert out["trace"]["keywords"] == ["Heisenberg"] and out["trace"]["keyword_source"] == "model"
    assert "dropped 1 keyword" in " | ".join(out["trace"]["problems"])


def test_bad_question_is_an_error_not_a_crash(index):
    out = build_arm_graph(model=good_model(), objects=index).invoke({"question": "   "})
    assert out["error"] and "empty" in out["error"] and out["retrieved_ids"] == []


def test_missing_or_bad_objects_come_back_as_data(monkeypatch, tmp_path):
    """A configuration problem is the output's ``error``, not an exception at invoke."""
    monkeypatch.delenv("ATOMGRAPH_ARM__OBJECTS", raising=False)
    out = build_arm_graph(model=good_model()).invoke({"question": QUESTION})
    assert "ATOMGRAPH_ARM__OBJECTS" in out["error"] and out["retrieved_ids"] == [] and out["answer"] == ""
    missing = str(tmp_path / "nonexistent" / "o.jsonl")
    out = build_arm_graph(model=good_model()).invoke({"question": QUESTION}, context={"objects": missing})
    assert "does not exist" in out["error"]
    out = build_arm_graph(model=good_model()).invoke({"question": QUESTION}, context={"objects": "/nonexistent/o.jsonl"})
    assert "outside the data folders" in out["error"]  # a run's context names files under data_dirs only
    bad = tmp_path / "objects.jsonl"
    bad.write_text('{"id": "x", "kind": "passage"}\nnot json\n')
    out = build_arm_graph(model=good_model()).invoke({"question": QUESTION}, context={"objects": str(bad)})
    assert out["error"] and "objects.jsonl" in out["error"] and out["retrieved_ids"] == []


def test_objects_from_the_run_context_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ATOMGRAPH_ARM_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "objects.jsonl"
    path.write_text("\n".join(json.dumps(o.to_json()) for o in OBJECTS[:5]) + "\n")
    out = build_arm_graph(model=good_model()).invoke({"question": QUESTION}, context={"objects": str(tmp_path), "k": 2})
    assert out["retrieved_ids"] and set(out["retrieved_ids"]) <= {o.id for o in OBJECTS[:5]}  # read from the file
    assert out["answer"] == "Munich"


def test_llm_retriever_for_the_retrieve_command(index):
    retrieve = arm_retriever(index, model=good_model())
    res = retrieve(Question("q1", QUESTION, ("p1", "p2")))
    # the verified objects first, then the drafts' others (§3.3), k = 5 in all; scores are the vote's confidences
    assert res.method == "arm" and res.ids[:2] == ["p1", "p2"] and len(res.ids) == len(res.scores) == 5
    assert res.scores == sorted(res.scores, reverse=True) and res.scores[1] > res.scores[2]
    assert res.trace["answered"] is False and res.trace["llm_calls"] >= 3


def test_arm_is_a_registered_method_in_langgraph_json():
    from pathlib import Path

    from atomgraph.graphs.registry import method_descriptions

    assert "arm" in method_descriptions() and method_descriptions()["arm"]
    graphs = json.loads((Path(__file__).resolve().parents[1] / "langgraph.json").read_text())["graphs"]
    assert graphs["arm"] == "./graphs/arm.py:graph"


def test_alignment_by_trie_beam_with_the_bundled_local_model(index, tmp_path, monkeypatch):
    """§3.2.1 on the real in-process model: each keyword becomes a list of corpus n-grams
    decoded under the token trie of every n-gram; the record's shape and the invariant hold."""
    monkeypatch.setenv("ATOMGRAPH_TRIE_DIR", str(tmp_path / "tries"))
    graph = build_arm_graph(model="local", objects=index)
    out = graph.invoke({"question": QUESTION},
                       context={"answer": False, "verification": False, "drafts": 1, "max_keywords": 3})
    trace = out["trace"]
    assert trace["decoding"]["mode"] == "local_trie_beam", trace["decoding"]
    stages = [c["stage"] for c in out["llm_calls"]]
    assert "arm_align_list" in stages or trace["keyword_source"] != "model"
    for a in trace["alignment"]:
        assert set(a) == {"keyword", "ngrams", "scores", "mode"} and a["ngrams"]
        assert all(index.has_ngram(g) for g in a["ngrams"])  # contiguous words of some object
    assert out["error"] is None and len(out["retrieved_ids"]) <= 5


def test_constrained_decomposition_switch_is_recorded_for_a_model_not_in_process(index):
    """decompose_constraint="ngrams" decodes under a token trie, which only the in-process model has:
    any other model decomposes freely (the paper's default) and the trace says so."""
    out = build_arm_graph(model=good_model(), objects=index).invoke(
        {"question": QUESTION}, context={"k": 2, "answer": False, "decompose_constraint": "ngrams"})
    assert out["trace"]["keyword_source"] == "model"
    assert "decompose_constraint='ngrams' needs an in-process model" in " | ".join(out["trace"]["problems"])


def test_constrained_decomposition_with_the_bundled_local_model(index, tmp_path, monkeypatch):
    """decompose_constraint="ngrams" on the real in-process model: the keywords are a list decoded by
    the trie beam, each one a 1-3-gram of the question or a corpus n-gram (mechanics, not quality)."""
    from atomgraph.tools.arm_index import ngrams, tokens

    monkeypatch.setenv("ATOMGRAPH_TRIE_DIR", str(tmp_path / "tries"))
    out = build_arm_graph(model="local", objects=index).invoke(
        {"question": QUESTION}, context={"answer": False, "verification": False, "max_keywords": 3,
                                         "decompose_constraint": "ngrams"})
    trace = out["trace"]
    assert [c["stage"] for c in out["llm_calls"]][0] == "arm_decompose_list"
    assert trace["keyword_source"] == "model_ngrams", trace["problems"]
    asked = set(ngrams(tokens(QUESTION), 3))
    assert trace["keywords"] and all(k in asked or index.has_ngram(k) for k in trace["keywords"]), trace["keywords"]
    assert out["error"] is None


def test_question_keywords_switch_adds_the_questions_own_keywords(index):
    """add_question_keywords (switch, off by default): the keywords the pipeline aligns are the model's
    and, with the switch on, the question's own (the LLM-free path's), those aligned without the model."""
    import asyncio

    from atomgraph.nodes.arm.information_alignment import question_keywords
    from atomgraph.state.arm import ArmContext

    def model() -> ScriptedChatModel:
        m = good_model()
        m.stages["arm_decompose"] = '["Heisenberg doctoral advisor"]'
        return m

    own = question_keywords(QUESTION, index, ArmContext())
    assert own and "heisenberg doctoral advisor" not in own
    off = build_arm_graph(model=model(), objects=index).invoke({"question": QUESTION}, context={"k": 2, "answer": False})
    assert off["trace"]["keywords"] == ["Heisenberg doctoral advisor"] and off["trace"]["added_keywords"] == []
    assert {a["keyword"] for a in off["trace"]["alignment"]} <= {"Heisenberg doctoral advisor"}

    on = asyncio.run(build_arm_graph(model=model(), objects=index).ainvoke(
        {"question": QUESTION}, context={"k": 2, "answer": False, "add_question_keywords": True}))
    trace = on["trace"]
    assert trace["keyword_source"] == "model" and trace["keywords"][0] == "Heisenberg doctoral advisor"
    assert trace["added_keywords"] == own and trace["keywords"][1:] == own
    aligned = {a["keyword"] for a in trace["alignment"]}
    assert set(own) <= aligned and "Heisenberg doctoral advisor" in aligned
    # the model aligned its own keyword only; the question's were aligned as the LLM-free path aligns them
    n_align = sum(c["stage"] == "arm_align" for c in on["llm_calls"])
    assert n_align > 0 and n_align == sum(c["stage"] == "arm_align" for c in off["llm_calls"])
    assert all(a["mode"] == "none" for a in trace["aligned"] if a["keyword"] in own)
    assert all(index.has_ngram(a["ngram"]) for a in trace["aligned"])
    assert "add_question_keywords" in trace["decoding"]["why"]
    assert ArmContext(add_question_keywords=True).extensions() == {
        "database_weight": 1.0, "coverage_weight": 1.0, "table_compatibility_scale": 0.33, "link_count": "once",
        "add_question_keywords": True}
    with pytest.raises(ValueError, match="add_question_keywords=True conflicts"):
        ArmContext(paper=True, add_question_keywords=True)


def test_the_context_form_is_grouped_by_paper_stage():
    """Studio draws the context schema as one flat form: ArmContext's fields come in the order of
    the paper's stages, each description opens with its stage, and ``langgraph_nodes`` names graph
    nodes that read it; the context itself stays flat (``context={"k": 5}``)."""
    from dataclasses import fields

    from atomgraph.graphs.arm import STEPS, graph
    from atomgraph.state.arm import STAGES, ArmContext

    assert len(fields(ArmContext)) <= 40
    props = graph.get_context_jsonschema()["properties"]
    titles = [title for title, _ in STAGES.values()]
    seen = []
    for f in fields(ArmContext):
        p = props[f.name]
        title = next(t for t in titles if p["description"].startswith(t + ": "))
        assert set(p["langgraph_nodes"]) <= set(STEPS), f.name
        if not seen or seen[-1] != title:
            assert title not in seen, f"{f.name}: stage {title!r} is split"
            seen.append(title)
    assert seen == titles
