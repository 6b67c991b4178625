"""Every fallback counted: eval summaries, reports and demo count each kind
(node → direct RAG by reason, closed-book root, plan failure, KAR³ closed-book, budget), and a
run answered only by fallbacks says so on its first line."""

from __future__ import annotations

import json

from atomgraph.evaluation.datasets import Example
from atomgraph.evaluation.fallbacks import count_fallbacks, fallbacks_in, headline
from atomgraph.evaluation.report import markdown_tables, summarize_run
from atomgraph.evaluation.runner import EvalOptions, arun_eval, describe_outcome
from atomgraph.settings import Settings
from atomgraph.testing import answer_reply, atomr_scripted_model
from atomgraph.tools.memory_source import InMemorySource

Q = "Where were the members of the Apollo 11 crew born?"
TREE = {
    Q: ["1. Who were the crew members of Apollo 11?", "2. Where was [1] born?"],
    "1. Who were the crew members of Apollo 11?": 'Relate("Apollo 11", "crew member")',
    "2. Where was [1] born?": 'Relate([1], "place of birth")',
}
PASSAGES = [{"title": "Apollo 11", "text": "Apollo 11 was flown by Neil Armstrong, Buzz Aldrin and Michael Collins."}]


def closed_book_only(stage, prompt):
    """Every operator and reasoning step says Unknown; only the closed-book answer answers."""
    return answer_reply("Ohio") if stage == "closed_book" else answer_reply(paraphrase="Unknown")


async def test_a_run_answered_only_by_fallbacks_says_so_first(tmp_path, capsys):
    model = atomr_scripted_model({Q: TREE}, answer=closed_book_only)
    examples = [Example(id=f"q{i}", question=Q, answers=["Wapakoneta"]) for i in range(3)]
    result = await arun_eval("atomr", examples, tmp_path / "run", EvalOptions(
        model=model, sources=[InMemorySource(PASSAGES, name="wikipedia")], settings=Settings(cache=False),
        progress=False, concurrency=1))
    o = result.outcome
    assert o["answered"] == 3 and o["answered_by_fallback"] == 3
    assert o["fallbacks"]["closed-book root"] == 3
    assert any(k.startswith("node → direct RAG (child reasoning answered Unknown") for k in o["fallbacks"])
    assert describe_outcome(o).startswith("3 of 3 answered, ALL by fallbacks")
    records = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    row = summarize_run({"method": "atomr", "dataset": "toy"}, records, {})
    assert row["answered_by_fallback"] == 3 and row["fallbacks"]["closed-book root"] == 3
    table = markdown_tables([row])
    assert "every answer (3) came from a fallback" in table.splitlines()[2]
    assert headline(count_fallbacks(records)).startswith("WARNING: every answer")


def test_each_kind_is_read_from_the_trace():
    trace = {"plan_fallback": None, "partial": {"node": 2}, "nodes": [
        {"id": 1, "parent": 0, "kind": "operator", "fallback": "operator failure: unreadable model output (x)"},
        {"id": 2, "parent": 0, "kind": "operator", "fallback": "operator failure: no evidence from any selected source"},
        {"id": 0, "parent": None, "kind": "decomposed", "fallback": "child reasoning answered Unknown; closed-book answer"},
    ]}
    kinds = [f["kind"] for f in fallbacks_in(trace)]
    assert kinds == ["node → direct RAG (operator failure; unreadable reply)", "node → direct RAG (operator failure)",
                     "node → direct RAG (child reasoning answered Unknown)", "closed-book root", "budget"]
    assert [f["kind"] for f in fallbacks_in({"plan_fallback": "no plan", "nodes": []})] == ["plan failure"]
    kar3 = {"fallbacks": [{"stage": "answer", "kind": "KAR³ closed-book", "final": True, "reason": "closed-book: x"}]}
    assert fallbacks_in(kar3)[0]["kind"] == "KAR³ closed-book" and fallbacks_in(kar3)[0]["final"]
