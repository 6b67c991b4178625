"""The δ calibration benchmark on a few MuSiQue questions: gold sub-questions with earlier
answers filled in, hit-rates on both metrics, monotone in δ."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_kar3_delta as bench

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hipporag" / "musique_train.json"


def test_sub_questions_fill_in_earlier_answers():
    item = {"paragraphs": [{"idx": 0, "title": "A", "paragraph_text": "a"}, {"idx": 1, "title": "B", "paragraph_text": "b"}],
            "question_decomposition": [{"question": "Who published X?", "answer": "APA", "paragraph_support_idx": 0},
                                       {"question": "Who was the first president of #1 ?", "answer": "Hall",
                                        "paragraph_support_idx": 1}]}
    qs = bench.sub_questions(item)
    assert [q for q, _ in qs] == ["Who published X?", "Who was the first president of APA ?"]


@pytest.mark.skipif(not DATA.exists(), reason="../shared/data/hipporag/musique_train.json is absent")
def test_hit_rates_on_both_metrics(tmp_path, capsys):
    out = tmp_path / "delta.json"
    assert bench.main(["--questions", "3", "--deltas", "0.3,0.5,0.7", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["queries"] >= 6 and result["paper_operating_point"]["cosine_at_least"] == pytest.approx(0.6464, abs=1e-4)
    for metric in ("pike_l2", "cosine"):
        rows = [result["hit_rate"][metric][d] for d in ("0.3", "0.5", "0.7")]
        assert [r["any"] for r in rows] == sorted((r["any"] for r in rows), reverse=True)
        assert all(r["support"] <= r["any"] for r in rows)
    # the authors' score is the stricter one at the same δ
    assert result["hit_rate"]["pike_l2"]["0.5"]["any"] <= result["hit_rate"]["cosine"]["0.5"]["any"]
    assert "pike_l2: cos≥" in capsys.readouterr().out
