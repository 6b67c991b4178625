"""The Wikipedia source over embedded Chroma, with the real local embedding model."""

from __future__ import annotations

import chromadb
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding

from atomgraph.embeddings import SentenceTransformerEmbeddings, embedding_id, embedding_model
from atomgraph.errors import ConfigError, SourceError
from atomgraph.settings import Settings
from atomgraph.state.run import Evidence
from atomgraph.tools.chroma_source import ChromaWikipediaSource, create_collection, wikipedia_from_settings
from atomgraph.tools.corpus_readers import read_passages
from atomgraph.tools.ingest import ingest
from atomgraph.tools.registry import build_sources

COLLECTION = "wiki-test"
N = 200


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, shared_data):
    """200 MuSiQue paragraphs embedded once for the module."""
    path = tmp_path_factory.mktemp("chroma")
    settings = Settings(chroma_path=str(path), chroma_collection=COLLECTION, sources=["wikipedia"])
    corpus = shared_data / "hipporag" / "musique_train_corpus.json"
    stats = ingest([corpus], COLLECTION, settings=settings, limit=N, progress=False)
    passages = [p for _, p in zip(range(N), read_passages(corpus))]
    return settings, stats, passages


def test_index_holds_the_passages(indexed):
    settings, stats, _ = indexed
    assert stats.read == N
    assert stats.added == stats.unique == stats.count
    assert stats.unique >= N - 5  # a few corpus paragraphs are duplicates
    assert ChromaWikipediaSource(COLLECTION, settings=settings).unavailable_reason() is None


def test_search_returns_scored_title_text_evidence(indexed):
    settings, _, passages = indexed
    source = wikipedia_from_settings(settings)
    target = passages[17]
    first_sentence = target.text.split(". ")[0]
    hits = source.search(f"{target.title} {first_sentence}", k=3)
    assert len(hits) == 3
    assert all(isinstance(h, Evidence) and h.source == "wikipedia" and h.id for h in hits)
    assert hits[0].title == target.title and hits[0].text.startswith(first_sentence)
    assert hits[0].render() == f"{target.title} | {hits[0].text}"
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 <= s <= 1.0001 for s in scores)
    assert scores[0] > 0.5  # cosine similarity of a near-verbatim query
    assert source.search("   ", k=3) == []


def test_k_larger_than_collection_is_clamped(indexed):
    settings, stats, _ = indexed
    hits = ChromaWikipediaSource(COLLECTION, settings=settings).search("music", k=stats.count + 50)
    assert len(hits) == stats.count


async def test_asearch(indexed):
    settings, _, passages = indexed
    hits = await wikipedia_from_settings(settings).asearch(passages[3].title, k=2)
    assert len(hits) == 2


async def test_concurrent_searches_embed_together_and_retrieve_as_one_at_a_time(indexed):
    """Searches running at the same moment embed their queries in one batch and query Chroma once
    (atomgraph.tools.query_embedding.Batcher): the same passages, in the same order, with the same scores as each search alone."""
    import asyncio
    import threading

    settings, _, passages = indexed
    queries = [f"{p.title} {p.text.split('. ')[0]}" for p in passages[:20]] + ["music", "a river in France"]
    alone = ChromaWikipediaSource(COLLECTION, settings=settings)
    expected = [alone.search(q, k=5) for q in queries]
    together = ChromaWikipediaSource(COLLECTION, settings=settings)
    encode, first, queued = together.embeddings.encode, threading.Event(), threading.Event()

    def held_encode(texts):  # the first batch waits until other searches queue behind it
        if not first.is_set():
            first.set()
            queued.wait(60)
        return encode(texts)

    together.embeddings.encode = held_encode

    async def watch():
        while len(together._searches._pending) < 3:
            await asyncio.sleep(0.01)
        queued.set()

    watcher = asyncio.create_task(watch())
    got = await asyncio.gather(*(together.asearch(q, k=5) for q in queries))
    watcher.cancel()
    for new, old in zip(got, expected):
        assert [h.id for h in new] == [h.id for h in old]
        assert [h.score for h in new] == pytest.approx([h.score for h in old], abs=1e-4)
    batcher = together._searches
    assert batcher.keys == len(queries) and batcher.batches < len(queries)
    assert alone._searches.batches == len(queries)  # one at a time: one batch each


def test_a_failed_batch_fails_each_of_its_searches():
    from atomgraph.tools.query_embedding import QueryBatcher

    class Broken(SentenceTransformerEmbeddings):
        def encode(self, texts):
            raise RuntimeError("model gone")

    batcher = QueryBatcher(Broken("nowhere", "broken"))
    with pytest.raises(RuntimeError, match="model gone"):
        batcher.vectors(["a"])
    assert batcher.vectors([]) == [] and not batcher._busy


def test_a_failed_embedding_is_named_as_such(indexed, monkeypatch):
    """The embedding model's error reaches the search's caller as a failed search that names it, not as Chroma's."""
    settings, _, _ = indexed
    source = ChromaWikipediaSource(COLLECTION, settings=settings)

    def broken(texts):
        raise RuntimeError("model gone")

    monkeypatch.setattr(source.embeddings, "encode", broken)  # the model object may be shared: put back after
    with pytest.raises(SourceError, match=r"embedding the queries for .* failed: RuntimeError: model gone"):
        source.search("music", k=2)


def test_registry_builds_it(indexed):
    settings, _, _ = indexed
    sources = build_sources(settings, ["wikipedia"])
    assert list(sources.available) == ["wikipedia"]
    assert sources.get("wikipedia").kind == "text"


def test_retriever_and_tool_adaptors(indexed):
    settings, _, passages = indexed
    source = wikipedia_from_settings(settings)
    target = passages[42]
    docs = source.as_retriever(k=2).invoke(f"{target.title} {target.text[:120]}")
    assert len(docs) == 2 and isinstance(docs[0], Document)
    assert docs[0].metadata["title"] == target.title and docs[0].metadata["source"] == "wikipedia"
    assert "score" in docs[0].metadata
    out = source.as_tool(k=2).invoke({"query": f"{target.title} {target.text[:120]}"})
    # a tool's result is evidence: fenced as data for the agent that reads it (atomgraph.injection)
    assert out.startswith(f"<evidence>\n[1] {target.title} | ") and "\n[2] " in out and out.endswith("</evidence>")


def test_langchain_vectorstore_view(indexed):
    settings, _, passages = indexed
    store = wikipedia_from_settings(settings).vectorstore()
    target = passages[5]
    docs = store.similarity_search_with_relevance_scores(f"{target.title} {target.text[:120]}", k=2)
    assert docs[0][0].metadata["title"] == target.title
    assert 0 < docs[0][1] <= 1.0001


def test_different_embedding_model_is_refused(indexed, tmp_path):
    settings, _, _ = indexed
    corpus = tmp_path / "more.tsv"  # valid input, so the store itself is what refuses
    corpus.write_text("id\ttext\ttitle\nx1\tSome passage text.\tSome title\n", encoding="utf-8")
    other = DeterministicFakeEmbedding(size=384)
    source = ChromaWikipediaSource(COLLECTION, settings=settings, embeddings=other)
    with pytest.raises(ConfigError, match="built with embedding model 'sentence-transformers/all-MiniLM-L6-v2'"):
        source.search("anything")
    assert "built with embedding model" in source.unavailable_reason()
    with pytest.raises(ConfigError, match="built with embedding model"):
        ingest([str(corpus)], COLLECTION, settings=settings, embeddings=other, fmt="tsv", progress=False)


def test_missing_collection_is_unavailable(tmp_path):
    settings = Settings(chroma_path=str(tmp_path / "nowhere"), chroma_collection="absent")
    source = wikipedia_from_settings(settings)
    reason = source.unavailable_reason()
    assert "does not exist" in reason and "atomgraph index wikipedia" in reason
    assert not (tmp_path / "nowhere").exists()  # checking creates nothing
    with pytest.raises(SourceError, match="atomgraph index wikipedia"):
        source.search("x")
    sources = build_sources(settings, ["wikipedia"])
    assert not sources.available and "atomgraph index wikipedia" in sources.unavailable["wikipedia"]


def test_empty_collection_is_unavailable(tmp_path):
    client = chromadb.PersistentClient(path=str(tmp_path / "db"))
    create_collection(client, "empty-one", "sentence-transformers/all-MiniLM-L6-v2", 384)
    settings = Settings(chroma_path=str(tmp_path / "db"))
    reason = ChromaWikipediaSource("empty-one", settings=settings).unavailable_reason()
    assert "is empty" in reason and "atomgraph index wikipedia" in reason


def test_foreign_collection_is_refused(tmp_path):
    client = chromadb.PersistentClient(path=str(tmp_path / "db"))
    c = client.create_collection("foreign", embedding_function=None)
    c.add(ids=["a"], documents=["x"], embeddings=[[0.1] * 384])
    source = ChromaWikipediaSource("foreign", settings=Settings(chroma_path=str(tmp_path / "db")))
    assert "records no embedding model" in source.unavailable_reason()


def test_embedding_model_names():
    default = embedding_model(Settings())
    assert isinstance(default, SentenceTransformerEmbeddings)
    assert embedding_id(default) == "sentence-transformers/all-MiniLM-L6-v2"
    assert embedding_id(embedding_model("sentence-transformers/all-MiniLM-L6-v2")) == embedding_id(default)
    assert default.model is embedding_model(Settings()).model  # loaded once per process
    assert len(default.embed_query("hello")) == default.dimension == 384
    openai = embedding_model(Settings(embedding_model="openai:text-embedding-3-small", openai_api_key="sk-test"))
    assert embedding_id(openai) == "openai:text-embedding-3-small"
    mine = DeterministicFakeEmbedding(size=8)
    assert embedding_model(mine) is mine
    assert embedding_id(mine) == "DeterministicFakeEmbedding"
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        embedding_model(Settings(embedding_model="openai:text-embedding-3-small"))
    with pytest.raises(ConfigError, match="needs a model name"):
        embedding_model("openai:")


def test_unloadable_local_model_is_a_config_error(tmp_path):
    (tmp_path / "broken").mkdir()
    emb = embedding_model(str(tmp_path / "broken"))
    assert embedding_id(emb).startswith("sentence-transformers:")
    with pytest.raises(ConfigError, match="cannot load the sentence-transformers model"):
        emb.embed_query("x")


@pytest.fixture()
def chroma_server(tmp_path):
    """A real Chroma server on 127.0.0.1 (the `chroma` binary chromadb installs)."""
    import shutil
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    exe = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
    if not Path(exe).exists():
        pytest.skip("the chroma server binary is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [exe, "run", "--path", str(tmp_path / "server-db"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
                break
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.2)
        else:
            pytest.fail("chroma server did not start")
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_same_code_path_over_a_chroma_server(chroma_server, tmp_path, shared_data):
    settings = Settings(chroma_host="127.0.0.1", chroma_port=chroma_server, chroma_collection="served")
    source = wikipedia_from_settings(settings)
    assert "does not exist at 127.0.0.1:" in source.unavailable_reason()
    corpus = shared_data / "hipporag" / "2wikimultihopqa_corpus.json"
    stats = ingest([corpus], settings=settings, limit=20, progress=False)
    assert stats.added == stats.count >= 20
    again = ingest([corpus], settings=settings, limit=20, progress=False)
    assert again.added == 0
    source = wikipedia_from_settings(settings)
    assert source.unavailable_reason() is None
    hits = source.search("Teutberga queen of Lotharingia", k=2)
    assert hits[0].title == "Teutberga" and hits[0].score > 0.5
    assert not (tmp_path / "chroma").exists()  # nothing embedded was created


# --- query priming: many queries embedded in one batch, the same hits as one by one ---------------------


class CountingEmbeddings(SentenceTransformerEmbeddings):
    """The default embedding model, counting its batches and single queries."""

    def __init__(self):
        base = embedding_model(Settings())
        super().__init__(base.location, base.model_id, device=base.device, batch_size=base.batch_size)
        self.batches: list[list[str]] = []
        self.singles: list[str] = []

    def embed_documents(self, texts):
        self.batches.append(list(texts))
        return super().embed_documents(texts)

    def embed_query(self, text):
        self.singles.append(text)
        return super().embed_query(text)


def _same_hits(a: list[Evidence], b: list[Evidence]) -> bool:
    return [h.id for h in a] == [h.id for h in b] and all(abs(x.score - y.score) < 1e-5 for x, y in zip(a, b))


def test_primed_queries_give_the_hits_of_one_by_one(indexed):
    settings, _, passages = indexed
    queries = [f"{p.title} {p.text.split('. ')[0]}" for p in passages[:5]] + ["music of the 1990s"]
    alone = ChromaWikipediaSource(COLLECTION, settings=settings)
    one_by_one = [alone.search(q, k=4) for q in queries]
    counting = CountingEmbeddings()
    primed = ChromaWikipediaSource(COLLECTION, settings=settings, embeddings=counting)
    assert primed.prime_queries(queries + queries[:2] + ["  "]) == len(queries)  # each once; blank ones never
    assert counting.batches == [queries] and counting.singles == []
    assert all(_same_hits(primed.search(q, k=4), hits) for q, hits in zip(queries, one_by_one))
    assert counting.singles == []  # every search took its primed vector
    assert _same_hits(primed.search(queries[0], k=4), one_by_one[0]) and counting.singles == [queries[0]]


async def test_atomr_embeds_its_ready_leaves_queries_in_one_batch(indexed):
    """Two independent Search leaves are ready together: the scheduler embeds both queries in one
    batch, and the run reads the same evidence as a run whose source embeds each query alone."""
    from atomgraph.graphs.atomr import build_atomr_graph
    from atomgraph.testing import answer_reply, atomr_scripted_model

    settings, _, passages = indexed
    a, b = passages[3].title, passages[40].title
    question = f"Which came first, {a} or {b}?"
    plan = {question: ["1. What is " + a + "?", "2. What is " + b + "?", "3. Given [1] and [2], which came first?"],
            "1. What is " + a + "?": f'Search("{a}")', "2. What is " + b + "?": f'Search("{b}")',
            "3. Given [1] and [2], which came first?": "[DR]"}

    async def run(source):
        model = atomr_scripted_model({question: plan}, answer=lambda stage, text: answer_reply("ok"))
        out = await build_atomr_graph(model=model, sources=[source], settings=settings).ainvoke({"question": question})
        return {n["id"]: n["evidence"] for n in out["trace"]["nodes"]}

    counting = CountingEmbeddings()
    batched = await run(ChromaWikipediaSource(COLLECTION, settings=settings, embeddings=counting))
    assert counting.batches == [[a, b]] and counting.singles == []
    alone = ChromaWikipediaSource(COLLECTION, settings=settings)
    alone.prime_queries = None  # a source that cannot embed ahead: each search embeds its own query
    one_by_one = await run(alone)
    assert [[e["title"] for e in ev] for ev in batched.values()] == [[e["title"] for e in ev] for ev in one_by_one.values()]
    assert batched[1] and batched[2]
