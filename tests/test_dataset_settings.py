"""Dataset settings: each dataset declares the paper's setting (prompt pack,
sources, answer type); eval run uses it unless overridden and prints it; the Wikidata
query-program call happens only when Wikidata is a selected source."""

from __future__ import annotations

import json

from atomgraph.cli import main
from atomgraph.evaluation.datasets import apply_dataset_setting, dataset_setting, describe_applied
from atomgraph.settings import Settings, get_settings


def test_each_dataset_declares_its_setting():
    hp = dataset_setting("hotpotqa-dev-100")
    assert (hp.prompt_pack, hp.sources, hp.declared) == ("hotpotqa", ["wikipedia"], True)
    assert dataset_setting("2wiki-test-500").sources == ["wikipedia"]
    assert dataset_setting("musique-dev-100").prompt_pack == "musique"
    assert dataset_setting("blendqa").sources == ["wikipedia", "google", "wikidata"]
    assert dataset_setting("crag-dev-100").sources == ["wikipedia", "google", "wikidata"]
    other = dataset_setting("my/own.jsonl")
    assert not other.declared and other.prompt_pack == "general"


def test_the_setting_applies_unless_overridden():
    settings = get_settings()
    s, ctx, applied = apply_dataset_setting("atomr", "hotpotqa-dev-100", settings)
    assert s.sources == ["wikipedia"] and ctx == {"prompt_pack": "hotpotqa"}
    assert describe_applied(applied).startswith("dataset setting hotpotqa: prompt pack hotpotqa; sources wikipedia")
    told = settings.model_copy(update={"sources": ["wikipedia", "wikidata"]})
    s, ctx, applied = apply_dataset_setting("atomr", "hotpotqa-dev-100", told)
    assert s.sources == ["wikipedia", "wikidata"] and "the run's settings" in applied["sources"]
    pack = Settings.model_validate({**settings.model_dump(), "atomr": {"prompt_pack": "musique"}})
    _, ctx, applied = apply_dataset_setting("atomr", "hotpotqa-dev-100", pack)
    assert ctx == {} and applied["prompt_pack"].startswith("musique (the run's settings")
    _, _, applied = apply_dataset_setting("rag", "my/own.jsonl", settings)
    assert describe_applied(applied).startswith("no declared setting for this dataset: the general one")


def test_eval_run_prints_and_records_the_setting(shared_data, tmp_path, capsys):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"default": "So the answer is: Paris"}))
    out = tmp_path / "run"
    assert main(["eval", "run", "--method", "cot", "--dataset", "hotpotqa-dev-100", "--model", f"scripted:{rules}",
                 "--limit", "1", "--out", str(out), "--no-progress"]) == 0
    assert "cot on hotpotqa-dev-100: dataset setting hotpotqa: sources wikipedia" in capsys.readouterr().err
    meta = json.loads((out / "run.json").read_text())
    assert meta["settings"]["sources"] == ["wikipedia"] and meta["dataset_setting"]["setting"] == "hotpotqa"


async def test_demonstration_questions_are_left_out_of_the_split_evaluated(shared_data, tmp_path, caplog):
    """2wiki-dev-100 holds 10 of the 2wiki pack's demonstrations among its first 20 questions."""
    from atomgraph.evaluation.runner import EvalOptions, arun_eval
    from atomgraph.testing import atomr_scripted_model
    from atomgraph.tools.memory_source import InMemorySource

    model = atomr_scripted_model(lambda prompt: "no plan here")
    await arun_eval("atomr", "2wiki-dev-100", tmp_path / "run", EvalOptions(
        limit=20, model=model, progress=False,
        sources=[InMemorySource([{"title": "x", "text": "y"}], name="wikipedia")], settings=Settings(cache=False),
        dataset_name="2wiki-dev-100"))
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert len(meta["demonstrations_left_out"]) == 10 and meta["total"] == 10
    assert len((tmp_path / "run" / "predictions.jsonl").read_text().splitlines()) == 10
    assert "10 question(s) left out: they are demonstrations of the '2wiki' prompt pack" in caplog.text


def test_crag_and_blendqa_declare_their_own_packs():
    crag, blend = dataset_setting("crag-test-500"), dataset_setting("blendqa-kg-web")
    assert (crag.prompt_pack, crag.demonstrations_in_split) == ("crag", False)
    assert (blend.prompt_pack, blend.demonstrations_in_split) == ("blendqa", True)
    _, ctx, applied = apply_dataset_setting("atomr", "blendqa", get_settings())
    assert ctx == {"prompt_pack": "blendqa"}
    assert describe_applied(applied).startswith("dataset setting blendqa: prompt pack blendqa; sources wikipedia, "
                                                "google, wikidata")


async def test_atomr_on_crag_uses_the_crag_pack_in_every_stage_and_leaves_out_its_demonstrations(
        shared_data, tmp_path, caplog):
    """crag-dev-100 holds the crag pack's demonstrations (7 among its first 20); crag-test-500 none."""
    from atomgraph.evaluation.runner import EvalOptions, arun_eval
    from atomgraph.testing import answer_reply, atomr_scripted_model
    from atomgraph.tools.memory_source import InMemorySource

    seen: dict[str, list[str]] = {}

    def plan(prompt: str) -> str:  # a one-leaf plan for the question asked
        seen.setdefault("plan", []).append(prompt)
        question = prompt.rsplit("Question: ", 1)[1].split("\n", 1)[0].strip()
        return json.dumps({question: 'Relate("x", "y")'})

    def answer(stage: str, prompt: str) -> str:  # Relate's reply is unreadable: its node goes to direct RAG
        seen.setdefault(stage, []).append(prompt)
        return "Born somewhere, says the passage.\nThat is all it gives." if stage == "relate" else answer_reply("ok")

    model = atomr_scripted_model(plan, answer)
    src = [InMemorySource([{"title": "x", "text": "y"}], name="wikipedia")]
    await arun_eval("atomr", "crag-dev-100", tmp_path / "run", EvalOptions(
        limit=20, model=model, progress=False, sources=src, settings=Settings(cache=False),
        dataset_name="crag-dev-100"))
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["prompt_pack"] == "crag" and meta["dataset_setting"]["prompt_pack"] == "crag"
    assert len(meta["demonstrations_left_out"]) == 7 and meta["total"] == 13
    assert "08e48056-1191-42d4-a5d0-0d39acce629a" in meta["demonstrations_left_out"]
    assert len((tmp_path / "run" / "predictions.jsonl").read_text().splitlines()) == 13
    assert "7 question(s) left out: they are demonstrations of the 'crag' prompt pack" in caplog.text
    # the planner shows the CRAG demonstrations; Relate and the fallback's direct RAG the CRAG examples and rules
    assert len(seen["plan"]) == 13
    assert all("who was head coach of the lakers in kobe bryant's rookie year?" in p for p in seen["plan"])
    assert len(seen["relate"]) == 13 and all("Dataset rules (CRAG)" in p and "47,004,501" in p for p in seen["relate"])
    assert len(seen["direct_rag"]) == 13
    assert all("Dataset rules (CRAG)" in p and "Stephen Herek" in p for p in seen["direct_rag"])
    # none of the pack's demonstrations is in the split Table 3 evaluates
    test_run = tmp_path / "test-run"
    await arun_eval("atomr", "crag-test-500", test_run, EvalOptions(
        limit=5, model=model, progress=False, sources=src, settings=Settings(cache=False),
        dataset_name="crag-test-500"))
    assert json.loads((test_run / "run.json").read_text())["demonstrations_left_out"] == []


def test_every_method_leaves_the_blendqa_demonstration_subset_out(shared_data, tmp_path, capsys, caplog):
    """BlendQA has no dev split: the blendqa pack is written on 21 of its questions, which a run of
    any method leaves out (2 of the first 16: kg-web_132-5 and -15), saying how many."""
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"default": "So the answer is: Paris"}))
    out = tmp_path / "run"
    assert main(["eval", "run", "--method", "cot", "--dataset", "blendqa", "--model", f"scripted:{rules}",
                 "--limit", "16", "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "cot on blendqa: 2 question(s) left out: they are demonstrations of the 'blendqa' prompt pack" in caplog.text
    assert "dataset setting blendqa" in err
    meta = json.loads((out / "run.json").read_text())
    assert meta["demonstrations_left_out"] == ["kg-web_132-5", "kg-web_132-15"] and meta["total"] == 14
    assert len((out / "predictions.jsonl").read_text().splitlines()) == 14


async def test_atomr_on_blendqa_plans_with_the_blendqa_pack(shared_data, tmp_path, caplog):
    from atomgraph.evaluation.runner import EvalOptions, arun_eval
    from atomgraph.testing import atomr_scripted_model
    from atomgraph.tools.memory_source import InMemorySource

    prompts: list[str] = []

    def plan(prompt: str) -> str:
        prompts.append(prompt)
        question = prompt.rsplit("Question: ", 1)[1].split("\n", 1)[0].strip()
        return json.dumps({question: 'Relate("x", "y")'})

    await arun_eval("atomr", "blendqa", tmp_path / "run", EvalOptions(
        limit=16, model=atomr_scripted_model(plan), progress=False,
        sources=[InMemorySource([{"title": "x", "text": "y"}], name="wikipedia")], settings=Settings(cache=False),
        dataset_name="blendqa"))
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["prompt_pack"] == "blendqa" and meta["demonstrations_left_out"] == ["kg-web_132-5", "kg-web_132-15"]
    assert len(prompts) == 14 and all("Dataset rules (BlendQA)" in p and "Ella Emhoff" in p for p in prompts)
    assert "2 question(s) left out: they are demonstrations of the 'blendqa' prompt pack" in caplog.text
