"""Dataset settings (issue 31 item 2): each dataset declares the paper's setting (prompt pack,
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


async def test_demonstration_questions_are_left_out_of_the_split_evaluated(shared_data, tmp_path, capsys):
    """2wiki-dev-100 holds 10 of the 2wiki pack's demonstrations among its first 20 questions."""
    from atomgraph.evaluation.runner import arun_eval
    from atomgraph.testing import atomr_scripted_model
    from atomgraph.tools.memory_source import InMemorySource

    model = atomr_scripted_model(lambda prompt: "no plan here")
    await arun_eval("atomr", "2wiki-dev-100", tmp_path / "run", limit=20, model=model, progress=False,
                    sources=[InMemorySource([{"title": "x", "text": "y"}], name="wikipedia")],
                    settings=Settings(cache=False), dataset_name="2wiki-dev-100")
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert len(meta["demonstrations_left_out"]) == 10 and meta["total"] == 10
    assert len((tmp_path / "run" / "predictions.jsonl").read_text().splitlines()) == 10
    assert "10 question(s) left out: they are demonstrations of the '2wiki' prompt pack" in capsys.readouterr().err
