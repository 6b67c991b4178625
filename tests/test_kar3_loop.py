"""KAR³'s QA loop over a real Chroma atom index (the demo pack, atomized by the scripted
atomizer): each loop exit, each backup in order with its k and gate, δ on both metrics, the
paragraph backup and no silent top hit, the switches, unreadable output everywhere, accounting."""

from __future__ import annotations

import json

import pytest
from langchain_core.embeddings import Embeddings

from atomgraph.graphs.kar3 import build_kar3_graph
from atomgraph.testing import ScriptedChatModel, kar3_scripted_model
from atomgraph.embeddings import embedding_id
from atomgraph.tools.atom_index import AtomIndex, atoms_name
from atomgraph.tools.atom_source import AtomSource
from atomgraph.tools.query_embedding import query_vectors

from kar3_fixtures import PLAN, QUESTION, build_demo_index, demo_source, settings_at


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kar3_loop")
    out = build_demo_index(folder)
    assert out["error"] is None and out["stats"]["atomized"] == 97
    return folder


def run(index_dir, model, question=QUESTION, **context):
    graph = build_kar3_graph(model=model, sources=[demo_source(index_dir)], settings=settings_at(index_dir))
    return graph.invoke({"question": question}, context=context)


def stages(model) -> list[str]:
    return [c["stage"] for c in model.calls]


def test_two_hops_then_an_empty_list(index_dir):
    model = kar3_scripted_model(PLAN, answer="Munich")
    out = run(index_dir, model)
    trace = out["trace"]
    assert out["answer"] == "Munich" and out["error"] is None
    assert trace["method"] == "kar3" and trace["exit"] == "enough"
    rounds = trace["rounds"]
    assert [r["proposals"] for r in rounds] == [PLAN[QUESTION][0], PLAN[QUESTION][1], []]
    assert rounds[2]["enough"] and rounds[2]["ended"] == "enough"
    for r in rounds[:2]:
        # one proposal: a single query, k = 8; every hit passes δ on the authors' score
        assert r["hits"] and all(h["score"] >= 0.5 and h["chunk_id"] for h in r["hits"])
        assert [h["score"] for h in r["hits"]] == sorted((h["score"] for h in r["hits"]), reverse=True)
        assert r["choice"] == r["hits"][0]  # the scripted selector picks candidate 1
        assert r["tiers"] == [{"via": "proposal", "queries": 1, "k": 8, "hits": len(r["hits"])}]
        assert not r["paragraphs_offered"]
    assert "died in Munich" in rounds[1]["choice"]["text"]
    assert out["retrieved_ids"] == [r["choice"]["chunk_id"] for r in rounds[:2]]
    assert stages(model) == ["propose", "select", "propose", "select", "propose", "answer"]
    # the answerer sees the chosen chunks; the second proposer call sees the first chunk
    assert "died in Munich" in model.calls[-1]["prompt"]
    assert f"Title: {rounds[0]['choice']['title']}. Content: {rounds[0]['choice']['text'][:40]}" in model.calls[2]["prompt"]


def test_exit_when_n_chunks_are_chosen(index_dir):
    plan = {QUESTION: [["Who was the doctoral advisor of Werner Heisenberg?"]] * 9}
    model = kar3_scripted_model(plan, answer="Munich")
    out = run(index_dir, model, max_chunks=2)
    assert out["trace"]["exit"] == "max_chunks" and len(out["trace"]["rounds"]) == 2
    assert stages(model).count("propose") == 2 and len(out["retrieved_ids"]) == 2
    assert len(set(out["retrieved_ids"])) == 2  # atoms of a chosen chunk are dropped in later rounds
    first, second = out["trace"]["rounds"]
    assert first["choice"]["chunk_id"] not in {h["chunk_id"] for h in second["hits"]}


def test_exit_only_on_an_empty_list(index_dir):
    model = kar3_scripted_model({QUESTION: []}, answer="Munich")
    out = run(index_dir, model)
    assert out["trace"]["exit"] == "enough" and out["retriever_calls"] == []
    assert stages(model) == ["propose", "answer"] and "(none yet)" in model.calls[-1]["prompt"]


def test_a_prose_not_enough_is_no_enough_stop(index_dir):
    model = kar3_scripted_model(lambda p: "The passages are not enough to answer this.", answer="Munich")
    out = run(index_dir, model, max_chunks=1)
    r = out["trace"]["rounds"][0]
    # unreadable, not "enough": the authors' loop ends on it
    assert out["trace"]["exit"] == "proposer_unreadable" and not r["enough"] and r["proposals"] == []
    assert any(n.startswith("proposer: unreadable") for n in r["notes"])


def test_proposals_are_not_capped_unless_asked(index_dir):
    subs = [f"Who was the doctoral advisor of Werner Heisenberg (variant {i})?" for i in range(10)]
    model = kar3_scripted_model({QUESTION: [subs]}, answer="x")
    r = run(index_dir, model, max_chunks=1)["trace"]["rounds"][0]
    assert len(r["proposals"]) == 10 and r["tiers"][0] == {"via": "proposal", "queries": 10, "k": 4, "hits": len(r["hits"])}
    model = kar3_scripted_model({QUESTION: [subs]}, answer="x")
    r = run(index_dir, model, max_chunks=1, max_proposals=8)["trace"]["rounds"][0]
    assert len(r["proposals"]) == 8 and any("2 proposal(s) over max_proposals=8 dropped" in n for n in r["notes"])


def test_several_proposals_k4_each_in_proposal_order_duplicates_kept(index_dir):
    subs = ["Who was the doctoral advisor of Werner Heisenberg?", "Who supervised the doctorate of Werner Heisenberg?"]
    model = kar3_scripted_model({QUESTION: [subs]}, answer="x")
    out = run(index_dir, model, max_chunks=1, delta_metric="cosine", delta=0.3)
    r = out["trace"]["rounds"][0]
    assert r["tiers"][0]["k"] == 4 and [c["hits"] for c in out["retriever_calls"]] == [4, 4]
    assert [h["query"] for h in r["hits"]] == [subs[0]] * 4 + [subs[1]] * 4  # proposal order
    ids = [h["atom_id"] for h in r["hits"]]
    assert len(set(ids)) < len(ids)  # the same atom found by both proposals is offered twice


def test_delta_on_both_metrics(index_dir):
    from atomgraph.tools.atom_index import cosine_at, relevance

    index = demo_source(index_dir).index
    q = "Who was the doctoral advisor of Werner Heisenberg?"
    cos = index.search_atoms([q], 8, None, metric="cosine")[0]
    pike = index.search_atoms([q], 8, None, metric="pike_l2")[0]
    assert [h.atom_id for h in cos] == [h.atom_id for h in pike]
    for c, p in zip(cos, pike):  # the authors' score: 1 - (2 - 2cos)/√2
        assert p.score == pytest.approx(1 - (2 - 2 * c.score) / 2 ** 0.5, abs=1e-3)
        assert p.score == pytest.approx(relevance(c.score), abs=1e-3)
    assert cosine_at("pike_l2", 0.5) == pytest.approx(0.6464, abs=1e-4) and cosine_at("cosine", 0.5) == 0.5
    kept_cos = index.search_atoms([q], 8, 0.5, metric="cosine")[0]
    kept_pike = index.search_atoms([q], 8, 0.5, metric="pike_l2")[0]
    assert all(h.score >= 0.5 for h in kept_pike) and all(c.score >= 0.6464 - 1e-3 for c in cos[: len(kept_pike)])
    assert len(kept_pike) < len(kept_cos)  # δ = 0.5 is stricter on the authors' score
    with pytest.raises(Exception, match="delta_metric"):
        index.search_atoms([q], 8, 0.5, metric="dot")


def test_queries_are_embedded_with_embed_query(index_dir):
    from atomgraph.tools.atom_index import AtomIndex

    index = demo_source(index_dir).index
    seen: list[str] = []

    class Spy:
        def embed_query(self, text):
            seen.append("query")
            return index.embeddings.embed_query(text)

        def embed_documents(self, texts):
            seen.append("documents")
            return index.embeddings.embed_documents(texts)

    spy = AtomIndex("demo", path=str(index_dir), embeddings=index.embeddings, settings=settings_at(index_dir))
    spy._embeddings = Spy()
    spy._emb_arg = index.embeddings
    spy.search_atoms(["a?", "b?"], 4, 0.5)
    spy.search_chunks("a?", 8, threshold=0.5)  # "a?" again: its vector is kept, not embedded again
    assert seen == ["query", "query"]


def test_exit_when_nothing_is_retrieved(index_dir):
    model = kar3_scripted_model({QUESTION: [["zqxj vbnm wplk?"]]}, answer="unknown")
    out = run(index_dir, model, delta=0.99, backups=False)
    r = out["trace"]["rounds"][0]
    assert out["trace"]["exit"] == "nothing_retrieved" and r["ended"] == "nothing_retrieved"
    assert r["tiers"] == [{"via": "proposal", "queries": 1, "k": 8, "hits": 0}] and r["hits"] == []
    assert any("no atomic question with pike_l2 ≥ δ=0.99" in n for n in r["notes"])
    assert stages(model) == ["propose", "answer"]
    assert out["trace"]["exit_text"].startswith("nothing retrieved")


def test_backup_one_the_question_against_atoms_k8(index_dir):
    model = kar3_scripted_model({QUESTION: [["zqxj vbnm wplk?"]]}, answer="Munich")
    out = run(index_dir, model, max_chunks=1)
    r = out["trace"]["rounds"][0]
    assert [(t["via"], t["k"]) for t in r["tiers"]] == [("proposal", 8), ("question", 8)]
    assert r["tiers"][0]["hits"] == 0 and r["tiers"][1]["hits"] > 0
    assert all(h["via"] == "question" and h["query"] == QUESTION and h["score"] >= 0.5 for h in r["hits"])
    assert [c["source"] for c in out["retriever_calls"]] == ["atoms", "atoms"]


@pytest.fixture(scope="module")
def unrelated_atoms_dir(tmp_path_factory):
    """The demo pack with atoms that match nothing: only the chunk backup finds anything."""
    folder = tmp_path_factory.mktemp("kar3_unrelated")
    atomizer = kar3_scripted_model(atomize="What colour are the stripes of a zebra?\nHow many legs does a spider have?")
    assert build_demo_index(folder, model=atomizer)["error"] is None
    return folder


def test_backup_two_chunks_gated_by_delta_k8_shown_with_their_best_atom(unrelated_atoms_dir):
    model = kar3_scripted_model({QUESTION: [["zqxj vbnm wplk?"]]}, answer="Munich")
    out = run(unrelated_atoms_dir, model, max_chunks=1, delta_metric="cosine", delta=0.45)
    r = out["trace"]["rounds"][0]
    assert [(t["via"], t["k"], t["hits"] > 0) for t in r["tiers"]] == [
        ("proposal", 8, False), ("question", 8, False), ("chunk", 8, True)]
    assert 0 < len(r["hits"]) <= 8 and all(h["via"] == "chunk" for h in r["hits"])
    # gated: every chunk offered scores ≥ δ against the question; each shows its best atom
    index = demo_source(unrelated_atoms_dir).index
    assert index.open()
    q = index.embeddings.embed_query(QUESTION)
    got = index._chunks.get(ids=[h["chunk_id"] for h in r["hits"]], include=["embeddings"])
    assert all(sum(a * b for a, b in zip(q, v)) >= 0.45 - 1e-6 for v in got["embeddings"])
    assert {h["atom"] for h in r["hits"]} <= {"What colour are the stripes of a zebra?", "How many legs does a spider have?"}
    # a stricter δ lets no chunk through: nothing retrieved, no unthresholded fallback
    model = kar3_scripted_model({QUESTION: [["zqxj vbnm wplk?"]]}, answer="x")
    out = run(unrelated_atoms_dir, model, max_chunks=1, delta=0.9)
    assert out["trace"]["exit"] == "nothing_retrieved" and stages(model) == ["propose", "answer"]


class CountingEmbeddings(Embeddings):
    """The index's own embedding model, each call's texts recorded (one list per call)."""

    def __init__(self, inner: Embeddings):
        self.inner, self.model_id, self.calls = inner, embedding_id(inner), []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.calls.append([text])
        return self.inner.embed_query(text)

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return query_vectors(self.inner, texts)


class CountingIndex(AtomIndex):
    """An atom index that records each search it makes of Chroma."""

    searches: list[tuple[str, list[str]]]

    def search_atoms(self, queries, *args, **kw):
        self.searches.append(("atoms", list(queries)))
        return super().search_atoms(queries, *args, **kw)

    def search_chunks(self, query, *args, **kw):
        self.searches.append(("chunks", [query]))
        return super().search_chunks(query, *args, **kw)


def test_a_rounds_proposals_in_one_batch_and_the_backups_searched_once_a_question(unrelated_atoms_dir):
    """Each round's proposals are embedded in one call; the chunk backup reuses the question's vector
    from backup 1; in later rounds both backups reuse the first round's hits (no embedding, no Chroma
    query), minus the chunks chosen since."""
    from atomgraph.embeddings import embedding_model

    settings = settings_at(unrelated_atoms_dir)
    counting = CountingEmbeddings(embedding_model(settings))
    index = CountingIndex("demo", settings=settings, embeddings=counting)
    index.searches = []
    first, second = ["zqxj vbnm wplk?", "qpwo eiru tyal?", "mznx bcvl kajs?"], ["hgfd sapo iuyt?", "rewq lkjh poiu?"]
    model = kar3_scripted_model({QUESTION: [first, second]}, answer="Munich")
    graph = build_kar3_graph(model=model, sources=[AtomSource(index, settings=settings)], settings=settings)
    out = graph.invoke({"question": QUESTION}, context={"max_chunks": 2, "delta_metric": "cosine", "delta": 0.45})
    one, two = out["trace"]["rounds"]
    assert [t["via"] for t in one["tiers"]] == [t["via"] for t in two["tiers"]] == ["proposal", "question", "chunk"]
    assert counting.calls == [first, [QUESTION], second]  # one call a round's proposals, the question once
    assert index.searches == [("atoms", first), ("atoms", [QUESTION]), ("chunks", [QUESTION]), ("atoms", second)]
    assert [h["chunk_id"] for h in two["hits"]] == [h["chunk_id"] for h in one["hits"][1:]]  # the chosen one dropped
    assert [c["source"] for c in out["retriever_calls"]] == ["atoms"] * 4 + ["chunks"] + ["atoms"] * 3 + ["chunks"]
    assert out["trace"]["exit"] == "max_chunks" and out["answer"] == "Munich"


CUT = '{"thinking": "candidate 1 is already known; candidate 4 asks'


def test_unreadable_pick_goes_to_the_paragraph_backup_over_the_same_candidates(index_dir):
    model = kar3_scripted_model(PLAN, answer="Munich", select=CUT,
                                select_paragraph='{"thinking": "the second paragraph", "paragraph_idx": 2}')
    out = run(index_dir, model, max_chunks=1)
    r = out["trace"]["rounds"][0]
    assert r["paragraphs_offered"] and r["choice"] == r["hits"][1]
    assert [t["via"] for t in r["tiers"]] == ["proposal"]  # no new retrieval
    assert stages(model) == ["propose", "select", "select_paragraph", "answer"]
    para = model.calls[2]["prompt"]
    for i, h in enumerate(r["hits"], 1):
        assert f"Paragraph {i}: Title: {h['title']}. Content: {h['text'][:30]}" in para
    assert any("select: unreadable" in n for n in r["notes"])


@pytest.mark.parametrize("reply", ['{"thinking": "t", "question_idx": 99}', '{"thinking": "t", "question_idx": 0}',
                                   CUT, "I pick candidate 1", '{"thinking": "t", "question_idx": "first"}'])
def test_no_silent_top_hit(index_dir, reply):
    model = kar3_scripted_model(PLAN, answer="unknown", select=reply, select_paragraph=CUT)
    out = run(index_dir, model)
    r = out["trace"]["rounds"][0]
    assert out["trace"]["exit"] == "selector_none" and r["choice"] is None and r["ended"] == "selector_none"
    assert r["paragraphs_offered"] and out["retrieved_ids"] == []
    assert stages(model) == ["propose", "select", "select_paragraph", "answer"]
    assert [c["source"] for c in out["retriever_calls"]] == ["atoms"]


def test_the_selector_is_asked_as_the_authors_ask(index_dir):
    """The atom selector must pick 1..N (no "none helps"), candidates without titles, and the answerer
    gets the authors' neutral prompt."""
    model = kar3_scripted_model(PLAN, answer="Munich")
    run(index_dir, model, max_chunks=1)
    assert "Answer 0" not in model.calls[1]["prompt"] and "(from: " not in model.calls[1]["prompt"]
    assert "as short as possible" not in model.calls[-1]["prompt"]


def test_an_unreadable_proposer_reply_ends_the_loop_as_the_authors(index_dir):
    model = ScriptedChatModel(default="")
    out = run(index_dir, model, max_chunks=2)
    trace = out["trace"]
    assert trace["exit"] == "proposer_unreadable" and stages(model) == ["propose", "answer"]
    assert any(n.startswith("proposer: unreadable model output") and "loop ends" in n for n in trace["rounds"][0]["notes"])
    # the answer that follows had nothing chosen: a closed-book answer, recorded as a fallback
    assert trace["fallbacks"] and trace["fallbacks"][0]["kind"] == "KAR³ closed-book" and trace["fallbacks"][0]["final"]


PROPOSE_THE_QUESTION = json.dumps({"thinking": "one hop", "sub_questions": [QUESTION]})


def test_unreadable_output_at_every_stage_after_the_proposer(index_dir):
    model = ScriptedChatModel(stages={"propose": PROPOSE_THE_QUESTION}, default="")
    out = run(index_dir, model, max_chunks=2)
    trace = out["trace"]
    assert out["answer"] == "" and out["error"].startswith("answer: unreadable model output")
    assert trace["exit"] == "selector_none"  # never a silently taken top hit
    r = trace["rounds"][0]
    assert r["proposals"] == [QUESTION] and r["hits"]
    assert any(n.startswith("select: unreadable model output") for n in r["notes"])
    assert any(n.startswith("select_paragraph: unreadable model output") for n in r["notes"])
    assert r["choice"] is None
    assert stages(model) == ["propose", "select", "select_paragraph", "answer"]
    assert trace["usage"]["unreadable"] == 3 and trace["usage"]["llm_calls"] == 4
    assert [bool(c["parse_error"]) for c in out["llm_calls"]] == [False, True, True, True]


def test_failing_model_calls_are_recorded_not_raised(index_dir):
    model = ScriptedChatModel(stages={"propose": PROPOSE_THE_QUESTION}, default=ConnectionError("server down"))
    out = run(index_dir, model, max_chunks=1)
    assert out["answer"] == "" and "model call failed" in out["error"]
    assert out["trace"]["usage"]["failed"] == 3  # select, select_paragraph, answer
    model = ScriptedChatModel(default=ConnectionError("server down"))
    out = run(index_dir, model, max_chunks=1)
    assert out["trace"]["exit"] == "proposer_unreadable" and out["trace"]["usage"]["failed"] == 2  # propose, answer


def test_llm_calls_and_tokens_are_accounted(index_dir):
    model = kar3_scripted_model(PLAN, answer="Munich")
    out = run(index_dir, model)
    usage = out["trace"]["usage"]
    assert usage["llm_calls"] == len(out["llm_calls"]) == len(model.calls) == 6
    assert usage["prompt_tokens"] == sum(c["prompt_tokens"] for c in out["llm_calls"]) > 0
    assert usage["completion_tokens"] == sum(c["completion_tokens"] for c in out["llm_calls"]) > 0
    assert usage["calls_by_stage"] == {"propose": 3, "select": 2, "answer": 1}
    assert {c["role"] for c in out["llm_calls"]} == {"proposer", "selector", "answerer"}
    assert {c["max_tokens"] for c in model.calls} == {1024}


def test_no_index_is_an_error_not_a_closed_book_answer(tmp_path):
    model = kar3_scripted_model(PLAN, answer="Munich")
    graph = build_kar3_graph(model=model, settings=settings_at(tmp_path / "empty", chroma_collection="nothing"))
    out = graph.invoke({"question": QUESTION})
    assert out["trace"]["exit"] == "no_index" and "atomgraph index atoms" in out["error"]
    assert out["answer"] == "" and model.calls == [] and "closed-book" in out["error"]


def test_a_source_without_atoms_is_an_error(index_dir):
    from atomgraph.tools.memory_source import InMemorySource

    model = kar3_scripted_model(PLAN, answer="Munich")
    graph = build_kar3_graph(model=model, sources=[InMemorySource([("T", "a passage")])], settings=settings_at(index_dir))
    out = graph.invoke({"question": QUESTION})
    assert out["trace"]["exit"] == "no_index" and "no atom source" in out["error"] and model.calls == []


def test_invalid_question(index_dir):
    model = kar3_scripted_model(PLAN)
    out = run(index_dir, model, question="   ")
    assert out["error"].startswith("invalid question") and model.calls == []


def test_context_schemas_and_cosine_space(index_dir):
    from atomgraph.graphs.kar3_index import build_kar3_index_graph

    graph = build_kar3_graph(model=kar3_scripted_model(), sources=[demo_source(index_dir)])
    props = graph.get_context_jsonschema()["properties"]
    for name in ("max_chunks", "atom_top_k", "single_query_top_k", "delta", "delta_metric", "chunk_top_k",
                 "max_proposals"):
        assert props[name].get("description")
    defaults = {k: props[k].get("default") for k in props}
    assert defaults["max_chunks"] == 5 and defaults["atom_top_k"] == 4 and defaults["single_query_top_k"] == 8
    assert defaults["delta"] == 0.5 and defaults["delta_metric"] == "pike_l2" and defaults["chunk_top_k"] == 8
    assert defaults["max_proposals"] is None
    assert not {"allow_reject", "dedupe_candidates", "show_titles", "short_answers",
                "proposer_question_fallback"} & set(props)  # removed switches
    # the QA form shows no indexing field; the indexing graph's form shows them
    assert not {"atomizer_temperature", "atomizer_concurrency", "write_batch", "max_tokens", "format", "limit",
                "split_chunks"} & set(props)
    iprops = build_kar3_index_graph(model=kar3_scripted_model()).get_context_jsonschema()["properties"]
    assert iprops["atomizer_temperature"]["default"] == 0.7 and iprops["split_chunks"]["default"] is False
    assert "max_chunks" not in iprops
    import chromadb

    client = chromadb.PersistentClient(path=str(index_dir))
    for name in ("demo", atoms_name("demo")):
        conf = client.get_collection(name, embedding_function=None).configuration
        assert conf["hnsw"]["space"] == "cosine"


async def test_atomizer_temperature_is_bound_only_for_the_atomizer_call():
    from langchain_openai import ChatOpenAI

    from atomgraph.models import with_temperature
    from atomgraph.nodes.kar3.loop import Kar3Runtime
    from atomgraph.nodes.runtime import MethodRuntime
    from atomgraph.prompts.kar3.atomize import ATOMIZE_STAGE
    from atomgraph.prompts.kar3.stages import PROPOSE_STAGE

    hot = with_temperature(ChatOpenAI(model="gpt-4o", api_key="x", temperature=0), 0.7)
    assert hot.temperature == 0.7
    model = kar3_scripted_model()
    atomizing = MethodRuntime.for_method("kar3_index", model, [])  # the atomizer is the indexing graph's role
    rt = Kar3Runtime.for_method("kar3", model, [])
    await atomizing.ask(ATOMIZE_STAGE, {"title": "T", "text": "text"}, None, temperature=0.7)
    await rt.ask(PROPOSE_STAGE, {"question": "q?", "chosen": []}, None)
    assert [c.get("temperature") for c in model.calls] == [0.7, None]


def test_the_loop_is_a_visible_conditional_edge():
    from atomgraph.graphs import kar3, kar3_index

    edges = {(e.source, e.target, e.conditional) for e in kar3.graph.get_graph().edges}
    assert {("propose", "retrieve", True), ("retrieve", "select", True), ("select", "propose", True),
            ("propose", "answer", True), ("retrieve", "answer", True), ("select", "answer", True)} <= edges
    assert {n for n in kar3_index.graph.get_graph().nodes} >= {"load", "atomize"}


QUERIES = ["Who was the doctoral advisor of Werner Heisenberg?", "In which city did Arnold Sommerfeld die?",
           "When was Albert Einstein born?", "Where did Einstein's family move in 1880?", QUESTION,
           "What is the formula that ties mass to energy?", "Which prize did Heisenberg win?",
           "Who founded quantum mechanics?", "Where is Ulm?", "What did Marie Curie discover?",
           "Which university did Sommerfeld teach at?", "What colour are the stripes of a zebra?"]


def test_proposals_embedded_together_and_the_question_once_retrieve_as_one_by_one(index_dir):
    """A round's proposals are embedded in one batch and a question asked again (backup 1, then the chunk
    backup; round after round) is not embedded again; the hits are those of one ``embed_query`` per query."""
    from atomgraph.tools.atom_index import AtomIndex

    from kar3_fixtures import COLLECTION

    batched, one_by_one = (AtomIndex(COLLECTION, settings=settings_at(index_dir)) for _ in range(2))
    one_by_one._embed_queries = lambda qs: [list(one_by_one.embeddings.embed_query(q)) for q in qs]
    encoded: list[int] = []
    encode = batched.embeddings.encode
    batched.embeddings.encode = lambda texts: encoded.append(len(texts)) or encode(texts)

    def hits(groups):
        return [[(h.atom_id, h.chunk_id, h.query) for h in g] for g in groups]

    for k, delta in ((4, None), (8, 0.5), (1, 0.3)):
        new, old = batched.search_atoms(QUERIES, k, delta), one_by_one.search_atoms(QUERIES, k, delta)
        assert hits(new) == hits(old) and len(new) == len(QUERIES)
        assert [h.score for g in new for h in g] == pytest.approx([h.score for g in old for h in g], abs=2e-4)
    assert encoded == [len(QUERIES)]  # one batch; the later searches reuse the vectors
    for q in QUERIES:
        new, old = batched.search_chunks(q, 8, threshold=0.3), one_by_one.search_chunks(q, 8, threshold=0.3)
        assert [(h.chunk_id, h.atom_id) for h in new] == [(h.chunk_id, h.atom_id) for h in old]
        assert [h.score for h in new] == pytest.approx([h.score for h in old], abs=2e-4)
    assert encoded == [len(QUERIES)]
