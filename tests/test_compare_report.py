"""The comparison report: `atomgraph eval methods`, stopped counts, id-based retrieval
scores and the usage plot, over run directories of the comparison methods."""

from __future__ import annotations

import json
from pathlib import Path

from atomgraph.cli import main
from atomgraph.demo_pack import load_passages
from atomgraph.evaluation import EvalOptions, arun_eval, price_table, summarize_runs
from atomgraph.evaluation.datasets import Example
from atomgraph.evaluation.report import markdown_tables
from atomgraph.settings import Settings
from atomgraph.testing import ScriptedChatModel
from atomgraph.tools.memory_source import InMemorySource

COMPARE = ("self_ask", "ircot", "react", "iter_retgen", "decomposed_rag")


def test_cli_lists_methods(capsys):
    assert main(["eval", "methods"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for m in COMPARE + ("atomr", "rag"):
        line = next(ln for ln in lines if ln.split()[0] == m)
        assert len(line.split(None, 1)[1]) > 20
    assert main(["eval", "methods", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(COMPARE) <= set(data) and all(data[m] for m in COMPARE)


async def test_report_compares_methods_side_by_side(tmp_path: Path, capsys):
    wiki = InMemorySource(load_passages(), name="wikipedia")
    ex = [Example(id="q1", question="In which city did Werner Heisenberg's doctoral advisor die?", answers=["Munich"],
                  question_type="bridge", gold_titles=["Werner Heisenberg", "Arnold Sommerfeld"])]
    model = ScriptedChatModel(stages={
        "ircot_step": "Nothing decisive yet.", "ircot_read": "So the answer is: Munich",  # hits the step bound
        "iter_retgen": "So the answer is: Munich",
    })
    dirs = []
    for method, context in (("ircot", {"max_steps": 2}), ("iter_retgen", {})):
        settings = Settings(cache=False, **({"ircot": context} if context else {}))
        await arun_eval(method, ex, tmp_path / method, EvalOptions(
            model=model, sources=[wiki], settings=settings, dataset_name="toy", progress=False))
        dirs.append(tmp_path / method)
    rows = summarize_runs(dirs, price_table(Settings()))
    ircot, iter_retgen = rows
    assert ircot["stopped"] == 1 and iter_retgen["stopped"] == 0
    assert ircot["llm_calls"] == 3 and sum(ircot["retriever_calls"].values()) == 2
    assert ircot["retrieval"]["n"] == 1 and iter_retgen["f1"] == 100.0
    md = markdown_tables(rows)
    assert "| errors | stopped |" in md and "ret. R" in md
    assert md.count("| ircot | 1 |") == 1

    # id-based retrieval scores for records that carry gold ids and retrieved ids
    pred = tmp_path / "ids" / "predictions.jsonl"
    pred.parent.mkdir()
    rec = json.loads((tmp_path / "ircot" / "predictions.jsonl").read_text().splitlines()[0])
    rec["metrics"].pop("retrieval")
    rec.update(gold_ids=["57", "999"], retrieved_ids=["57", "58"], method="ids")
    pred.write_text(json.dumps(rec) + "\n")
    (row,) = summarize_runs([pred.parent], price_table(Settings()))
    assert row["retrieval"]["recall"] == 50.0 and row["retrieval"]["perfect_recall"] == 0.0

    out = tmp_path / "report" / "report.md"
    assert main(["eval", "report", *map(str, dirs), "--out", str(out), "--usage-plots"]) == 0
    assert "| iter_retgen | 1 |" in capsys.readouterr().out
    assert sorted(p.name for p in out.parent.glob("*.png")) == ["toy_f1_by_type.png", "toy_f1_vs_cost.png",
                                                                "toy_usage.png"]
