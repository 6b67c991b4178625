"""LLM-free ARM retrieval (§3.2), the dense/BM25 baselines, ArmContext, the index cache and
`atomgraph retrieve` on a small real objects file (and on ../shared data when present)."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from pydantic import ValidationError

from atomgraph.cli import main
from atomgraph.evaluation.retrieval import id_scores, question_groups
from atomgraph.graphs.arm import arm_retrieve, retrieve
from atomgraph.nodes.arm.pipeline import bm25_retrieve, dense_retrieve
from atomgraph.state.arm import ArmContext
from atomgraph.tools.arm_index import ArmIndex, object_fields, tokens
from atomgraph.tools.objects import load_objects, load_questions, parse_object
from tests.arm_fixtures import OBJECTS, QUESTIONS, write_jsonl

OBJECTS_PARSED = [parse_object(o, "fixture") for o in OBJECTS]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return ArmIndex.build([parse_object(o, "fixture") for o in OBJECTS], cache_dir=tmp_path_factory.mktemp("arm-cache"))


@pytest.fixture()
def files(tmp_path):
    return write_jsonl(tmp_path / "objects.jsonl", OBJECTS), write_jsonl(tmp_path / "questions.jsonl", QUESTIONS)


def test_arm_trace_and_bridge_passage(index, files):
    qs = load_questions(files[1])
    res = arm_retrieve(qs[0], index, ArmContext(k=3))
    t = res.trace
    assert t["keyword_source"] == "question_ngrams" and "inception" in t["keywords"]
    assert all(index.has_ngram(a["ngram"]) for a in t["aligned"])
    assert t["mip"]["status"] in {"optimal", "feasible", "greedy"} and t["mip"]["solve_ms"] >= 0
    assert t["chosen"] == res.ids and len(res.ids) == 3
    assert {"p-inception", "p-zimmer"} <= set(res.ids)  # the composer is linked from the film's passage
    assert {c["id"] for c in t["candidates"]} >= set(res.ids)


def test_replayed_and_given_keywords(index, files):
    qs = load_questions(files[1])
    res = arm_retrieve(qs[2], index, ArmContext(k=3))
    assert res.trace["keyword_source"] == "replayed" and res.trace["keywords"] == ["singers:name", "concerts:concert name"]
    assert {a["ngram"] for a in res.trace["aligned"]} >= {"singer", "name"}
    assert set(res.ids) == set(qs[2].gold_ids)  # joinable tables of one database
    given = arm_retrieve("How many pets?", index, ArmContext(k=1), keywords=["pets:pet age", 7])
    assert given.trace["keyword_source"] == "replayed" and given.ids == ["pets_1#sep#Pets"]


@pytest.mark.parametrize("text", ["", "   ", "\x00", '"; DROP TABLE x', "🤖" * 50, "zzzz qqqq"])
def test_hostile_questions_still_return_k_objects(index, text):
    for method in ("dense", "bm25", "arm"):
        res = retrieve(method, text, index, 2)
        assert len(res.ids) <= 2 and all(isinstance(i, str) for i in res.ids)
    res = arm_retrieve(text, index, ArmContext(k=2))
    if res.trace["problems"] and res.trace["problems"][0].startswith("question:"):
        assert not res.ids and not text.strip("\x00 ")  # refused with its reason (an empty question), not a crash
    else:
        assert len(res.ids) == 2


def test_baselines(index):
    assert dense_retrieve("composer of the film Inception", index, 2).ids[0] in {"p-inception", "p-zimmer"}
    assert bm25_retrieve("Frankfurt stock exchange", index, 1).ids == ["p-frankfurt"]
    with pytest.raises(ValueError):
        retrieve("colbert", "x", index, 2)


def test_arm_context_fields_are_described_and_bounded():
    assert all(f.kw_only for f in fields(ArmContext))
    schema = __import__("pydantic").TypeAdapter(ArmContext).json_schema()
    assert all(p.get("description") for p in schema["properties"].values())
    assert ArmContext().drafts == 3 and ArmContext().k == 5
    with pytest.raises(ValidationError):
        ArmContext.validated(k=0)
    with pytest.raises(ValidationError):
        ArmContext.validated(bm25_weight=1.5)
    assert ArmContext.validated(k=7).k == 7


def test_index_cache_is_keyed_by_content(tmp_path):
    objs = [parse_object(o, "fixture") for o in OBJECTS]
    a = ArmIndex.build(objs, cache_dir=tmp_path)
    b = ArmIndex.build(objs, cache_dir=tmp_path)
    assert a.key == b.key and len(list(tmp_path.iterdir())) == 1
    assert (b.chunk_vectors == a.chunk_vectors).all() and b.mentions == a.mentions and len(b.trie) == len(a.trie)
    changed = ArmIndex.build(objs[:-1], cache_dir=tmp_path)
    assert changed.key != a.key and len(list(tmp_path.iterdir())) == 2
    (tmp_path / a.key / "meta.json").write_text("{broken")
    assert ArmIndex.build(objs, cache_dir=tmp_path).has_ngram("hans zimmer")  # a damaged cache is rebuilt


def test_scores_and_groups():
    assert id_scores(["a", "b", "a"], ["a", "c"]) == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "perfect_recall": 0.0}
    assert id_scores([], ["a"])["f1"] == 0.0 and id_scores(["A"], ["a"])["recall"] == 0.0  # ids compare exactly
    q = load_questions.__globals__["Question"]("q", "?", ("t1", "t2"))
    assert question_groups(q, {"t1": "table", "t2": "table"}) == ["all", "multi_gold", "multi_table"]


def test_cli_retrieve_json_and_out(files, tmp_path, capsys):
    objects, questions = files
    out = tmp_path / "run"
    rc = main(["retrieve", "--method", "arm", "--objects", str(objects), "--questions", str(questions), "--k", "3",
               "--cache", str(tmp_path / "cache"), "--out", str(out), "--json", "--set", "vote_weight=0.6"])
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["questions"] == 4 and payload["context"]["vote_weight"] == 0.6
    groups = payload["groups"]
    assert set(groups) >= {"all", "single_gold", "multi_gold", "multi_table", "multi_passage"}
    assert groups["multi_table"]["questions"] == 1 and 0 <= groups["all"]["perfect_recall"] <= 100
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["id"] for r in lines] == ["q1", "q2", "q3", "q4"] and all(len(r["retrieved"]) == 3 for r in lines)
    assert lines[2]["trace"]["keyword_source"] == "replayed"
    assert json.loads((out / "summary.json").read_text())["method"] == "arm"
    for method in ("dense", "bm25"):
        assert main(["retrieve", "--method", method, "--objects", str(objects), "--questions", str(questions),
                     "--cache", str(tmp_path / "cache"), "--limit", "2"]) == 0
        text = capsys.readouterr().out
        assert f"method {method}, k = 5" in text and "PR" in text


def test_cli_retrieve_every_limit_and_no_keywords(files, tmp_path, capsys):
    objects, questions = files
    out = tmp_path / "run"
    assert main(["retrieve", "--method", "arm", "--objects", str(objects), "--questions", str(questions), "--no-llm",
                 "--cache", str(tmp_path / "cache"), "--every", "2", "--limit", "1", "--out", str(out)]) == 0
    assert [json.loads(x)["id"] for x in (out / "results.jsonl").read_text().splitlines()] == ["q1"]
    assert main(["retrieve", "--method", "arm", "--objects", str(objects), "--questions", str(questions), "--no-llm",
                 "--cache", str(tmp_path / "cache"), "--every", "2", "--no-keywords", "--out", str(out / "b")]) == 0
    lines = [json.loads(x) for x in (out / "b" / "results.jsonl").read_text().splitlines()]
    assert [r["id"] for r in lines] == ["q1", "q3"]  # q3 carries keywords: ignored
    assert lines[1]["trace"].get("keyword_source") != "replayed"
    assert main(["retrieve", "--objects", str(objects), "--questions", str(questions), "--every", "0"]) == 2
    assert "--every" in capsys.readouterr().err


def test_cli_retrieve_errors_are_one_line(files, tmp_path, capsys):
    objects, questions = files
    bad = tmp_path / "bad.jsonl"
    bad.write_text(objects.read_text() + '{"id": "x", "kind": "table"}\n')
    assert main(["retrieve", "--objects", str(bad), "--questions", str(questions)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("atomgraph: error: ") and f"{bad}:14:" in err and "Traceback" not in err
    assert main(["retrieve", "--objects", str(objects), "--questions", str(questions), "--set", "k1=3"]) == 2
    assert "--set 'k1=3'" in capsys.readouterr().err
    assert main(["retrieve", "--objects", str(objects), "--questions", str(questions), "--set", "bm25_weight=2"]) == 2
    assert "bm25_weight" in capsys.readouterr().err


def test_cli_on_shared_spider(shared_data, tmp_path, capsys):
    folder = shared_data / "retrieval" / "spider"
    if not (folder / "objects.jsonl").is_file():
        pytest.skip(f"{folder} is absent")
    rc = main(["retrieve", "--method", "arm", "--objects", str(folder / "objects.jsonl"), "--questions",
               str(folder / "questions.jsonl"), "--limit", "30", "--cache", str(tmp_path / "cache"), "--json"])
    assert rc == 0
    out = capsys.readouterr()
    payload = json.loads(out.out)
    assert payload["questions"] == 30 and payload["errors"] == 0 and payload["groups"]["all"]["recall"] > 50
    assert len(load_objects(folder / "objects.jsonl")) == payload["objects"]
    # what of the run is not the paper's setting: said before the run, and in the JSON
    from atomgraph.state.arm import ArmContext

    assert payload["extensions"] == ArmContext().extensions() and payload["extensions"]
    said = [x for x in out.err.splitlines() if x.startswith("ARM settings: the paper's, except ")]
    assert len(said) == 1 and all(f"{k}={v}" in said[0] for k, v in payload["extensions"].items())


def test_cli_retrieve_arm_uses_the_graph_when_a_model_is_given(files, tmp_path, capsys):
    objects, questions = files
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [
        ["stage:arm_decompose", '["singer", "concert"]'],
        ["stage:arm_align", "singer"],
        ["stage:arm_verify", '{"reasoning": "", "objects": []}'],
    ]}))
    common = ["retrieve", "--method", "arm", "--objects", str(objects), "--questions", str(questions), "--k", "3",
              "--cache", str(tmp_path / "cache"), "--json"]
    # the verifier keeps nothing: the drafts' own votes (said in problems)
    assert main([*common, "--model", f"scripted:{rules}", "--out", str(tmp_path / "llm")]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["llm"] is True and payload["errors"] == 0
    lines = [json.loads(x) for x in (tmp_path / "llm" / "results.jsonl").read_text().splitlines()]
    # what the run did besides its scores, counted in --json and summary.json alike: every verification kept nothing
    counts = payload["counts"]
    verdicts = sum(len(r["trace"]["verdicts"]) for r in lines)
    assert counts["verifications"] == {"read": verdicts, "unreadable": 0, "kept_nothing": verdicts, "cut": 0,
                                       "cut_objects": 0} and verdicts >= len(lines)
    assert counts["problems"] == len(lines) and counts["mips"]["solved"] == sum(len(r["trace"]["drafts"]) for r in lines)
    assert sum(counts["distinct_drafts"]["histogram"].values()) == len(lines)
    assert json.loads((tmp_path / "llm" / "summary.json").read_text())["counts"] == counts
    assert all(len(r["retrieved"]) == 3 for r in lines)
    for r in lines:  # the alignment invariant, checked from the --out records
        for a in r["trace"]["alignment"]:
            assert set(a) == {"keyword", "ngrams", "scores", "mode"} and len(a["ngrams"]) == len(a["scores"])
            assert all(any(f" {g} " in " " + " ".join(tokens(f)) + " " for o in OBJECTS_PARSED for f in object_fields(o))
                       for g in a["ngrams"])
    assert any(r["trace"]["llm_calls"] > 0 for r in lines)
    assert main([*common, "--model", f"scripted:{rules}", "--no-llm"]) == 0
    assert json.loads(capsys.readouterr().out)["llm"] is False


def test_database_relevance_lifts_the_tables_of_the_best_database():
    from atomgraph.nodes.arm.structure_alignment import database_relevance

    objs = [parse_object(o, "fixture") for o in OBJECTS]
    by_id = {o.id: o for o in objs}
    picked = [by_id[i] for i in ("concert_singer#sep#singer", "pets_1#sep#Pets", "concert_singer#sep#concert",
                                  "pets_1#sep#Has_Pet", "p-nolan")]
    R = [1.0, 0.6, 0.3, 0.5, 0.4]
    out = database_relevance(picked, R, 1.0)
    # each table gets its database's best R (concert_singer 1.0, pets_1 0.6); a passage gets nothing
    assert out.tolist() == pytest.approx([2.0, 1.2, 1.3, 1.1, 0.4])
    assert out[2] > out[1]  # a weak table of the best database now beats a strong table of another
    assert database_relevance(picked, R, 0.0).tolist() == R  # off
    assert database_relevance([], [], 1.0).tolist() == []
    with pytest.raises(ValidationError):
        ArmContext.validated(database_weight=-1)


def test_cli_retrieve_bm25_builds_no_embeddings(files, tmp_path, capsys, monkeypatch):
    """`retrieve --method bm25` pays only for BM25: no embedding model is loaded, nothing is embedded."""
    import atomgraph.embeddings as E

    def refuse(*a, **k):
        raise AssertionError("bm25 retrieval loaded an embedding model")

    monkeypatch.setattr(E, "embedding_model", refuse)
    objects, questions = files
    assert main(["retrieve", "--method", "bm25", "--objects", str(objects), "--questions", str(questions),
                 "--no-cache", "--limit", "2"]) == 0
    assert "method bm25, k = 5" in capsys.readouterr().out


# --- the paper's setting is one switch; nothing silent ----------------------------------------------

def test_paper_switch_turns_every_extension_off_at_once():
    from atomgraph.state.arm import PAPER

    assert ArmContext().extensions() == {"database_weight": 1.0, "coverage_weight": 1.0,  # the measured extensions on
                                         "table_compatibility_scale": 0.33, "link_count": "once"}
    ctx = ArmContext.validated(paper=True)
    assert ctx.extensions() == {} and all(getattr(ctx, k) == v for k, v in PAPER.items())
    assert ArmContext.validated(paper=True, relevance="cosine").extensions() == {}  # the paper's value: no conflict
    with pytest.raises(ValueError, match="coverage_weight=2.0, relevance='mix', served_alignment='shortlist' conflicts"):
        ArmContext.validated(paper=True, coverage_weight=2.0, relevance="mix", served_alignment="shortlist")
    assert ArmContext().relevance == "cosine" and ArmContext().served_alignment == "grammar"  # the paper's by default


def test_relevance_is_the_cosine_by_default_and_mix_is_a_switch(index):
    q = "Where was the composer of the film Inception born?"
    cos = arm_retrieve(q, index, ArmContext(k=3))
    dense = {index.objects[i].id: float(s) for i, s in enumerate(index.dense_scores(q))}
    assert cos.trace["candidates"] and all(c["relevance"] == pytest.approx(dense[c["id"]], abs=1e-3)
                                           for c in cos.trace["candidates"])
    mix = arm_retrieve(q, index, ArmContext(k=3, relevance="mix"))
    mixed = {c["id"]: c["relevance"] for c in mix.trace["candidates"]}
    assert all(0 <= r <= 1 for r in mixed.values()) and any(  # min-max normalised BM25 and cosine
        abs(mixed[c["id"]] - c["relevance"]) > 1e-3 for c in cos.trace["candidates"] if c["id"] in mixed)
    # the per-keyword queries have their own weight: R_i's does not move the base set
    a = arm_retrieve(q, index, ArmContext(k=3, relevance="mix", bm25_weight=0.0))
    assert [c["id"] for c in a.trace["candidates"]] == [c["id"] for c in mix.trace["candidates"]]


def test_unaligned_keywords_and_a_dense_only_base_set_are_recorded(index):
    res = arm_retrieve("How many pets?", index, ArmContext(k=2), keywords=["qqqxzzv"])
    problems = " | ".join(res.trace["problems"])
    assert "'qqqxzzv': no corpus n-gram" in problems and "embedding alone" in problems
    assert len(res.ids) == 2 and res.trace["llm"] is False


def test_retrieve_without_a_model_says_so_first(files, tmp_path, capsys, monkeypatch):
    objects, questions = files
    for var in ("ATOMGRAPH_MODEL", "ATOMGRAPH_DECODER_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    assert main(["retrieve", "--method", "arm", "--objects", str(objects), "--questions", str(questions), "--json",
                 "--cache", str(tmp_path / "cache"), "--limit", "1", "--no-llm"]) == 0
    got = capsys.readouterr()
    # the first line after the progress lines: the models loaded at the start, the index build and the priming
    # (theirs printed when a stage runs past 5 s: a loaded machine)
    said = [line for line in got.err.strip().splitlines()
            if not line.startswith(("ARM index:", "ARM:", "loading ", "loaded "))]
    assert said[0].startswith("ARM without a model (--no-llm)")
    payload = json.loads(got.out)
    assert payload["llm"] is False and payload["llm_free_because"] == "--no-llm" and payload["context"]["llm"] is False
    assert main(["retrieve", "--method", "arm", "--objects", str(objects), "--questions", str(questions),
                 "--cache", str(tmp_path / "cache"), "--limit", "2", "--no-llm"]) == 0
    out = capsys.readouterr().out
    assert "distinct drafts per question: mean" in out  # every ARM run says how many differed
    assert "MIPs: " in out and "stopped at the time limit (10 s; mip_time_limit_s)" in out  # and whether CBC's limit bound


def test_a_mip_stopped_by_its_time_limit_is_a_problem_and_counted(index, monkeypatch):
    """A draft whose MIP stopped at mip_time_limit_s (a scripted CBC outcome here) says so in the
    trace's problems and in the run summary; the feasible solution is still used."""
    import dataclasses

    from atomgraph.evaluation.retrieval import EvalRun, format_summary
    from atomgraph.nodes.arm import structure_alignment

    real = structure_alignment.solve_structures
    monkeypatch.setattr(structure_alignment, "solve_structures",
                        lambda *a, **kw: [dataclasses.replace(r, status="feasible") for r in real(*a, **kw)])
    res = arm_retrieve("Where was the composer of the film Inception born?", index, ArmContext(k=2, mip_time_limit_s=3))
    assert len(res.ids) == 2
    stopped = [p for p in res.trace["problems"] if "time limit" in p]
    assert stopped and len(stopped) == len(res.trace["drafts"])
    assert "stopped at the 3 s time limit (mip_time_limit_s); its feasible solution is used" in stopped[0]
    run = EvalRun("arm", 2, {"all": {"questions": 1, "objects": 2.0, "precision": 0.0, "recall": 0.0, "f1": 0.0,
                                     "perfect_recall": 0.0}}, [{"trace": res.trace}])
    n = len(res.trace["drafts"])
    assert f"MIPs: {n} solved, {n} stopped at the time limit (3 s; mip_time_limit_s): best feasible solution used" \
        in format_summary(run)
