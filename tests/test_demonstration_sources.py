"""Few-shot demonstrations come from train/dev questions of ../shared/data, never from test
questions and never invented: every demonstration question of prompts/ occurs in a train/dev
file and in no test file, and each names its source (file and id)."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest

from atomgraph.prompts.atomr.packs import PACKS
from atomgraph.prompts.baselines import DEMONSTRATION_SOURCES, DEMONSTRATIONS
from atomgraph.prompts.atomr.source_selection import EXAMPLE_SOURCES as SELECTION_SOURCES
from atomgraph.prompts.atomr.source_selection import SOURCE_SELECTION_PROMPT
from atomgraph.prompts.compare import ircot, self_ask

REPO = Path(__file__).resolve().parents[1]
_Q = "atomr/questions/single_source"
TRAIN_DEV = [f"{_Q}/HotpotQA/hotpotqa_dev_100.jsonl", f"{_Q}/2WikiMultiHop/2wiki_dev_100.jsonl",
             f"{_Q}/Musique/musique_dev_100.jsonl", "atomr/questions/multi_source/CRAG/CRAG_dev_100.jsonl",
             "hipporag/hotpotqa_train.json", "hipporag/musique_train.json"]
# test splits: the *_test_500 files, BlendQA (an evaluation set only) and the released test predictions
TEST_GLOBS = ["atomr/questions/**/*test_500.jsonl", "atomr/questions/multi_source/BlendQA/*.jsonl",
              "atomr/released/*.jsonl"]


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
    problems = []
    for where, question in demonstration_questions():
        n = _norm(question)
        if not any(n in qs for qs in train_dev.values()):
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
