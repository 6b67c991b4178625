"""Dataset loaders on every shared file, and clear errors on bad files."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from atomgraph.evaluation.datasets import (
    DATASETS, DatasetError, dataset_names, load_corpus, load_dataset, load_file,
)

SIZES = {
    "hotpotqa-dev-100": 100, "hotpotqa-test-500": 500, "2wiki-dev-100": 100, "2wiki-test-500": 500,
    "musique-dev-100": 100, "musique-test-500": 500, "blendqa": 445, "blendqa-kg-web": 132,
    "blendqa-text-kg": 163, "blendqa-web-text": 150, "crag-dev-100": 100, "crag-test-500": 500,
    "hipporag-hotpotqa": 100, "hipporag-musique": 100,
}


@pytest.mark.parametrize("name", list(DATASETS))
def test_every_named_dataset_loads(shared_data, name):
    examples = load_dataset(name, data_dir_=shared_data)
    assert len(examples) == SIZES[name]
    assert len({e.id for e in examples}) == len(examples)
    assert all(e.question and e.answers for e in examples)


def test_every_shared_question_file_is_covered(shared_data):
    files = {str(p.relative_to(shared_data)) for p in (shared_data / "atomr/questions").rglob("*.jsonl")}
    named = {f for files_, _ in DATASETS.values() for f in files_}
    assert files <= named
    for p in (shared_data / "atomr/released").glob("*_predictions.jsonl"):
        # prediction files load as examples too (gold answers); BlendQA's holds all 445
        assert len(load_file(p)) == (445 if p.name.startswith("blendqa") else 500)


def test_question_types(shared_data):
    types = Counter(e.question_type for e in load_dataset("hotpotqa-test-500", data_dir_=shared_data))
    assert set(types) == {"bridge", "comparison"}
    blend = Counter(e.question_type for e in load_dataset("blendqa", data_dir_=shared_data))
    assert blend == {"text-kg": 163, "web-text": 150, "kg-web": 132}
    crag = Counter(e.question_type for e in load_dataset("crag-test-500", data_dir_=shared_data))
    assert set(crag) == {"simple", "simple_w_condition", "comparison", "multi-hop"}
    assert {e.question_type for e in load_dataset("musique-dev-100", data_dir_=shared_data)} == {"2hop", "3hop", "4hop"}


def test_hipporag_gold_titles(shared_data):
    hotpot = load_dataset("hipporag-hotpotqa", data_dir_=shared_data)
    assert hotpot[0].gold_titles == ["Alû", "Lilu (mythology)"]
    assert all(e.gold_titles for e in hotpot)
    musique = load_dataset("hipporag-musique", data_dir_=shared_data)
    assert musique[0].gold_titles == ["Journal of Psychotherapy Integration", "Adolescence"]
    assert musique[0].answers == ["G. Stanley Hall", "Stanley Hall"]
    corpus = {p["title"] for p in load_corpus("hipporag-musique", data_dir_=shared_data)}
    assert all(t in corpus for e in musique for t in e.gold_titles)
    assert len(load_corpus("hipporag-hotpotqa", data_dir_=shared_data)) == 994
    assert len(load_corpus("hipporag-2wiki", data_dir_=shared_data)) == 6119


def test_limit_and_path(tmp_path):
    f = tmp_path / "mine.jsonl"
    f.write_text("\n".join(json.dumps({"question": f"q{i}?", "answers": [f"a{i}"]}) for i in range(5)) + "\n")
    ex = load_dataset(str(f), limit=2)
    assert [e.id for e in ex] == ["mine-0", "mine-1"]


def test_python_literal_fields(tmp_path):
    f = tmp_path / "hp.json"
    f.write_text(json.dumps([{"_id": "x", "question": "q?", "answer": "a", "type": "bridge",
                              "supporting_facts": "[['T1', 0], ['T2', 1], ['T1', 2]]"}]))
    (e,) = load_dataset(str(f))
    assert e.gold_titles == ["T1", "T2"]


@pytest.mark.parametrize("content,needle", [
    ('{"question": "q?", "answers": ["a"]}\n{"question": "q2?", "answers": [\n', ":2: not valid JSON"),
    ('{"question": "q?", "answers": ["a"]}\n\n{"answers": ["a"]}\n', ":3: missing field 'question'"),
    ('{"question": "q?"}\n', ":1: missing field 'answers'"),
    ('{"question": "q?", "answers": {"x": 1}}\n', ":1: "),
    ('[1, 2]\n', "item 0"),
])
def test_bad_files_name_the_line(tmp_path, content, needle):
    f = tmp_path / "bad.jsonl"
    f.write_text(content)
    with pytest.raises(DatasetError) as exc:
        load_dataset(str(f))
    assert needle in str(exc.value) and "bad.jsonl" in str(exc.value)


def test_bad_json_list_and_unknown_name(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text('[{"question": "q?", "answer": "a", "supporting_facts": "[[oops"}]')
    with pytest.raises(DatasetError, match="item 0"):
        load_dataset(str(f))
    with pytest.raises(DatasetError, match="hotpotqa-dev-100"):
        load_dataset("no-such-dataset")
    assert "blendqa" in dataset_names()


def test_the_duplicate_id_check_is_linear(tmp_path):
    """40,000 examples whose last repeats an id: named at once (a set), not after n² comparisons (183 s here before)."""
    import time

    from atomgraph.evaluation.datasets import DatasetError, first_duplicate, load_dataset

    ids = [f"q{i}" for i in range(40_000)] + ["q39998"]
    t0 = time.perf_counter()
    assert first_duplicate(ids) == "q39998" and first_duplicate(ids[:-1]) is None
    assert time.perf_counter() - t0 < 2.0
    path = tmp_path / "dup.jsonl"
    path.write_text("".join(json.dumps({"id": i, "question": f"Question {i}?", "answer": "a"}) + "\n" for i in ids))
    with pytest.raises(DatasetError, match="duplicate example id 'q39998'"):
        load_dataset(path)
