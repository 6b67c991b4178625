"""Methods out as LangChain components: ArmRetriever and Kar3Retriever (from LangChain
documents, sync and async, in LCEL and create_retrieval_chain), and graph.as_tool()."""

from __future__ import annotations

import json

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import ToolCall
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda

from atomgraph.errors import ConfigError
from atomgraph.graphs.registry import build_method
from atomgraph.retrievers import ArmRetriever, Kar3Retriever
from atomgraph.settings import Settings
from atomgraph.testing import ScriptedChatModel, kar3_scripted_model
from atomgraph.tools.langchain_sources import documents_to_chunks, documents_to_objects

from tests.arm_graph_fixtures import OBJECTS, QUESTION
from tests.kar3_fixtures import PASSAGES, PLAN

ARM_DOCS = [Document(page_content=o.text, metadata={"id": o.id, "title": o.title, **(
    {"columns": list(o.columns), "rows": [list(r) for r in o.rows]} if o.is_table else {})}) for o in OBJECTS]


def arm_model() -> ScriptedChatModel:
    return ScriptedChatModel(stages={
        "arm_decompose": '["Heisenberg doctoral advisor", "died city"]',
        "arm_align": lambda prompt: prompt.split("Options:\n", 1)[1].splitlines()[0],
        "arm_verify": '{"reasoning": "advisor, then where he died", "objects": ["p1", "p2"]}',
        "arm_answer": "So the answer is: Munich",
    })


class Runs(BaseCallbackHandler):
    def __init__(self):
        self.retrievers, self.llm_tags = [], []

    def on_retriever_start(self, serialized, query, **kw):
        self.retrievers.append(kw.get("name") or serialized.get("name"))

    def on_chat_model_start(self, serialized, messages, **kw):
        self.llm_tags.append([t for t in kw.get("tags") or [] if t.startswith("stage:")])


@pytest.fixture(scope="module")
def arm() -> ArmRetriever:
    return ArmRetriever.from_documents(ARM_DOCS, model=arm_model(), k=3)


def test_documents_become_arm_objects_and_kar3_chunks():
    objs = documents_to_objects(ARM_DOCS)
    assert [o.id for o in objs] == [o.id for o in OBJECTS] and objs[5].is_table and objs[5].rows == OBJECTS[5].rows
    assert documents_to_objects([Document(page_content="x")])[0].id  # content id when none is given
    with pytest.raises(ConfigError, match=r"documents\[1\] repeats the id 'a'"):
        documents_to_objects([Document(page_content="x", metadata={"id": "a"}), Document(page_content="y", id="a")])
    with pytest.raises(ConfigError, match=r"documents\[0\] is a str"):
        documents_to_objects(["plain text"])
    with pytest.raises(ConfigError, match=r"documents\[0\]: missing field .columns."):
        documents_to_objects([Document(page_content="", metadata={"kind": "table"})])
    chunks = documents_to_chunks(ARM_DOCS[:2] + ARM_DOCS[:1])
    assert len(chunks) == 2 and chunks[0].title == "Werner Heisenberg"


def test_arm_retriever_sync_async_and_evidence(arm):
    runs = Runs()
    docs = arm.invoke(QUESTION, {"callbacks": [runs]})
    assert [d.metadata["id"] for d in docs][:2] == ["p1", "p2"] and len(docs) <= 3  # verified objects only (paper)
    first = docs[0].metadata
    # one vote per draft whose verification kept it: the base set's draft (0) and its expansions' (§3.2.2)
    assert first["title"] == "Werner Heisenberg" and first["rank"] == 1 and first["votes"] == len(first["verified_in"])
    assert first["confidence"] > 0 and first["verified_in"][0] == 0 and first["in_drafts"]
    assert first["keywords"] == ["Heisenberg doctoral advisor", "died city"] and first["aligned_ngrams"]
    json.dumps([d.metadata for d in docs])
    # the graph's model calls are children of the retriever run; no answer stage
    assert runs.retrievers[0] == "ArmRetriever" and "arm_objects" in runs.retrievers  # the retrieval span
    stages = {t[0] for t in runs.llm_tags if t}
    assert "stage:arm_verify" in stages and "stage:arm_answer" not in stages
    # k per call: a draft of two objects, of which only the verified ones come back (which two the MIP picks
    # depends on R_i and the objective: the paper's cosine R_i by default)
    two = arm.invoke(QUESTION, k=2)
    assert 1 <= len(two) <= 2 and {d.metadata["id"] for d in two if d.metadata["verified"]} <= {"p1", "p2"}
    paper = ArmRetriever.from_documents(ARM_DOCS, model=arm_model(), k=3, paper=True)
    got = paper.invoke(QUESTION, k=2)
    assert 1 <= len(got) <= 2 and {d.metadata["id"] for d in got if d.metadata["verified"]} <= {"p1", "p2"}


async def test_arm_retriever_async_and_search_kwargs():
    r = ArmRetriever.from_documents(ARM_DOCS, model=arm_model())
    r.search_kwargs = {"k": 1}
    docs = await r.ainvoke(QUESTION)
    assert [d.metadata["id"] for d in docs] == ["p1"]
    with pytest.raises(ConfigError, match="only 'k'"):
        ArmRetriever(graph=r.graph, index=r.index, search_kwargs={"filter": 1}).invoke(QUESTION)


@pytest.fixture(scope="module")
def kar3(tmp_path_factory) -> Kar3Retriever:
    settings = Settings(cache=False, chroma_path=str(tmp_path_factory.mktemp("kar3docs")))
    rows = [json.loads(line) for line in PASSAGES.read_text(encoding="utf-8").splitlines() if line.strip()]
    docs = [Document(page_content=r["text"], metadata={"title": r["title"]}) for r in rows]
    wanted = {"Werner Heisenberg", "Arnold Sommerfeld", "Munich", "Max Born", "Niels Bohr", "Ulm"}
    docs = [d for d in docs if d.metadata["title"] in wanted]
    return Kar3Retriever.from_documents(docs, model=kar3_scripted_model(PLAN, answer="Munich"),
                                        collection="userdocs", settings=settings, k=3)


def test_kar3_retriever_from_documents(kar3):
    stats = kar3.metadata["atomize"]
    assert stats["atomized"] >= 10 and stats["atoms"] > stats["atomized"] and stats["skipped"] == 0
    runs = Runs()
    docs = kar3.invoke("In which city did Werner Heisenberg's doctoral advisor die?", {"callbacks": [runs]})
    assert docs and all(d.metadata["source"] == "kar3" and d.metadata["atom"] for d in docs)
    assert docs[0].metadata["round"] == 1 and docs[0].metadata["exit"]
    assert any("Sommerfeld" in d.page_content for d in docs)
    assert "stage:kar3_answer" not in {t[0] for t in runs.llm_tags if t}
    assert runs.retrievers[0] == "Kar3Retriever" and "kar3_atoms" in runs.retrievers
    json.dumps([d.metadata for d in docs])


async def test_kar3_retriever_async_and_reindex_skips(kar3, tmp_path):
    docs = await kar3.ainvoke("In which city did Werner Heisenberg's doctoral advisor die?", k=1)
    assert len(docs) == 1


def test_retrievers_in_lcel_and_create_retrieval_chain(arm, kar3):
    from langchain_classic.chains import create_retrieval_chain
    from langchain_classic.chains.combine_documents import create_stuff_documents_chain

    prompt = ChatPromptTemplate.from_messages([("system", "Context:\n{context}"), ("human", "{input}")])
    llm = ScriptedChatModel(default="Munich")
    for retriever in (arm, kar3):
        chain = create_retrieval_chain(retriever, create_stuff_documents_chain(llm, prompt))
        out = chain.invoke({"input": QUESTION})
        assert out["answer"] == "Munich" and out["context"]
    lcel = arm | RunnableLambda(lambda docs: [d.metadata["id"] for d in docs])
    assert lcel.invoke(QUESTION)[:2] == ["p1", "p2"]


def test_graph_as_tool_returns_the_answer_not_the_output_dict():
    def kb(query):
        return [Document(page_content="Albert Einstein was born in Ulm.", metadata={"title": "Albert Einstein",
                                                                                     "id": "e1"})]

    graph = build_method("rag", model=ScriptedChatModel(stages={"rag": "So the answer is: Ulm"}), sources=[kb])
    tool = graph.as_tool()
    assert tool.name == "ask_rag" and "Standard RAG" in tool.description
    assert tool.invoke({"question": "Where was Einstein born?"}) == "Ulm"
    with_ev = tool.invoke({"question": "Where was Einstein born?", "with_evidence": True})
    assert with_ev.startswith("Ulm\n\nEvidence:\n[1] Albert Einstein (e1): Albert Einstein was born in Ulm.")
    msg = tool.invoke(ToolCall(name="ask_rag", args={"question": "Where was Einstein born?"}, id="c1", type="tool_call"))
    assert msg.content == "Ulm" and msg.artifact["retrieved_ids"] == ["e1"]
    json.dumps(msg.artifact)
    assert graph.with_config({"tags": ["x"]}).as_tool().name == "ask_rag"  # copies keep the method


async def test_graph_as_tool_async_and_retriever_for_retrieval_methods_only():
    graph = build_method("standard", model=ScriptedChatModel(stages={"standard": "So the answer is: 42"}))
    assert await graph.as_tool(evidence=True).ainvoke({"question": "What is six times seven?"}) \
        == "42\n\nEvidence:\n(none)"
    with pytest.raises(ConfigError, match="not a retrieval method"):
        graph.as_retriever()
    arm_graph = build_method("arm", model=arm_model(), objects=documents_to_objects(ARM_DOCS))
    assert isinstance(arm_graph.as_retriever(search_kwargs={"k": 2}), ArmRetriever)
