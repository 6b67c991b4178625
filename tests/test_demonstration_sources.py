"""Few-shot demonstrations come from train/dev questions of ../shared/data, never from test
questions and never invented: every demonstration question of prompts/ occurs in a train/dev
file (or, for a set without a train/dev split, in the declared demonstration subset that every
evaluation of the set leaves out) and in no test file, and each names its source (file and id)."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest

from atomgraph.evaluation.datasets import dataset_setting, load_file
from atomgraph.prompts.atomr.packs import PACKS, Demo, demonstration_sources
from atomgraph.prompts.baselines import DEMONSTRATION_SOURCES, DEMONSTRATIONS
from atomgraph.prompts.atomr.source_selection import EXAMPLE_SOURCES as SELECTION_SOURCES
from atomgraph.prompts.atomr.source_selection import SOURCE_SELECTION_PROMPT
from atomgraph.prompts.compare import ircot, self_ask

REPO = Path(__file__).resolve().parents[1]
_Q = "atomr/questions/single_source"
TRAIN_DEV = [f"{_Q}/HotpotQA/hotpotqa_dev_100.jsonl", f"{_Q}/2WikiMultiHop/2wiki_dev_100.jsonl",
             f"{_Q}/Musique/musique_dev_100.jsonl", "atomr/questions/multi_source/CRAG/CRAG_dev_100.jsonl",
             "hipporag/hotpotqa_train.json", "hipporag/musique_train.json"]
# test splits: the *_test_500 files and the released test predictions
TEST_GLOBS = ["atomr/questions/**/*test_500.jsonl", "atomr/released/*.jsonl"]
# evaluation sets without a train/dev split: their pack is written on a declared subset of the set,
# which every evaluation of it leaves out (DatasetSetting.demonstrations_in_split; tests/test_dataset_settings.py)
DECLARED_SUBSETS = {"blendqa": "atomr/questions/multi_source/BlendQA/*.jsonl"}


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", str(text)).casefold()
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


def _questions(path: Path) -> dict[str, str]:
    """normalised question -> its id in ``path`` (a JSON list or JSON lines)."""
    text = path.read_text(encoding="utf-8")
    items = json.loads(text) if path.suffix == ".json" else [json.loads(ln) for ln in text.splitlines() if ln.strip()]
    return {_norm(x["question"]): str(x.get("_id") or x.get("id") or x.get("question_id") or x.get("index"))
            for x in items if x.get("question")}


def demonstration_questions() -> list[tuple[str, str]]:
    """(where, question) for every few-shot demonstration of a whole question in prompts/."""
    out = [(f"baselines.DEMONSTRATIONS[{i}]", q) for i, (q, _why, _a) in enumerate(DEMONSTRATIONS)]
    out += [("compare.ircot.EXAMPLE", q) for q, _a in ircot.EXAMPLE_PAIRS]
    out += [("compare.self_ask.EXAMPLE", q) for q, _a in self_ask.EXAMPLE_PAIRS]
    out += [(f"atomr pack {name}: plan", q) for name, pack in PACKS.items() for q, _tree in pack.plan_examples]
    out += [("atomr source selection", q) for q in SELECTION_SOURCES]
    return out


def test_each_demonstration_is_in_its_own_prompt_and_names_its_source():
    assert len(DEMONSTRATION_SOURCES) == len(DEMONSTRATIONS) == 2
    assert ircot.EXAMPLE.startswith(f"Question: {ircot.EXAMPLE_PAIRS[0][0]}\n")
    assert ircot.EXAMPLE.endswith(f"So the answer is: {ircot.EXAMPLE_PAIRS[0][1]}")
    assert self_ask.EXAMPLE.startswith(f"Question: {self_ask.EXAMPLE_PAIRS[0][0]}\n")
    assert self_ask.EXAMPLE.endswith(f"So the final answer is: {self_ask.EXAMPLE_PAIRS[0][1]}")
    # a stage declares the demonstrations its own prompt shows (what rt.ask holds its answers against)
    shown = lambda stage, q: any(q in m.prompt.template for m in stage.prompt.messages)  # noqa: E731
    assert shown(self_ask.STEP, self_ask.EXAMPLE_PAIRS[0][0]) and shown(ircot.STEP, ircot.EXAMPLE_PAIRS[0][0])
    assert self_ask.FINAL.demonstrations == () and not shown(self_ask.FINAL, self_ask.EXAMPLE_PAIRS[0][0])
    for stage in (ircot.STEP, self_ask.STEP):
        assert [(d[0], d[-1]) for d in stage.demonstrations] == list(stage is ircot.STEP and ircot.EXAMPLE_PAIRS
                                                                       or self_ask.EXAMPLE_PAIRS)
    system = SOURCE_SELECTION_PROMPT.messages[0].prompt.template
    assert [ln[3:] for ln in system.splitlines() if ln.startswith("Q: ")] == list(SELECTION_SOURCES)
    # no module of prompts/ says its demonstrations were made up
    for path in (REPO / "prompts").rglob("*.py"):
        assert "written for this project" not in path.read_text(encoding="utf-8"), path


def test_demonstration_questions_come_from_train_dev_files_and_never_from_test_files(shared_data):
    train_dev = {name: _questions(shared_data / name) for name in TRAIN_DEV}
    test_files = sorted({p for g in TEST_GLOBS for p in shared_data.glob(g)})
    assert test_files, "no test files found"
    tests = {str(p.relative_to(shared_data)): _questions(p) for p in test_files}
    declared: dict[str, tuple[str, str, str]] = {}  # question -> (pack, file, id) of a declared subset's set
    for pack, pattern in DECLARED_SUBSETS.items():
        for path in sorted(shared_data.glob(pattern)):
            declared.update({_norm(e.question): (pack, str(path.relative_to(shared_data)), e.id) for e in load_file(path)})
    assert declared, "no BlendQA files found"
    problems = []
    for where, question in demonstration_questions():
        n = _norm(question)
        if n in declared:  # allowed only as a declared, left-out demonstration of that set's own pack
            pack, file, ident = declared[n]
            if not (where.startswith(f"atomr pack {pack}:") and dataset_setting(pack).demonstrations_in_split
                    and (file, ident) in demonstration_sources(pack)):
                problems.append(f"{where}: {question!r} is an evaluation question of {pack} outside its declared subset")
        elif not any(n in qs for qs in train_dev.values()):
            problems.append(f"{where}: {question!r} is in no train/dev file")
        problems += [f"{where}: {question!r} is a test question ({name})" for name, qs in tests.items() if n in qs]
    assert not problems, "\n".join(problems)
    # the recorded sources name the file and id each demonstration comes from
    recorded = [*zip(DEMONSTRATION_SOURCES, (q for q, _w, _a in DEMONSTRATIONS)),
                (ircot.EXAMPLE_SOURCE, ircot.EXAMPLE_PAIRS[0][0]),
                (self_ask.EXAMPLE_SOURCE, self_ask.EXAMPLE_PAIRS[0][0]),
                *((source, q) for q, source in SELECTION_SOURCES.items())]
    for source, question in recorded:
        name, _, ident = source.partition("#")
        assert train_dev[name].get(_norm(question)) == ident, source


def test_each_pack_demonstration_names_a_real_source_that_evaluation_leaves_out(shared_data):
    """Every demonstration of the crag and blendqa packs (planner and every stage) is a Demo whose
    file and id name a question of a train/dev file or of the declared subset; the planner
    demonstrations are that very question; no source is in a split evaluated with the pack."""
    ids: dict[str, dict[str, str]] = {}

    def question_of(file: str, ident: str) -> str | None:
        if file not in ids:
            ids[file] = {e.id: e.question for e in load_file(shared_data / file)}
        return ids[file].get(ident)

    for name in ("crag", "blendqa"):
        pack = PACKS[name]
        demos = [q for q, _tree in pack.plan_examples] + [ex for exs in pack.examples.values() for ex in exs]
        assert demos and all(isinstance(d, Demo) for d in demos), name
        for q, _tree in pack.plan_examples:
            assert _norm(question_of(q.source_file, q.source_id) or "") == _norm(q), (name, q.source)
        for d in demos:
            assert question_of(d.source_file, d.source_id) is not None, (name, d.source)
            assert "test_500" not in d.source_file, (name, d.source)
        allowed = set(TRAIN_DEV) | ({f for f in (str(p.relative_to(shared_data)) for p in
                                                  shared_data.glob(DECLARED_SUBSETS[name]))} if name in DECLARED_SUBSETS else set())
        assert {d.source_file for d in demos} <= allowed, name
    assert len(demonstration_sources("blendqa")) == 21 and dataset_setting("blendqa").demonstrations_in_split
    assert not dataset_setting("crag-test-500").demonstrations_in_split
