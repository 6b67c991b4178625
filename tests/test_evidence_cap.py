"""Evidence kept in outputs and records is cut (state.run.MAX_EVIDENCE_CHARS per item, its full length
noted): a retriever's 10 MB passage costs a trace 4,000 characters, not 10 MB per question."""

from __future__ import annotations

import json

import pytest

from atomgraph.graphs.registry import build_method
from atomgraph.settings import Settings
from atomgraph.state.run import MAX_EVIDENCE_CHARS, Evidence, evidence_record
from atomgraph.testing import ScriptedChatModel
from atomgraph.tools.memory_source import InMemorySource

Q = "In which city did Arnold Sommerfeld die?"
HUGE = "Arnold Sommerfeld died in Munich. " + "x" * 10_000_000


def test_an_item_is_cut_with_its_length_noted():
    rec = evidence_record(Evidence(source="w", title="T" * 5000, text=HUGE, id="1"))
    assert len(rec["text"]) == MAX_EVIDENCE_CHARS == 4000 and rec["text_chars"] == len(HUGE)
    assert len(rec["title"]) == 4000 and rec["title_chars"] == 5000
    small = evidence_record(Evidence(source="w", title="Munich", text="short", id="2"))
    assert small == {"id": "2", "title": "Munich", "source": "w", "url": None, "text": "short"}


@pytest.mark.parametrize("method", ["rag", "ircot", "iter_retgen", "atomr"])
async def test_a_10_mb_passage_is_kept_cut_in_the_output(method):
    from atomgraph.testing import answer_reply, atomr_scripted_model

    source = InMemorySource([{"title": "Arnold Sommerfeld", "text": HUGE}], name="wikipedia")
    if method == "atomr":
        model = atomr_scripted_model({Q: {Q: 'Relate("Arnold Sommerfeld", "place of death")'}},
                                     answer=lambda s, p: answer_reply("Munich"), sources_reply="Wikipedia")
    else:
        model = ScriptedChatModel(default="Sommerfeld died in Munich.\nSo the answer is: Munich")
    graph = build_method(method, model=model, settings=Settings(cache=False), sources=[source])
    out = await graph.ainvoke({"question": Q})
    size = len(json.dumps(out, default=str))
    assert size < 100_000, (method, size)
    text = json.dumps(out["trace"], default=str)
    assert f'"text_chars": {len(HUGE)}' in text, (method, text[:500])
