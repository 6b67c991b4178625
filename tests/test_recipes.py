"""Recipes: one file per reported paper setting, listed and run by `atomgraph eval run --recipe`."""

from __future__ import annotations

import json

import pytest

from atomgraph.cli import main
from atomgraph.errors import ConfigError
from atomgraph.evaluation.recipe import all_recipes, load_recipe, recipe_settings, resolve_dataset
from atomgraph.graphs.registry import method_names


def test_every_recipe_loads_with_a_registered_method_and_valid_settings():
    recipes = all_recipes()
    assert len(recipes) >= 40
    tables = {(r.paper.split()[0], r.table) for r in recipes}
    assert {("ATOMR", "Table 2"), ("KAR³", "Table 1"), ("KAR³", "Table 2"), ("ARM", "Table 1")} <= tables
    for r in recipes:
        assert r.method in method_names() and r.paper_value is not None
        if r.method != "arm":  # ARM's objects live in the shared data folder (checked below)
            s = recipe_settings(r)
            assert s.model or s.decoder_model
    atomr = load_recipe("atomr-t2-atomr-hotpotqa")
    assert atomr.paper_value == 71.27 and atomr.settings["model"] == "gpt-4o-2024-08-06"
    s = recipe_settings(atomr)
    assert (s.atomr.top_k, s.atomr.filter_threshold, s.sources) == (3, 0.5, ["wikipedia"])
    assert s.atomr.max_parallel == type(s.atomr)().max_parallel  # the section merged field by field
    kar3 = recipe_settings(load_recipe("kar3-t2-kar3-musique"))
    assert (kar3.kar3.max_chunks, kar3.kar3.atom_top_k, kar3.kar3.delta) == (5, 4, 0.5)
    assert kar3.model == "meta-llama/Llama-3.1-70B-Instruct"


def test_recipes_resolve_against_the_shared_data(shared_data):
    for r in all_recipes():
        resolve_dataset(r)
    arm = recipe_settings(load_recipe("arm-t1-l-spider"))
    assert arm.arm.objects.endswith("retrieval/spider/objects.jsonl") and arm.arm.k == 5


def test_list_shows_each_recipe_with_the_papers_number(capsys):
    assert main(["eval", "run", "--recipe", "--list"]) == 0
    out = capsys.readouterr().out
    assert "atomr-t2-atomr-2wiki" in out and "f1 78.72" in out
    assert "arm-t1-q-spider" in out and "perfect_recall 89.6" in out


def test_missing_dataset_and_unknown_recipe_are_clear_errors(tmp_path, capsys):
    bad = tmp_path / "mine.toml"
    bad.write_text('title = "x"\npaper = "p"\ntable = "T"\nmethod = "rag"\ndataset = "nowhere/q.jsonl"\n'
                   'metric = "f1"\npaper_value = 1.0\n[settings]\nmodel = "m"\n')
    with pytest.raises(ConfigError, match=r"names the dataset 'nowhere/q.jsonl', which is missing"):
        resolve_dataset(load_recipe(bad))
    assert main(["eval", "run", "--recipe", str(bad), "--model", "scripted:x.json"]) != 0
    assert "which is missing" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="unknown recipe 'atomr-t9'.*atomr-t2"):
        load_recipe("atomr-t9")
    assert main(["eval", "run", "--recipe", "atomr-t2-rag-hotpotqa", "--method", "kar3"]) != 0
    assert "contradicts recipe" in capsys.readouterr().err


def test_a_recipe_runs_end_to_end_with_a_scripted_model(shared_data, tmp_path, capsys):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"default": "So the answer is: Paris"}))
    out = tmp_path / "run"
    code = main(["eval", "run", "--recipe", "atomr-t2-cot-hotpotqa", "--model", f"scripted:{rules}",
                 "--limit", "2", "--out", str(out), "--no-progress"])
    assert code == 0
    printed = capsys.readouterr()
    assert "paper (ATOMR (KDD 2025), Table 2, CoT): f1 58.38" in printed.out
    assert "recipe atomr-t2-cot-hotpotqa" in printed.err
    meta = json.loads((out / "run.json").read_text())
    assert meta["method"] == "cot" and meta["dataset"] == "hotpotqa-test-500"
    assert meta["settings"]["model"] == "gpt-4o-2024-08-06" and meta["settings"]["cot"]["demonstrations"] == 2
    assert len((out / "predictions.jsonl").read_text().splitlines()) == 2


def test_a_recipe_is_sealed_against_the_environment(shared_data, tmp_path, capsys, monkeypatch):
    """ATOMGRAPH_* variables and atomgraph.toml do not leak into a recipe run; --set does, listed
    in run.json and printed; resuming under another configuration names the differing keys."""
    monkeypatch.setenv("ATOMGRAPH_TEMPERATURE", "0.7")
    monkeypatch.setenv("ATOMGRAPH_COT__DEMONSTRATIONS", "0")
    monkeypatch.setenv("ATOMGRAPH_STRUCTURED_OUTPUT", "true")
    (tmp_path / "atomgraph.toml").write_text('max_tokens = 77\n')
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"default": "So the answer is: Paris"}))
    out = tmp_path / "run"
    args = ["eval", "run", "--recipe", "atomr-t2-cot-hotpotqa", "--model", f"scripted:{rules}", "--limit", "1",
            "--out", str(out), "--no-progress"]
    assert main([*args, "--set", "max_tokens=64"]) == 0
    err = capsys.readouterr().err
    assert "--set max_tokens=64" in err
    assert "not applied" in err and "temperature=0.7" in err and "cot.demonstrations=0" in err
    assert "structured_output=True" in err and "max_tokens" not in err.split("not applied", 1)[1]
    meta = json.loads((out / "run.json").read_text())
    s = meta["settings"]
    assert (s["temperature"], s["cot"]["demonstrations"], s["structured_output"], s["max_tokens"]) == (0.0, 2, False, 64)
    assert meta["run"]["set"] == {"max_tokens": 64} and meta["run"]["recipe"] == "atomr-t2-cot-hotpotqa"
    assert meta["run"]["not_applied"]["temperature"] == 0.7
    # resuming under another effective configuration is refused, naming the keys
    assert main([*args, "--set", "max_tokens=65"]) != 0
    assert "max_tokens: 64 then, 65 now" in capsys.readouterr().err
    # an unknown key or a malformed item is one line
    assert main([*args, "--set", "atomr.nope=1"]) != 0
    assert "'atomr' has no setting 'nope'" in capsys.readouterr().err
    assert main([*args, "--set", "oops"]) != 0
    assert "expected KEY=VALUE" in capsys.readouterr().err


def test_a_recipe_is_sealed_against_dict_settings_run_choosing_variables_and_planted_data(
        shared_data, tmp_path, capsys, monkeypatch):
    """Dict-valued settings (stage caps, rate limits, prices) are sealed like the rest; the
    run-choosing variables (the shared data folder, ARM's index building) are not read by a recipe
    run and are listed as not applied; run.json records the evaluated files' paths and sha256 and
    the recipe's paper values."""
    import hashlib

    monkeypatch.setenv("ATOMGRAPH_STAGE_MAX_TOKENS", '{"cot": 7}')
    monkeypatch.setenv("ATOMGRAPH_RATE_LIMITS", '{"gpt-4o-2024-08-06": 0.01}')
    monkeypatch.setenv("ATOMGRAPH_PRICES", '{"m": [1.0, 2.0]}')
    monkeypatch.setenv("ATOMGRAPH_ARM_DENSE_SEARCH", "ann")
    planted = tmp_path / "planted" / "atomr" / "questions" / "single_source" / "HotpotQA"
    planted.mkdir(parents=True)
    (planted / "hotpotqa_test_500.jsonl").write_text(
        json.dumps({"id": "evil", "question": "EVIL: which planted question is this?", "answers": ["x"]}) + "\n")
    monkeypatch.setenv("ATOMGRAPH_SHARED_DATA", str(tmp_path / "planted"))
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"default": "So the answer is: Paris"}))
    out = tmp_path / "run"
    assert main(["eval", "run", "--recipe", "atomr-t2-cot-hotpotqa", "--model", f"scripted:{rules}", "--limit", "1",
                 "--out", str(out), "--no-progress"]) == 0
    ignored = capsys.readouterr().err.split("not applied", 1)[1].splitlines()[0]
    for said in ("stage_max_tokens={'cot': 7}", "rate_limits=", "prices=", "$ATOMGRAPH_ARM_DENSE_SEARCH='ann'",
                 "$ATOMGRAPH_SHARED_DATA="):
        assert said in ignored, (said, ignored)
    meta = json.loads((out / "run.json").read_text())
    assert (meta["settings"]["stage_max_tokens"], meta["settings"]["rate_limits"]) == ({}, {})
    (rec,) = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert rec["id"] != "evil"
    (data,) = meta["run"]["data"]
    assert data["path"] == str((shared_data / "atomr/questions/single_source/HotpotQA/hotpotqa_test_500.jsonl").resolve())
    assert data["sha256"] == hashlib.sha256(open(data["path"], "rb").read()).hexdigest()
    assert meta["run"]["paper_values"] == {"f1": 58.38} and meta["run"]["metric"] == "f1"
    assert main(["eval", "report", str(out)]) == 0  # ours beside the paper's, with the difference
    row = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| cot")][0]
    assert "| 58.38 (f1) | " in row and "DEGRADED" not in row
    f1 = float(row.split("|")[4])
    assert f"| {f1 - 58.38:+.2f} |" in row, row


def test_paper_true_beside_a_value_it_sets_is_a_conflict(tmp_path, capsys):
    from atomgraph.evaluation.recipe import apply_sets, parse_sets, sealed_defaults
    from atomgraph.state.arm import ArmContext
    from atomgraph.state.run import validate_params

    with pytest.raises(ConfigError, match=r"paper=true sets .*database_weight=0.0.*explicit database_weight=1.0"):
        apply_sets(sealed_defaults(), parse_sets(["arm.paper=true", "arm.database_weight=1.0"]))  # even the default
    assert apply_sets(sealed_defaults(), parse_sets(["arm.paper=true", "arm.relevance=cosine"])).arm.paper
    with pytest.raises(ConfigError, match="ArmContext parameters conflict: paper=true sets entity_links=False"):
        validate_params(ArmContext, {"paper": True, "entity_links": True})  # a run's context (Studio, a client)
    with pytest.raises(ValueError, match="coverage_weight=2.0 conflicts"):
        ArmContext(paper=True, coverage_weight=2.0)
    recipe = _recipe_file(tmp_path, str(tmp_path / "q.jsonl"), settings='model = "m"\n[settings.arm]\npaper = true\n')
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "1", "question": "Where?", "answers": ["Paris"]}) + "\n")
    assert main(["eval", "run", "--recipe", str(recipe), "--set", "arm.database_weight=0.5", "--no-progress",
                 "--out", str(tmp_path / "run")]) != 0
    err = capsys.readouterr().err.strip()
    assert "[arm] paper=true sets database_weight=0.0" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "run").exists()


def test_a_recipe_checks_what_its_setting_needs_before_any_model_call(shared_data, tmp_path, capsys, monkeypatch):
    """The README's recipe on a machine without its collection, key or endpoint: refused before the
    first model call, each missing part named with what provides it; --allow-degraded runs it,
    marked degraded in run.json and the closing lines, and not set beside the paper's number."""
    monkeypatch.setenv("ATOMGRAPH_CHROMA_PATH", str(tmp_path / "no-store"))
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ATOMGRAPH_OPENAI_API_KEY", "ATOMGRAPH_OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    out = tmp_path / "run"
    args = ["eval", "run", "--recipe", "atomr-t2-atomr-hotpotqa", "--limit", "1", "--out", str(out), "--no-progress"]
    assert main(args) != 0
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "cannot run its setting; missing:" in err and "knowledge source 'wikipedia'" in err, err
    assert "atomgraph index wikipedia" in err and "access to model 'gpt-4o-2024-08-06'" in err, err
    assert not out.exists()
    calls = tmp_path / "rules.json"
    calls.write_text(json.dumps({"default": "So the answer is: Paris"}))
    assert main([*args, "--model", f"scripted:{calls}"]) != 0  # a model given: the collection is still missing
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "knowledge source 'wikipedia'" in err and "access to model" not in err and not out.exists()
    rag = [*args[:3], "atomr-t2-rag-hotpotqa", *args[4:]]  # the same collection, a reply a scripted model can give
    main([*rag, "--model", f"scripted:{calls}", "--allow-degraded"])  # it runs (its question fails: no passages)
    printed = capsys.readouterr()
    assert "DEGRADED (--allow-degraded): missing knowledge source 'wikipedia'" in printed.err
    assert "DEGRADED: this run lacked 1 part(s)" in printed.out
    assert "— not comparable: this run is degraded" in printed.out
    meta = json.loads((out / "run.json").read_text())
    assert meta["run"]["degraded"][0].startswith("knowledge source 'wikipedia'")
    assert main(["eval", "report", str(out)]) == 0
    row = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| rag")][0]
    assert "(DEGRADED: not the setting; not comparable)" in row and "| 60.31 (f1) | not comparable |" in row, row
    # an endpoint that does not answer a probe is missing too
    dead = _recipe_file(tmp_path, str(shared_data / "atomr/questions/single_source/HotpotQA/hotpotqa_dev_100.jsonl"),
                        settings='model = "m"\nsources = ["wikidata"]\nwikidata_endpoint = "http://127.0.0.1:9/sparql"\n')
    dead.write_text(dead.read_text().replace('method = "cot"', 'method = "rag"'))
    assert main(["eval", "run", "--recipe", str(dead), "--model", f"scripted:{calls}", "--out", str(tmp_path / "r2"),
                 "--no-progress"]) != 0
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "knowledge source 'wikidata': the SPARQL endpoint http://127.0.0.1:9/sparql does not answer" in err, err


def test_table_3_has_a_recipe_per_row_and_dataset():
    t3 = {(r.row, r.dataset) for r in all_recipes() if r.paper.startswith("ATOMR") and r.table == "Table 3"}
    rows = {"Standard Prompting", "CoT", "Standard RAG", "Self-Ask", "ATOMR (ours)"}  # ProbTree, CoK: not implemented
    assert t3 == {(row, ds) for row in rows for ds in ("blendqa", "crag-test-500")}
    atomr = recipe_settings(load_recipe("atomr-t3-atomr-blendqa"))
    assert atomr.sources == ["wikipedia", "google", "wikidata"] and atomr.embedding_model == "all-MiniLM-L6-v2"
    assert load_recipe("atomr-t3-atomr-crag").paper_values["f1_multi-hop"] == 64.95
    assert recipe_settings(load_recipe("atomr-t2-atomr-2wiki")).atomr.prompt_pack == "2wiki"


def test_table_3_atomr_recipes_run_the_dataset_packs(shared_data, tmp_path, capsys, caplog):
    assert recipe_settings(load_recipe("atomr-t3-atomr-crag")).atomr.prompt_pack == "crag"
    assert recipe_settings(load_recipe("atomr-t3-atomr-blendqa")).atomr.prompt_pack == "blendqa"
    # a Table 3 BlendQA recipe, of any method, scores the set without the blendqa demonstration subset
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"default": "So the answer is: Paris"}))
    out = tmp_path / "run"
    assert main(["eval", "run", "--recipe", "atomr-t3-standard-blendqa", "--model", f"scripted:{rules}",
                 "--limit", "16", "--out", str(out), "--no-progress"]) == 0
    assert "2 question(s) left out" in caplog.text  # a warning of the run (logging), on stderr from the CLI
    meta = json.loads((out / "run.json").read_text())
    assert meta["demonstrations_left_out"] == ["kg-web_132-5", "kg-web_132-15"]
    assert len((out / "predictions.jsonl").read_text().splitlines()) == 14


FACTORY = '''
from pathlib import Path

from atomgraph.testing import ScriptedChatModel

MARK = Path(__file__).with_name("factory_called")


def make(settings):
    MARK.write_text("called")
    return ScriptedChatModel(default="So the answer is: from the factory", model_name="factory-model")
'''


def test_a_recipe_run_reads_no_model_factory_from_the_environment(shared_data, tmp_path, capsys, monkeypatch):
    """Sealed means the model object too: $ATOMGRAPH_MODEL_FACTORY (and the other ATOMGRAPH_*
    settings) do not reach a recipe run, which names each as not applied; an explicit
    --model-factory does, printed at start and recorded in run.json."""
    (tmp_path / "leaky_factory.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("ATOMGRAPH_MODEL_FACTORY", "leaky_factory:make")
    monkeypatch.setenv("ATOMGRAPH_MODEL", "leaky-model")
    monkeypatch.setenv("ATOMGRAPH_SOURCES", "google")
    monkeypatch.setenv("ATOMGRAPH_COT__DEMONSTRATIONS", "0")
    monkeypatch.setenv("ATOMGRAPH_ATOMR__KEEP_RAW_REPLY", "true")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"default": "So the answer is: Paris"}))
    out = tmp_path / "run"
    args = ["eval", "run", "--recipe", "atomr-t2-cot-hotpotqa", "--limit", "1", "--no-progress"]
    assert main([*args, "--model", f"scripted:{rules}", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert not (tmp_path / "factory_called").exists()  # the factory was never imported nor called
    ignored = err.split("not applied", 1)[1].splitlines()[0]
    for said in ("$ATOMGRAPH_MODEL_FACTORY='leaky_factory:make'", "model='leaky-model'", "sources=['google']",
                 "cot.demonstrations=0", "atomr.keep_raw_reply=True"):
        assert said in ignored, (said, ignored)
    meta = json.loads((out / "run.json").read_text())
    assert meta["run"]["not_applied"]["$ATOMGRAPH_MODEL_FACTORY"] == "leaky_factory:make"
    assert "model_factory" not in meta["run"] and meta["run"]["options"] == {"--model": f"scripted:{rules}"}
    assert f"  --model scripted:{rules}" in err
    s = meta["settings"]
    assert (s["model"], s["sources"], s["cot"]["demonstrations"], s["atomr"]["keep_raw_reply"]) == (
        "gpt-4o-2024-08-06", ["wikipedia"], 2, False)
    (rec,) = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert rec["predicted"] == "Paris"
    # named explicitly, the factory is the run's model: printed, recorded, and not "not applied"
    out2 = tmp_path / "run2"
    assert main([*args, "--model-factory", "leaky_factory:make", "--out", str(out2)]) == 0
    err = capsys.readouterr().err
    assert "--model-factory leaky_factory:make" in err and "$ATOMGRAPH_MODEL_FACTORY" not in err
    meta = json.loads((out2 / "run.json").read_text())
    assert meta["run"]["model_factory"] == "leaky_factory:make"
    assert meta["fingerprint"]["models"] == {"model": "factory-model"}
    (rec,) = [json.loads(line) for line in (out2 / "predictions.jsonl").read_text().splitlines()]
    assert rec["predicted"] == "from the factory"


def _recipe_file(tmp_path, dataset: str, extra: str = "", settings: str = 'model = "m"\n'):
    p = tmp_path / "mine.toml"
    p.write_text(f'title = "x"\npaper = "p"\ntable = "T"\nmethod = "cot"\ndataset = "{dataset}"\nmetric = "f1"\n'
                 f'paper_value = 1.0\n{extra}[settings]\n{settings}')
    return p


@pytest.mark.parametrize("extra, settings, says", [
    ('datset = "x"\n', 'model = "m"\n', "has unknown key(s) 'datset'"),
    ("", 'model = "m"\nbogus = 1\n', "invalid settings: bogus: Extra inputs are not permitted"),
    ("", 'model = "m"\n[settings.cot]\nnope = 1\n', "invalid settings: cot.nope"),
    ("", 'model = "m"\n[settings.cot]\ndemonstrations = "two"\n', "invalid settings: cot.demonstrations"),
    ("", 'temperature = "hot"\n', "invalid settings: temperature"),
    ("", 'temperature = nan\n', "settings.temperature is nan: a recipe holds finite numbers only"),
    ("", 'model = "m"\n[settings.cot]\ndemonstrations = inf\n', "settings.cot.demonstrations is inf"),
    ("", "sources = " + "[" * 50_000 + "]" * 50_000 + "\n", "nested deeper than 100 levels"),
    ('needs = 5\n', 'model = "m"\n', "'needs' must be a list of text"),
    ('notes = 5\n', 'model = "m"\n', "'notes' must be text, not int"),
    ('paper_values = {f1 = "high"}\n', 'model = "m"\n', "paper value 'f1' must be a number, not str"),
])
def test_a_recipe_with_an_unknown_key_is_one_line(tmp_path, capsys, extra, settings, says):
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": "1", "question": "Where?", "answers": ["Paris"]}) + "\n")
    recipe = _recipe_file(tmp_path, str(data), extra, settings)
    assert main(["eval", "run", "--recipe", str(recipe), "--out", str(tmp_path / "run"), "--no-progress"]) != 0
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "run").exists()


def test_a_recipe_naming_a_missing_named_dataset_is_one_line(tmp_path, capsys):
    recipe = _recipe_file(tmp_path, "hotpotqa-dev-100")  # --data-dir: a data folder without the dataset's file
    assert main(["eval", "run", "--recipe", str(recipe), "--data-dir", str(tmp_path), "--no-progress"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == f"--data-dir {tmp_path}" and len(err) == 2, err
    assert "names dataset 'hotpotqa-dev-100', which is missing" in err[1], err


def test_a_recipe_over_a_dataset_without_a_declared_setting_runs_the_general_one_and_says_so(tmp_path, capsys):
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": "1", "question": "Where?", "answers": ["Paris"]}) + "\n")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"default": "So the answer is: Paris"}))
    recipe = _recipe_file(tmp_path, str(data))
    out = tmp_path / "run"
    assert main(["eval", "run", "--recipe", str(recipe), "--model", f"scripted:{rules}", "--out", str(out),
                 "--no-progress"]) == 0
    assert "no declared setting for this dataset: the general one" in capsys.readouterr().err
    meta = json.loads((out / "run.json").read_text())
    assert meta["dataset_setting"]["setting"] == "general" and meta["dataset_setting"]["declared"] is False


def test_a_server_run_reads_no_model_factory_from_the_environment(tmp_path, capsys, monkeypatch):
    """`eval run --server` runs the server's models: $ATOMGRAPH_MODEL_FACTORY is not imported
    (a factory cannot be sent), and the run says so instead of refusing a model it never asked for."""
    import socket

    monkeypatch.setenv("ATOMGRAPH_MODEL_FACTORY", "no_such_module_anywhere:make")
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": "1", "question": "Where?", "answers": ["Paris"]}) + "\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    assert main(["eval", "run", "--method", "standard", "--dataset", str(data), "--out", str(tmp_path / "run"),
                 "--server", f"http://127.0.0.1:{port}", "--no-progress"]) != 0
    err = capsys.readouterr().err
    assert "$ATOMGRAPH_MODEL_FACTORY not applied: a server run uses the server's models" in err
    assert "cannot be reached" in err and "no_such_module_anywhere" not in err.split("not applied", 1)[1]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999"])
def test_non_finite_numbers_are_no_setting(monkeypatch, value):
    from atomgraph.errors import ConfigError
    from atomgraph.settings import Settings
    from atomgraph.state.run import validate_params
    from atomgraph.state.kar3 import Kar3Context

    monkeypatch.setenv("ATOMGRAPH_TEMPERATURE", value)
    with pytest.raises(ConfigError, match="temperature.*finite number"):
        Settings.load()
    monkeypatch.delenv("ATOMGRAPH_TEMPERATURE")
    monkeypatch.setenv("ATOMGRAPH_KAR3__DELTA", value)
    with pytest.raises(ConfigError, match="delta"):
        Settings.load()
    with pytest.raises(ConfigError, match="delta"):
        validate_params(Kar3Context, {"delta": float(value)})
