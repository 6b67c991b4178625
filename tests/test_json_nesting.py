"""A nesting limit on every JSON reader (atomgraph.text.MAX_JSON_DEPTH): a 4,000-deep array in a model's
reply, a plan or a file ends in a recorded parse error, never a RecursionError."""

from __future__ import annotations

import json

import pytest

from atomgraph.demo_pack import load_passages
from atomgraph.errors import ParseError
from atomgraph.graphs.registry import build_method
from atomgraph.jsonl import loads_strict
from atomgraph.prompts.atomr.tree_parser import parse_tree
from atomgraph.settings import Settings
from atomgraph.state.atomr import TreeParseError
from atomgraph.testing import ScriptedChatModel, answer_reply, atomr_scripted_model
from atomgraph.text import MAX_JSON_DEPTH, TooDeep, check_depth, json_depth, loads, read_json
from atomgraph.tools.memory_source import InMemorySource

Q = "In which city did Werner Heisenberg's doctoral advisor die?"
DEEP = "[" * 4000 + "]" * 4000  # 8 KB
REPLIES = [DEEP, json.dumps({Q: "x"})[:-1] + ', "deep": ' + DEEP + "}", f"Here is the plan:\n```json\n{DEEP}\n```",
           '{"answer": ' + DEEP + "}", "{" * 4000 + "}" * 4000, "(" * 4000 + ")" * 4000]


def test_depth_is_measured_without_recursion():
    assert json_depth('{"a": [1, {"b": "[[[[ not counted ]"}]}') == 3
    assert json_depth("[" * 100_000, limit=MAX_JSON_DEPTH) == MAX_JSON_DEPTH + 1
    check_depth("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)
    with pytest.raises(TooDeep, match="nested deeper than 100 levels"):
        check_depth(DEEP)


@pytest.mark.parametrize("reply", REPLIES)
def test_the_readers_refuse_deep_nesting(reply):
    assert read_json(reply) is None
    with pytest.raises(ValueError):
        loads(reply)
    with pytest.raises(TreeParseError):
        parse_tree(reply, Q)
    with pytest.raises(ParseError, match="nested too deeply"):
        loads_strict(reply, "reply.json")


@pytest.mark.parametrize("reply", REPLIES[:3])
async def test_atomr_with_a_deep_plan_records_a_parse_error(reply):
    model = atomr_scripted_model(lambda text: reply, answer=lambda s, p: answer_reply("Munich"), sources_reply="Wikipedia")
    graph = build_method("atomr", model=model, settings=Settings(cache=False),
                         sources=[InMemorySource(load_passages(), name="wikipedia")])
    out = await graph.ainvoke({"question": Q})
    assert out["answer"] == "" and "nested" in out["error"], out["error"]
    assert any("nested" in (c.get("parse_error") or "") for c in out["llm_calls"])


def _stages():
    from tests.openai_compat_server import all_stages

    return all_stages()


@pytest.mark.parametrize("reply", REPLIES)
def test_every_stage_s_parser_reads_a_deep_reply_as_unreadable(reply):
    """Every stage of every method (ATOMR, the baselines, KAR³, ARM, the compared methods): its parser,
    on each deep reply, reads something or says why it cannot — never a RecursionError."""
    from langchain_core.exceptions import OutputParserException

    stages = _stages()
    assert len(stages) > 20
    for name, stage in stages.items():
        try:
            stage.parser.parse(reply)
        except (OutputParserException, ValueError):
            pass


@pytest.mark.parametrize("method", ["decomposed_rag", "rag", "self_ask"])
async def test_a_method_whose_every_reply_is_deep_ends_with_its_error(method):
    sources = [InMemorySource(load_passages(), name="wikipedia")]
    graph = build_method(method, model=ScriptedChatModel(default='{"answer": ' + DEEP + "}"),
                         settings=Settings(cache=False), sources=sources)
    out = await graph.ainvoke({"question": Q})
    assert out["answer"] == "" and out["error"], (method, out["answer"])


def test_a_deep_jsonl_file_is_one_line_of_error(tmp_path, capsys):
    from atomgraph import cli

    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "1", "predicted": "a", "gold": ["a"]}) + "\n" + '{"id": "2", "predicted": "b", "gold": ' + DEEP + "}\n")
    code = cli.main(["eval", "score", str(data)])
    err = capsys.readouterr().err
    assert code == 2 and "nested too deeply" in err and "Traceback" not in err, err
