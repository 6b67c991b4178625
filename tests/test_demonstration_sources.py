"""Few-shot demonstrations come from train/dev questions of ../shared/data, never from test
questions and never invented: every demonstration question of prompts/ occurs in a train/dev
file and in no test file, and each names its source (file and id)."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path


from atomgraph.evaluation.datasets import dataset_setting, load_file
from atomgraph.prompts.atomr.packs import PACKS
from atomgraph.prompts.atomr.stages import _norm_q, parse_answer
from atomgraph.prompts.atomr.stages import demonstration_questions as pack_questions
from atomgraph.prompts.atomr.packs.common import Demo
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
# evaluation sets without a train/dev split: their pack is written on a declared subset of the set, which
# every evaluation of it, of any method, leaves out (DatasetSetting.demonstrations_in_split)
_BLEND = "atomr/questions/multi_source/BlendQA"
DECLARED_SUBSETS = {"blendqa": [f"{_BLEND}/kg-web_132.jsonl", f"{_BLEND}/text-kg_163.jsonl",
                                f"{_BLEND}/web-text_150.jsonl"]}


# the train/dev files a dataset pack's stage demonstrations may come from (its own dataset's)
PACK_FILES = {"hotpotqa": {f"{_Q}/HotpotQA/hotpotqa_dev_100.jsonl", "hipporag/hotpotqa_train.json"},
              "2wiki": {f"{_Q}/2WikiMultiHop/2wiki_dev_100.jsonl"},
              "musique": {f"{_Q}/Musique/musique_dev_100.jsonl", "hipporag/musique_train.json"},
              "crag": {"atomr/questions/multi_source/CRAG/CRAG_dev_100.jsonl"},
              "blendqa": set(DECLARED_SUBSETS["blendqa"])}
# the authors' demonstrations per stage (THU-KEG/AtomR src/prompts/answer_formulation_prompts.py); their
# one child/[DR] prompt's count stands for both our child and sibling reasoning
AUTHORS_COUNTS = {
    "hotpotqa": {"search": 4, "relate": 7, "filter": 3, "child_reasoning": 6, "sibling_reasoning": 6,
                 "direct_rag": 5, "closed_book": 4},
    "2wiki": {"search": 4, "relate": 4, "filter": 3, "child_reasoning": 5, "sibling_reasoning": 5,
              "direct_rag": 4, "closed_book": 5},
    "musique": {"search": 5, "relate": 7, "filter": 3, "child_reasoning": 3, "sibling_reasoning": 3,
                "direct_rag": 5, "closed_book": 4},
    # CRAG and BlendQA: the [END] examples of their child prompt are our sibling stage's (3 and 2 of ours)
    "crag": {"search": 4, "relate": 7, "filter": 2, "child_reasoning": 5, "sibling_reasoning": 3,
             "direct_rag": 8, "closed_book": 4},
    "blendqa": {"search": 5, "relate": 8, "filter": 2, "child_reasoning": 4, "sibling_reasoning": 2,
                "direct_rag": 7, "closed_book": 3},
}
# how each stage's human turn begins (the stage prompts' human templates)
TURN_STARTS = {"search": "Retrieved Knowledge:\n", "relate": "Retrieved Knowledge:\n", "filter": "Retrieved Knowledge:\n",
               "child_reasoning": "Child questions and answers:\n", "sibling_reasoning": "Referenced questions and answers:\n",
               "direct_rag": "Retrieved Knowledge:\n", "closed_book": "Question: "}


def stage_demonstrations() -> list[tuple[str, str, Demo]]:
    """(pack, stage, demonstration) for every sourced stage demonstration of every pack."""
    return [(name, stage, d) for name, pack in PACKS.items() for stage, demos in pack.examples.items()
            for d in demos if isinstance(d, Demo)]


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", str(text)).casefold()
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


def _questions(path: Path) -> dict[str, str]:
    """normalised question -> its id in ``path`` (a JSON list or JSON lines); a declared subset's
    file by the ids the loader gives (BlendQA's ``kg-web_132-5``), which evaluation lists."""
    if any(str(path).endswith(f) for files in DECLARED_SUBSETS.values() for f in files):
        return {_norm(e.question): e.id for e in load_file(path)}
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
    declared = {pack: {f: _questions(shared_data / f) for f in files} for pack, files in DECLARED_SUBSETS.items()}
    problems = []
    for where, question in demonstration_questions():
        n = _norm(question)
        subset = [pack for pack, files in declared.items() if any(n in qs for qs in files.values())]
        if subset:  # only as a left-out demonstration of that set's own pack
            pack = subset[0]
            if not (where.startswith(f"atomr pack {pack}:") and dataset_setting(pack).demonstrations_in_split
                    and _norm_q(question) in pack_questions(pack)):
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


def test_dataset_packs_have_the_authors_counts_of_sourced_demonstrations_for_every_stage():
    for name, counts in AUTHORS_COUNTS.items():
        pack = PACKS[name]
        assert {stage: len(demos) for stage, demos in pack.examples.items()} == counts, name
        assert all(isinstance(d, Demo) for demos in pack.examples.values() for d in demos), name
    # the general pack keeps the shared examples (4 per stage)
    assert {len(v) for v in PACKS["general"].examples.values()} == {4}
    for name, stage, demo in stage_demonstrations():
        where = f"{name} {stage} {demo.source}"
        assert demo.text.startswith(TURN_STARTS[stage]), where
        turn, reply = demo.text.rsplit("\nAnswer: ", 1)
        assert reply.count("So the answer is: (1) Paraphrase Answer: ") == 1, where
        parsed = parse_answer(reply)  # in the answer format our parser reads, within the answer contract
        assert parsed.answers or parsed.unknown, where
        questions = [ln[len("Question: "):] for ln in turn.splitlines() if ln.startswith("Question: ")]
        assert len(questions) == 1, where
        if stage in ("direct_rag", "closed_book"):  # these answer the dataset question itself
            assert questions[0] == demo.question, where
        # the stage's prompt shows it, and an evaluation split leaves its question out
        assert demo.text in pack_text(name, stage), where
        # short enough for the bundled model's 4,096-token context with three retrieved passages beside
        assert len(pack_text(name, stage)) < 6000, where
        assert _norm_q(demo.question) in pack_questions(name), where


def pack_text(name: str, stage: str) -> str:
    from atomgraph.prompts.atomr.stages import STAGES

    inputs = {"question": "q", "knowledge": "k", "condition": "c", "qa_pairs": "p", "pack": name}
    return "\n".join(m.content for m in STAGES[stage].messages(inputs))


def test_stage_demonstrations_come_from_their_own_datasets_train_dev_files(shared_data):
    files = {name for names in PACK_FILES.values() for name in names} | set(TRAIN_DEV)
    train_dev = {name: _questions(shared_data / name) for name in files}
    tests = {str(p.relative_to(shared_data)): _questions(p)
             for p in sorted({p for g in TEST_GLOBS for p in shared_data.glob(g)})}
    problems = []
    for name, stage, demo in stage_demonstrations():
        where = f"pack {name}, {stage}: {demo.question!r}"
        allowed = PACK_FILES.get(name, set(TRAIN_DEV))
        if demo.source_file not in allowed:
            problems.append(f"{where} names {demo.source_file}, not a train/dev file of its dataset")
        elif train_dev[demo.source_file].get(_norm(demo.question)) != demo.source_id:
            problems.append(f"{where} is not {demo.source}")
        problems += [f"{where} is a test question ({f})" for f, qs in tests.items() if _norm(demo.question) in qs]
    assert not problems, "\n".join(problems)
    assert len(stage_demonstrations()) >= sum(sum(c.values()) for c in AUTHORS_COUNTS.values())


def test_each_dev_split_leaves_out_the_questions_its_pack_demonstrates(shared_data):
    """The eval runner leaves out ``demonstration_questions(pack)``: planner and stage demonstrations
    alike. Counted from the data files: hotpotqa-dev-100 1, 2wiki-dev-100 16, musique-dev-100 17."""
    from atomgraph.evaluation.datasets import load_dataset, prompt_pack_for

    left_out = {}
    for split in ("hotpotqa-dev-100", "2wiki-dev-100", "musique-dev-100", "hipporag-hotpotqa", "hipporag-musique"):
        pack = prompt_pack_for(split)
        shown = pack_questions(pack)
        examples = load_dataset(split, data_dir_=shared_data)
        left_out[split] = {_norm_q(e.question) for e in examples if _norm_q(e.question) in shown}
        # every stage demonstration written on a question of this split is among them
        for name, _stage, demo in stage_demonstrations():
            if name == pack and _norm_q(demo.question) in {_norm_q(e.question) for e in examples}:
                assert _norm_q(demo.question) in left_out[split], (split, demo.source)
    assert {k: len(v) for k, v in left_out.items()} == {
        "hotpotqa-dev-100": 1, "2wiki-dev-100": 16, "musique-dev-100": 17, "hipporag-hotpotqa": 17, "hipporag-musique": 0}


def test_stage_demonstrations_follow_their_datasets_answer_rules():
    """HotpotQA and 2Wiki answer yes/no in lower case (their rules and gold answers); 2Wiki writes a
    full date as day month year."""
    import re

    for name, stage, demo in stage_demonstrations():
        answers = parse_answer(demo.text.rsplit("\nAnswer: ", 1)[1]).answers
        if name in ("hotpotqa", "2wiki"):
            assert not {"Yes", "No"} & set(answers), (name, stage, demo.source)
            assert ("lower case" in PACKS[name].rules) and '["yes"] or ["no"]' in PACKS[name].rules
        if name == "2wiki":
            for a in answers:
                if re.search(r"\b(1[0-9]{3}|20[0-9]{2})\b", a) and not re.fullmatch(r"\d{4}", a):
                    assert re.fullmatch(r"\d{1,2} [A-Z][a-z]+ \d{4}", a), (stage, demo.source, a)


def test_planner_demonstrations_record_their_source_and_blendqa_runs_leave_the_subset_out(shared_data):
    """The crag and blendqa packs record each planner question's file and id (``PLAN_SOURCES``);
    the blendqa ones are its declared subset, which every BlendQA evaluation leaves out."""
    from atomgraph.evaluation.datasets import load_dataset
    from atomgraph.evaluation.runner import _leave_out_demonstrations
    from atomgraph.prompts.atomr.packs import blendqa, crag

    for name, module in (("crag", crag), ("blendqa", blendqa)):
        planned = [q for q, _tree in PACKS[name].plan_examples]
        assert set(module.PLAN_SOURCES) == set(planned), name
        for question, (file, ident) in module.PLAN_SOURCES.items():
            assert file in PACK_FILES[name] and _questions(shared_data / file).get(_norm(question)) == ident, question
    # every blendqa stage demonstration is written on a question of the declared subset (its planner questions)
    assert {d.question for stages in PACKS["blendqa"].examples.values() for d in stages} <= set(blendqa.PLAN_SOURCES)
    kept, left_out = _leave_out_demonstrations(load_dataset("blendqa", data_dir_=shared_data), ["blendqa"])
    assert sorted(left_out) == sorted(ident for _f, ident in blendqa.PLAN_SOURCES.values()) and len(kept) == 424
    assert dataset_setting("blendqa-web-text").demonstrations_in_split
    assert not dataset_setting("crag-test-500").demonstrations_in_split
    _, crag_out = _leave_out_demonstrations(load_dataset("crag-test-500", data_dir_=shared_data), ["crag"])
    assert crag_out == []


def test_crag_and_blendqa_demonstrations_follow_the_authors_answer_rules():
    """The authors' CRAG and BlendQA prompts: numbers as Arabic numerals, yes/no as ["Yes"] / ["No"]."""
    words = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "once", "twice", "thrice"}
    for name, stage, demo in stage_demonstrations():
        if name not in ("crag", "blendqa"):
            continue
        answers = parse_answer(demo.text.rsplit("\nAnswer: ", 1)[1]).answers
        assert answers and not {"yes", "no"} & set(answers), (name, stage, demo.source)
        assert not any(a.lower() in words for a in answers), (name, stage, demo.source, answers)
    for name in ("crag", "blendqa"):
        assert "digits" in PACKS[name].rules and '["Yes"] or ["No"]' in PACKS[name].rules
