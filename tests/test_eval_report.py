"""Reports over a small synthetic run directory; pricing; the `atomgraph eval` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from atomgraph.cli import main
from atomgraph.state.run import DEFAULT_PRICES, LLMCall, calls_cost, price_table
from atomgraph.evaluation.report import markdown_tables, summarize_runs
from atomgraph.settings import Settings


def _record(i: int, qtype: str, f1: float, model: str, tin: int, tout: int, sources: dict, latency: float,
            error: str | None = None) -> dict:
    return {
        "id": f"q{i}", "question": f"q{i}?", "question_type": qtype, "predicted": "x", "gold": ["x"],
        "metrics": {"em": float(f1 == 1.0), "f1": f1, "cover_em": float(f1 > 0),
                    "retrieval": {"precision": 0.5, "recall": 1.0, "f1": 2 / 3, "perfect_recall": 1.0}},
        "usage": {"llm_calls": 2, "prompt_tokens": tin, "completion_tokens": tout,
                  "tokens_by_model": {model: [tin, tout]}, "retriever_calls_by_source": sources},
        "latency_s": latency, "error": error,
    }


def _run_dir(root: Path, method: str, records: list[dict]) -> Path:
    d = root / method
    d.mkdir()
    (d / "run.json").write_text(json.dumps({"method": method, "dataset": "toy"}))
    (d / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return d


@pytest.fixture
def runs(tmp_path):
    a = _run_dir(tmp_path, "rag", [
        _record(0, "bridge", 1.0, "gpt-4o-mini", 1_000_000, 0, {"wikipedia": 1, "google": 1}, 1.0),
        _record(1, "comparison", 0.5, "gpt-4o-mini", 0, 1_000_000, {"wikipedia": 1}, 3.0, error="boom"),
    ])
    b = _run_dir(tmp_path, "mystery", [
        _record(0, "bridge", 0.0, "my-local-model", 10, 10, {}, 2.0),
    ])
    return [a, b]


def test_summary_rows_and_markdown(runs):
    rows = summarize_runs(runs, price_table(Settings()))
    rag, mystery = rows
    assert rag["n"] == 2 and rag["f1"] == pytest.approx(75.0) and rag["em"] == pytest.approx(50.0)
    assert rag["by_type"] == {"bridge": 100.0, "comparison": 50.0}
    assert rag["retriever_calls"] == {"google": 0.5, "wikipedia": 1.0}
    assert rag["cost_usd"] == pytest.approx(0.15 + 0.60)  # 1M in + 1M out at gpt-4o-mini prices
    assert rag["latency_s"] == pytest.approx(2.0) and rag["errors"] == 1
    assert mystery["unpriced_models"] == ["my-local-model"] and mystery["cost_usd"] == 0.0
    md = markdown_tables(rows)
    assert "### toy" in md
    assert "| method | n | EM | F1 | F1 bridge | F1 comparison | ret. P | ret. R | perfect R |" in md
    assert "| rag | 2 | 50.00 | 75.00 | 100.00 | 50.00 | 50.00 | 100.00 | 100.00 | 2.00 | 0 | google 0.50, wikipedia 1.00 |" in md
    assert "| mystery | 1 | 0.00 | 0.00 | 0.00 | – |" in md
    assert "no price for model(s) my-local-model" in md


def test_prices_from_settings_override_defaults(runs):
    table = price_table(Settings(prices={"my-local-model": (1000.0, 0.0)}))
    assert table["gpt-4o-2024-08-06"] == DEFAULT_PRICES["gpt-4o-2024-08-06"] == (2.50, 10.00)
    mystery = summarize_runs(runs[1:], table)[0]
    assert mystery["cost_usd"] == pytest.approx(0.01) and not mystery["unpriced_models"]
    cost, unpriced = calls_cost([LLMCall(role="planner", model="openai:gpt-4o", prompt_tokens=2_000_000)], table)
    assert cost == pytest.approx(5.0) and unpriced == []


def test_cli_report_writes_markdown_and_plots(runs, tmp_path, capsys):
    out = tmp_path / "report" / "report.md"
    assert main(["eval", "report", *map(str, runs), "--out", str(out)]) == 0
    assert "| rag | 2 |" in capsys.readouterr().out
    assert "| mystery | 1 |" in out.read_text()
    pngs = sorted(p.name for p in out.parent.glob("*.png"))
    assert pngs == ["toy_f1_by_type.png", "toy_f1_vs_cost.png"]
    assert all((out.parent / p).stat().st_size > 1000 for p in pngs)


def test_cli_score(tmp_path, capsys):
    f = tmp_path / "preds.jsonl"
    f.write_text(json.dumps({"predicted": "Hollywood, California", "gold": ["Hollywood"]}) + "\n"
                 + json.dumps({"predicted": "Paris", "gold": ["paris", "Paris, France"]}) + "\n")
    assert main(["eval", "score", str(f), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n"] == 2 and result["em"] == 50.0 and result["f1"] == pytest.approx((2 / 3 + 1) / 2 * 100)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"prediction": "x"}) + "\n")
    assert main(["eval", "score", str(bad)]) == 2
    assert "line 1: the record needs 'predicted' and 'gold'" in capsys.readouterr().err
    assert main(["eval", "report", str(tmp_path / "nothing")]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_cli_score_released_file(shared_data, capsys):
    assert main(["eval", "score", str(shared_data / "atomr/released/hotpotqa_test_500_predictions.jsonl")]) == 0
    assert "F1 71.27" in capsys.readouterr().out


def test_cli_scores_the_released_blendqa_file(shared_data, capsys):
    """The authors' BlendQA file joins three sub-sets each numbered from 0: scored, not refused."""
    path = shared_data / "atomr/released/blendqa_445_predictions.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is absent (the ATOMR authors release it under results/released/)")
    assert main(["eval", "score", str(path), "--dataset", "blendqa"]) == 0
    out = capsys.readouterr().out
    assert "n=445  EM 24.94  F1 42.63" in out
    assert "kg-web               n=132" in out and "F1 45.63" in out and "F1 45.22" in out


def test_report_says_when_a_run_s_last_line_is_torn(runs, capsys):
    """A records file whose last write never finished (a full disk, kill -9): the report reads the rest and
    says so — in the table's notes and on stderr — instead of dropping the line in silence."""
    pred = runs[0] / "predictions.jsonl"
    whole = json.dumps(_record(2, "bridge", 1.0, "gpt-4o-mini", 1, 1, {}, 1.0))
    pred.write_text(pred.read_text() + whole[: len(whole) // 2])  # torn: no newline, JSON cut mid-way
    rag = summarize_runs(runs[:1], price_table(Settings()))[0]
    assert rag["n"] == 2 and rag["skipped"] == {"cut-off last line": 1}
    assert "rag: 1 cut-off last line in its records" in markdown_tables([rag])
    assert main(["eval", "report", str(runs[0]), "--no-plots"]) == 0
    out, err = capsys.readouterr()
    assert "1 cut-off last line in its records" in err and "**rag: 1 cut-off last line" in out
