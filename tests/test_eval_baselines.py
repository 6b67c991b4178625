"""The baseline graphs (standard, CoT, RAG) with a scripted model, and the method registry."""

from __future__ import annotations

import pytest

from atomgraph.errors import ConfigError, ParseError, SourceError
from atomgraph.graphs.registry import build_method, method_names, register_method
from atomgraph.prompts.stage import extract_answer
from atomgraph.state.run import Evidence
from atomgraph.testing import ScriptedChatModel
from atomgraph.tools.base import KnowledgeSource


class KeywordSource(KnowledgeSource):
    """A small in-memory text source: passages ranked by shared words with the query."""

    kind = "text"

    def __init__(self, name: str, passages: dict[str, str], fail: bool = False):
        self.name, self.passages, self.fail = name, passages, fail

    def search(self, query: str, k: int = 3) -> list[Evidence]:
        if self.fail:
            raise SourceError(f"{self.name} is down")
        words = set(query.lower().split())
        ranked = sorted(self.passages.items(), key=lambda kv: -len(words & set(kv[1].lower().split())))
        return [Evidence(title=t, text=x, source=self.name) for t, x in ranked[:k]]


PASSAGES = {
    "Gustave Eiffel": "Gustave Eiffel was born in Dijon in 1832.",
    "Dijon": "Dijon is a city in eastern France, capital of the Côte-d'Or department.",
    "Lyon": "Lyon is the third-largest city of France.",
}


@pytest.mark.parametrize("text,answer", [
    ("Reasoning here.\nSo the answer is: Paris.", "Paris"),
    ("so the answer is: **Washington D.C.**", "Washington D.C."),
    ("The answer is Dijon", "Dijon"),
    ("Dijon\nJust a line", "Dijon"),  # no marker: the first line (the answer comes first)
    ("So the answer is: 1832.\nExtra commentary", "1832"),
])
def test_extract_answer(text, answer):
    assert extract_answer(text) == answer


def test_extract_answer_rejects_empty():
    with pytest.raises(ParseError):
        extract_answer("   ")
    with pytest.raises(ParseError):
        extract_answer("So the answer is:")


async def test_standard_and_cot_are_closed_book():
    model = ScriptedChatModel(stages={"cot": "Eiffel was born in Dijon.\nSo the answer is: Dijon",
                                      "standard": "So the answer is: Dijon"})
    for method in ("standard", "cot"):
        out = await build_method(method, model=model).ainvoke({"question": "Where was Gustave Eiffel born?"})
        assert out["answer"] == "Dijon" and out["answers"] == ["Dijon"]
        assert len(out["llm_calls"]) == 1 and out["llm_calls"][0]["stage"] == method
        assert out["retriever_calls"] == [] and out["error"] is None and out["stopped"] is None
    standard, cot = model.prompts
    assert "Astrid Young" in standard and "1939" not in standard  # two demos, no reasoning
    assert "1939" in cot and "step by step" in cot


async def test_rag_retrieves_once_from_every_source_and_survives_a_failure():
    model = ScriptedChatModel(default="So the answer is: Dijon")
    good = KeywordSource("wiki", PASSAGES)
    bad = KeywordSource("web", PASSAGES, fail=True)
    graph = build_method("rag", model=model, sources=[good, bad])
    out = await graph.ainvoke({"question": "Where was Gustave Eiffel born?"})
    assert out["answer"] == "Dijon"
    assert [c["source"] for c in out["retriever_calls"]] == ["wiki", "web"]
    assert out["retriever_calls"][1]["error"] and "down" in out["retriever_calls"][1]["error"]
    assert out["retrieved_titles"][0] == "Gustave Eiffel" and len(out["retrieved_titles"]) == 3
    assert "Gustave Eiffel | Gustave Eiffel was born in Dijon" in model.prompts[0]
    assert out["trace"]["evidence"][0]["source"] == "wiki"


async def test_model_failure_and_unreadable_output_are_recorded_not_raised():
    failing = ScriptedChatModel(default=RuntimeError("rate limited"))
    out = await build_method("standard", model=failing).ainvoke({"question": "q?"})
    assert out["answer"] == "" and "rate limited" in out["error"]
    assert out["llm_calls"][0]["error"]
    empty = ScriptedChatModel(default="")
    out = await build_method("cot", model=empty).ainvoke({"question": "q?"})
    assert out["answer"] == "" and "empty" in out["error"]


def test_registry():
    assert {"atomr", "standard", "cot", "rag"} <= set(method_names())
    with pytest.raises(ConfigError, match="registered methods: .*rag"):
        build_method("nope")
    register_method("echo-standard", "atomgraph.graphs.baselines:build_standard_graph")
    assert build_method("echo-standard", model=ScriptedChatModel(default="x")) is not None


def test_running_without_a_model_is_a_config_error():
    graph = build_method("cot")  # compiles without a model (Studio, imports); the run needs one
    with pytest.raises(ConfigError, match="no chat model"):
        graph.invoke({"question": "Who?"})
    import atomgraph.graphs.baselines as b  # importing needs no model

    assert callable(b.build_rag_graph)


async def test_hostile_question_text_reaches_the_model_verbatim():
    hostile = 'What is {question} }} {{evidence}} "; DROP TABLE x; --?'
    model = ScriptedChatModel(default="So the answer is: weird")
    out = await build_method("rag", model=model, sources=[KeywordSource("wiki", PASSAGES)]).ainvoke({"question": hostile})
    assert out["answer"] == "weird"
    assert hostile in model.prompts[0]
    # a braces-and-JSON reply is markup, not an answer: refused with its reason
    model = ScriptedChatModel(default="So the answer is: {weird}")
    out = await build_method("rag", model=model, sources=[KeywordSource("wiki", PASSAGES)]).ainvoke({"question": hostile})
    assert out["answer"] == "" and "answer refused (markup)" in out["error"]


async def test_a_reply_over_the_cap_is_refused_and_kept_cut_and_marked():
    from atomgraph.prompts.stage import REPLY_CUT_MARK

    model = ScriptedChatModel(default="So the answer is: " + "x" * 200_000)
    out = await build_method("rag", model=model, sources=[KeywordSource("wiki", PASSAGES)]).ainvoke(
        {"question": "Where was Gustave Eiffel born?"})
    assert out["answer"] == "" and "answer refused (too_long)" in out["error"]
    response = out["trace"]["response"]
    assert response.endswith(REPLY_CUT_MARK) and len(response) == 256 * 8 + len(REPLY_CUT_MARK)


async def test_a_restated_question_is_not_a_copied_demonstration():
    q = "Where was Gustave Eiffel born?"
    model = ScriptedChatModel(default=f"Question: {q}\nAnswer: So the answer is: Dijon")
    out = await build_method("standard", model=model).ainvoke({"question": q})
    assert out["answer"] == "Dijon" and out["error"] is None
    demo = "Question: Who is the oldest, Sid Haig or Vic Darchinyan?\nAnswer: So the answer is: Sid Haig"
    out = await build_method("standard", model=ScriptedChatModel(default=demo)).ainvoke({"question": q})
    assert out["answer"] == "" and "answer refused (demonstration)" in out["error"]
