"""Bring your own knowledge: LangChain retrievers, vector stores (a real embedded Chroma with the
bundled embedding model) and plain functions as knowledge sources, and retrieval spans."""

from __future__ import annotations

import json

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from atomgraph.errors import ConfigError
from atomgraph.graphs.registry import build_method
from atomgraph.settings import Settings
from atomgraph.testing import ScriptedChatModel
from atomgraph.tools.langchain_sources import LangChainSource, as_source, document_to_evidence
from atomgraph.tools.registry import as_source_set, build_sources

DOCS = [
    Document(page_content="Ulm Minster has the tallest church steeple in the world.",
             metadata={"title": "Ulm Minster", "id": "p1", "year": 1890}),
    Document(page_content="Albert Einstein was born in Ulm in 1879.", metadata={"title": "Albert Einstein", "id": "p2"}),
    Document(page_content="Werner Heisenberg studied under Arnold Sommerfeld in Munich.",
             metadata={"source": "Werner Heisenberg", "doc_id": "p3"}),
]
RAG_REPLY = "So the answer is: Ulm"
FOLDER: dict[str, str] = {}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A user's own langchain_chroma.Chroma store (embedded, the bundled MiniLM embeddings)."""
    from langchain_chroma import Chroma

    from atomgraph.embeddings import embedding_model

    emb = embedding_model(Settings())
    FOLDER["store"] = str(tmp_path_factory.mktemp("userchroma"))
    s = Chroma(collection_name="my_docs", embedding_function=emb, persist_directory=FOLDER["store"])
    s.add_documents(DOCS)
    return s


class Recorder(BaseCallbackHandler):
    def __init__(self):
        self.starts, self.ends, self.errors = [], [], []

    def on_retriever_start(self, serialized, query, **kw):
        self.starts.append((kw.get("name"), query, kw.get("tags"), kw.get("metadata")))

    def on_retriever_end(self, documents, **kw):
        self.ends.append(documents)

    def on_retriever_error(self, error, **kw):
        self.errors.append(error)


class Broken(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager):
        raise RuntimeError("index is locked")


def test_vector_store_is_a_source_with_inferred_name_and_mapped_metadata(store):
    src = as_source(store)
    assert isinstance(src, LangChainSource) and src.name == "my_docs" and src.kind == "text"
    assert "my_docs" in src.description
    hits = src.search("Where was Einstein born?", k=2)
    assert len(hits) == 2
    assert hits[0].title == "Albert Einstein" and hits[0].id == "p2" and hits[0].source == "my_docs"
    assert hits[0].score is not None
    assert src.search("  ") == []


def test_retriever_and_callable_sources(store):
    r = as_source(store.as_retriever(search_kwargs={"k": 1}), name="handbook", description="Our handbook")
    assert (r.name, r.description) == ("handbook", "Our handbook")
    assert len(r.search("Ulm steeple", k=3)) == 3  # a vector-store retriever gets the caller's k

    def lookup(query: str) -> list[Document]:
        return [DOCS[2], "a plain string result"]

    f = as_source(lookup)
    assert f.name == "lookup"
    hits = f.search("Heisenberg")
    assert hits[0].title == "Werner Heisenberg" and hits[0].id == "p3"
    assert hits[1].text == "a plain string result"
    both = as_source(lambda q, k: DOCS[:k], name="first")
    assert [h.id for h in both.search("x", k=2)] == ["p1", "p2"]


def test_document_metadata_mapping():
    ev = document_to_evidence(Document(page_content="t", metadata={"name": "N", "chunk_id": 7, "url": "http://x",
                                                                    "lang": "en"}, id="ignored"), "s")
    assert (ev.title, ev.id, ev.url, ev.metadata) == ("N", "7", "http://x", {"lang": "en"})
    ev = document_to_evidence(Document(page_content="t", id="doc-9"), "s")
    assert ev.id == "doc-9" and ev.title == ""


@pytest.mark.parametrize("bad", [42, object(), {"a": 1}, Document, [1, 2]])
def test_anything_else_is_a_clear_config_error(bad):
    with pytest.raises(ConfigError, match="accepted: a KnowledgeSource, a LangChain BaseRetriever"):
        as_source_set(bad if not isinstance(bad, list) else bad, Settings())


def test_source_set_dedupes_names_and_accepts_one_object(store):
    s = as_source_set([store, store.as_retriever()], Settings())
    assert sorted(s.available) == ["my_docs", "my_docs_2"]
    assert list(as_source_set(store, Settings()).available) == ["my_docs"]


def test_import_string_in_settings_names_a_user_object(monkeypatch, tmp_path):
    (tmp_path / "user_sources.py").write_text(
        "from langchain_core.documents import Document\n"
        "def kb(query):\n    return [Document(page_content='Einstein was born in Ulm.', metadata={'title': 'E'})]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    s = build_sources(Settings(sources=["user_sources:kb"]))
    assert list(s.available) == ["kb"]
    assert s.get("kb").search("Einstein")[0].title == "E"
    with pytest.raises(ConfigError, match="cannot import"):
        build_sources(Settings(sources=["user_sources:nope"]))


def test_rag_over_a_vector_store_and_a_retriever_records_spans(store):
    model = ScriptedChatModel(stages={"rag": RAG_REPLY})
    graph = build_method("rag", model=model, sources=[store, store.as_retriever(), Broken()])
    rec = Recorder()
    out = graph.invoke({"question": "Where was Albert Einstein born?"}, {"callbacks": [rec]}, context={"top_k": 2})
    assert out["answer"] == "Ulm"
    calls = {c.source if hasattr(c, "source") else c["source"]: c for c in out["retriever_calls"]}
    assert set(calls) == {"my_docs", "my_docs_2", "broken"}
    err = calls["broken"].error if hasattr(calls["broken"], "error") else calls["broken"]["error"]
    assert "index is locked" in err
    assert "p2" in out["retrieved_ids"]
    # every source call is a retriever run: query in, documents out (or the error)
    ours = [(n, q) for n, q, *_ in rec.starts if n.startswith("search_")]
    assert sorted(n for n, _ in ours) == ["search_broken", "search_my_docs", "search_my_docs_2"]
    assert all(q == "Where was Albert Einstein born?" for _, q in ours)
    # the user's own retrievers run inside those spans (VectorStoreRetriever, Broken)
    assert sorted(n for n, *_ in rec.starts if not n.startswith("search_")) == ["Broken", "VectorStoreRetriever"]
    assert all(isinstance(d[0], Document) for d in rec.ends)
    assert len(rec.errors) == 2  # Broken's own run and our span
    assert any(d.metadata.get("title") == "Albert Einstein" for docs in rec.ends for d in docs)


async def test_async_rag_over_a_callable(store):
    async def kb(query: str) -> list[Document]:
        return DOCS[:1]

    graph = build_method("rag", model=ScriptedChatModel(stages={"rag": RAG_REPLY}), sources=[kb])
    rec = Recorder()
    out = await graph.ainvoke({"question": "Which church has the tallest steeple?"}, {"callbacks": [rec]})
    assert out["retrieved_ids"] == ["p1"] and rec.starts[0][0] == "search_kb"


def test_source_as_retriever_follows_langchain_convention(store):
    src = as_source(store)
    assert len(src.as_retriever(search_kwargs={"k": 1}).invoke("Einstein")) == 1
    assert len(src.as_retriever().invoke("Einstein")) == 3
    assert len(src.as_retriever(search_kwargs={"k": 1}).invoke("Einstein", k=2)) == 2
    with pytest.raises(ConfigError, match="only 'k'"):
        src.as_retriever(search_kwargs={"filter": {}})
    json.dumps([d.metadata for d in src.as_retriever().invoke("Einstein")])


def test_users_own_chroma_collection_opens_with_their_embeddings(store, tmp_path):
    """A collection built by langchain_chroma (no atomgraph metadata, Chroma's default squared-L2
    space), opened by folder (a second client with other settings) or by the user's client."""
    import chromadb

    from atomgraph.embeddings import embedding_model
    from atomgraph.tools.chroma_source import ChromaWikipediaSource

    emb = embedding_model(Settings())
    folder = FOLDER["store"]
    refused = ChromaWikipediaSource("my_docs", path=folder)
    assert "records no embedding model" in refused.unavailable_reason()
    by_path = ChromaWikipediaSource("my_docs", path=folder, embeddings=emb, name="mine")
    assert by_path.unavailable_reason() is None
    hits = by_path.search("Where was Einstein born?", k=3)
    assert hits[0].title == "Albert Einstein" and hits[0].source == "mine"
    assert -1.0 <= hits[-1].score < hits[0].score <= 1.0
    # the user's own client, opened first with default settings, then ours on the same folder
    other = tmp_path / "own"
    theirs = chromadb.PersistentClient(path=str(other))
    theirs.create_collection("notes").add(ids=["n1"], documents=["Ulm lies on the Danube."],
                                          embeddings=[emb.embed_query("Ulm lies on the Danube.")],
                                          metadatas=[{"title": "Ulm"}])
    src = ChromaWikipediaSource("notes", path=str(other), embeddings=emb)
    assert src.search("Which river flows through Ulm?", k=1)[0].title == "Ulm"
    via_client = ChromaWikipediaSource("notes", client=theirs, embeddings=emb)
    assert via_client.search("Danube", k=1)[0].id == "n1"
