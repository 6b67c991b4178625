"""Answer and retrieval metrics: hand-worked cases and the ATOMR release's own numbers."""

from __future__ import annotations

import pytest

from atomgraph.evaluation.metrics import (
    aggregate_scores, answer_scores, cover_em, exact_match, f1_score, normalize_answer, retrieval_scores,
)
from atomgraph.evaluation.report import score_predictions


def test_normalisation_follows_the_atomr_scorer():
    assert normalize_answer("The  Anglo-Saxon  Chronicle!") == "anglo saxon chronicle"
    assert normalize_answer("An apple, a day") == "apple day"
    assert normalize_answer("Theatre") == "theatre"  # articles only as whole words


def test_em_f1_cover_em_by_hand():
    # pred tokens: [united, states]; gold [american] -> no overlap
    assert f1_score("United States", ["American"]) == 0.0
    # pred [hollywood, california, usa] vs gold [hollywood]: P=1/3, R=1 -> F1 = 0.5
    assert f1_score("Hollywood, California, USA", ["Hollywood"]) == pytest.approx(0.5)
    assert cover_em("Hollywood, California, USA", ["Hollywood"]) == 1.0
    assert exact_match("Hollywood, California, USA", ["Hollywood"]) == 0.0
    # max over gold answers
    assert f1_score("Stanley Hall", ["G. Stanley Hall", "Stanley Hall"]) == 1.0
    assert exact_match("the Picture of Dorian Gray.", ["The Picture of Dorian Gray"]) == 1.0
    # cover-EM needs whole tokens: "art" is not covered by "party"
    assert cover_em("a party", ["art"]) == 0.0
    # a list answer is scored as joined with ", "
    assert f1_score(["Paris", "Lyon"], ["Paris"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    # empty prediction
    assert answer_scores("", ["x"]) == {"em": 0.0, "f1": 0.0, "cover_em": 0.0}
    assert answer_scores(None, []) == {"em": 0.0, "f1": 0.0, "cover_em": 0.0}


def test_retrieval_scores_by_hand():
    s = retrieval_scores(["Paris", "lyon", "Paris", "Nice"], ["paris", "Marseille"])
    assert s["precision"] == pytest.approx(1 / 3)
    assert s["recall"] == pytest.approx(0.5)
    assert s["f1"] == pytest.approx(2 * (1 / 3) * 0.5 / (1 / 3 + 0.5))
    assert s["perfect_recall"] == 0.0
    assert retrieval_scores(["Eiffel_Tower"], ["Eiffel Tower"])["perfect_recall"] == 1.0
    assert retrieval_scores([], ["A"]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "perfect_recall": 0.0}
    assert retrieval_scores(["A"], []) is None


def test_aggregate_per_type():
    recs = [
        {"question_type": "bridge", "metrics": {"em": 1.0, "f1": 1.0, "cover_em": 1.0}},
        {"question_type": "bridge", "metrics": {"em": 0.0, "f1": 0.5, "cover_em": 1.0}},
        {"question_type": "comparison", "metrics": {"em": 0.0, "f1": 0.0, "cover_em": 0.0,
                                                     "retrieval": {"precision": 1, "recall": 1, "f1": 1, "perfect_recall": 1}}},
    ]
    agg = aggregate_scores(recs)
    assert agg["n"] == 3 and agg["f1"] == pytest.approx(50.0)
    assert agg["by_type"]["bridge"] == {"n": 2, "em": 50.0, "f1": 75.0, "cover_em": 100.0}
    assert agg["retrieval"]["n"] == 1 and agg["retrieval"]["perfect_recall"] == 100.0


@pytest.mark.parametrize("name,f1", [("hotpotqa", 71.27), ("2Wiki", 78.72)])
def test_released_predictions_give_the_papers_f1(shared_data, name, f1):
    result = score_predictions(shared_data / f"atomr/released/{name}_test_500_predictions.jsonl")
    assert result["n"] == 500
    assert round(result["f1"], 2) == f1


def test_released_2wiki_per_type_matches_table_2(shared_data):
    result = score_predictions(shared_data / "atomr/released/2Wiki_test_500_predictions.jsonl",
                               dataset="2wiki-test-500")
    assert round(result["by_type"]["comparison"]["f1"], 2) == 97.48
    assert round(result["by_type"]["bridge_comparison"]["f1"], 2) == 93.33
