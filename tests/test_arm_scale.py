"""ARM's index at scale: the ANN dense search (built, persisted,
reopened, agreeing with exact search on real passages, a damaged file rebuilt), the n-gram
tables and BM25 persisted and identical to the straightforward build, objects over the size
limit refused, progress lines and the build summary. Speed and memory live in
``benchmarks/bench_arm_scale.py``, not here."""

from __future__ import annotations

import io
import re
import logging
import shutil

import numpy as np
import pytest

from atomgraph.errors import AtomgraphError
from atomgraph.nodes.arm.pipeline import dense_retrieve
from atomgraph.tools.arm_index import (ArmIndex, _object_ngrams, bm25_index, ngram_tables, object_chars,
                                       object_tokens)
from atomgraph.tools.objects import DataObject, load_objects, load_questions


@pytest.fixture(scope="module")
def hotpot(shared_data):
    folder = shared_data / "retrieval" / "hotpotqa"
    objects = load_objects(folder / "objects.jsonl")[:160]
    questions = load_questions(folder / "questions.jsonl")[:60]
    return objects, questions


@pytest.fixture(scope="module")
def ann_folder(hotpot, tmp_path_factory):
    """An index of 160 real passages with the ANN built (and saved) at build time."""
    objects, questions = hotpot
    cache = tmp_path_factory.mktemp("arm-ann")
    index = ArmIndex.build(objects, cache_dir=cache, dense_search="ann", ann_candidates=20, progress=False)
    index.prime_queries([q.question for q in questions])
    return cache, index


def test_ann_index_is_built_persisted_and_reopened(ann_folder, hotpot):
    cache, built = ann_folder
    objects, questions = hotpot
    assert built.dense_mode == "ann" and built.build_summary["dense_search"] == "ann"
    assert "ANN index (chunks)" in built.build_summary["seconds"]
    path = built.cache_path / "ann_chunks.faiss"
    assert path.is_file() and path.stat().st_size > 0
    again = ArmIndex.build(objects, cache_dir=cache, dense_search="ann", ann_candidates=20, progress=False)
    s = again.build_summary
    assert s["loaded"] and "ANN index (chunks)" not in s["seconds"] and "n-gram trie" not in s["seconds"]
    assert len(again.ann_index()) == len(again.chunk_vectors) == len(built.chunk_vectors)
    # the recall check is kept beside the index: reopened, not run again
    assert (again.ann_index().recall, again.ann_index().shortlist) == (built.ann_index().recall, built.ann_index().shortlist)
    assert "ANN recall check (chunks)" not in s["seconds"] and (built.cache_path / "ann_chunks.json").is_file()
    again._query_cache = built._query_cache
    for q in questions[:10]:
        assert np.array_equal(again.dense_scores(q.question).toarray(), built.dense_scores(q.question).toarray())
    # the same cache opened for exact search neither needs nor builds an ANN
    exact = ArmIndex.build(objects, cache_dir=cache, dense_search="exact", progress=False)
    assert exact.dense_mode == "exact" and "_anns" not in exact.__dict__


def test_exact_and_ann_search_agree_on_real_passages(ann_folder, hotpot):
    _, index = ann_folder
    _, questions = hotpot
    assert index.ann_candidates == 20 < len(index.chunk_vectors)  # the ANN really leaves objects out
    for q in questions:
        index.dense_search = "exact"
        exact_scores = index.dense_scores(q.question)
        exact_top = dense_retrieve(q, index, 5)
        index.dense_search = "ann"
        ann_scores = index.dense_scores(q.question).toarray()
        ann_top = dense_retrieve(q, index, 5)
        assert ann_top.ids == exact_top.ids, q.id
        assert np.allclose(ann_top.scores, exact_top.scores, atol=1e-5)
        # objects not among the ANN's candidates count as not retrieved: the collection's lowest similarity
        # (of a chunk: an object of several chunks may score higher)
        if index.one_chunk_per_object:
            assert abs(float(ann_scores.min()) - float(exact_scores.min())) < 1e-5
        else:
            assert float(ann_scores.min()) <= float(exact_scores.min()) + 1e-5
        assert (ann_scores <= exact_scores + 1e-5).all()
    for p in range(0, len(index.objects), 16):
        index.dense_search = "exact"
        exact_near = index.nearest_objects(p, 10)
        index.dense_search = "ann"
        assert index.nearest_objects(p, 10) == exact_near
    index.dense_search = "ann"


def test_auto_is_exact_for_small_collections(ann_folder, hotpot):
    objects, _ = hotpot
    cache, _ = ann_folder
    index = ArmIndex.build(objects, cache_dir=cache, progress=False)
    assert index.dense_search == "auto" and index.dense_mode == "exact"


@pytest.mark.parametrize("damage", ["bytes", "hnsw"])
def test_a_damaged_ann_file_is_rebuilt_with_a_warning(ann_folder, hotpot, tmp_path, caplog, damage):
    """Bytes that are no faiss index, or an index of another kind (an earlier version's HNSW graph)."""
    import faiss

    cache, built = ann_folder
    objects, questions = hotpot
    copy = tmp_path / "cache"
    shutil.copytree(cache, copy)
    path = copy / built.cache_path.name / "ann_chunks.faiss"
    if damage == "bytes":
        path.write_bytes(b"not a faiss index")
    else:
        graph = faiss.IndexHNSWFlat(built.chunk_vectors.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
        graph.add(np.ascontiguousarray(built.chunk_vectors))
        faiss.write_index(graph, str(path))
    with caplog.at_level(logging.WARNING):
        index = ArmIndex.build(objects, cache_dir=copy, dense_search="ann", ann_candidates=20, progress=False)
    assert any("ann_chunks.faiss unreadable" in r.getMessage() and "rebuilding" in r.getMessage() for r in caplog.records)
    if damage == "hnsw":
        assert any("holds a faiss IndexHNSWFlat, not a quantiser scan" in r.getMessage() for r in caplog.records)
    assert index.build_summary["loaded"] and "ANN index (chunks)" in index.build_summary["seconds"]
    index._query_cache = built._query_cache
    assert np.array_equal(index.dense_scores(questions[0].question).toarray(),
                          built.dense_scores(questions[0].question).toarray())
    # rewritten: the next open reads it
    again = ArmIndex.build(objects, cache_dir=copy, dense_search="ann", ann_candidates=20, progress=False)
    assert "ANN index (chunks)" not in again.build_summary["seconds"]


@pytest.mark.parametrize("part", ["ngrams.marisa", "bm25", "arrays.npz", "mentions.json"])
def test_a_missing_or_damaged_part_rebuilds_the_index(shared_data, tmp_path, caplog, part):
    objects = load_objects(shared_data / "retrieval" / "spider" / "objects.jsonl")
    first = ArmIndex.build(objects, cache_dir=tmp_path, dense=False, progress=False)
    where = first.cache_path / part
    if where.is_dir():
        shutil.rmtree(where)
    else:
        where.write_bytes(b"\x00garbage")
    with caplog.at_level(logging.WARNING):
        index = ArmIndex.build(objects, cache_dir=tmp_path, dense=False, progress=False)
    assert any("unreadable" in r.getMessage() and "rebuilding" in r.getMessage() for r in caplog.records)
    assert not index.build_summary["loaded"] and list(index.trie.iterkeys()) == list(first.trie.iterkeys())
    assert ArmIndex.build(objects, cache_dir=tmp_path, dense=False, progress=False).build_summary["loaded"]


def test_ngram_tables_and_bm25_match_the_straightforward_build(shared_data):
    """The dict-free builder gives the same trie (keys, ids, order), postings and BM25 scores
    as one dict of every n-gram would."""
    import bm25s
    import marisa_trie

    objects = load_objects(shared_data / "retrieval" / "musique" / "objects.jsonl")[:300]
    postings: dict[str, list[int]] = {}
    for i, o in enumerate(objects):
        for g in _object_ngrams(o):
            postings.setdefault(g, []).append(i)
    ref = marisa_trie.Trie(postings.keys())
    trie, indptr, indices = ngram_tables(objects)
    assert list(trie.iterkeys()) == list(ref.iterkeys()) and all(trie[g] == ref[g] for g in postings)
    for g, ids in postings.items():
        k = trie[g]
        assert indices[indptr[k] : indptr[k + 1]].tolist() == ids
    ref_bm25 = bm25s.BM25()
    ref_bm25.index([object_tokens(o) or [""] for o in objects], show_progress=False)
    ours = bm25_index(objects)
    for o in objects[:20]:
        q = object_tokens(o)[:6] + ["zzzz"]
        assert np.array_equal(np.asarray(ours.get_scores(q)), np.asarray(ref_bm25.get_scores(q)))


def test_reopening_rebuilds_no_ngram_table_nor_bm25(shared_data, tmp_path):
    objects = load_objects(shared_data / "retrieval" / "spider" / "objects.jsonl")
    a = ArmIndex.build(objects, cache_dir=tmp_path, dense=False, progress=False)
    b = ArmIndex.build(objects, cache_dir=tmp_path, dense=False, progress=False)
    assert not a.build_summary["loaded"] and b.build_summary["loaded"]
    assert set(b.build_summary["seconds"]) <= {"content key", "loading"}
    assert list(a.trie.iterkeys()) == list(b.trie.iterkeys()) and np.array_equal(a.post_indices, b.post_indices)
    q = ["singer", "name", "country"]
    assert np.array_equal(a.bm25_scores(q), b.bm25_scores(q))


def _passages(n: int, size: int = 60) -> list[DataObject]:
    return [DataObject(f"p{i}", "passage", f"Title {i}", f"passage number {i} " + "word " * (size // 5)) for i in range(n)]


def test_objects_over_the_size_limit_are_refused_and_counted(tmp_path, caplog):
    big = DataObject("huge", "passage", "Huge", "lorem ipsum " * 100_000)  # 1.2 million characters
    objects = _passages(5) + [big]
    assert object_chars(big) > 1_000_000
    with caplog.at_level(logging.WARNING):
        index = ArmIndex.build(objects, cache_dir=tmp_path, dense=False, progress=False)  # default limit: 1,000,000
    assert "huge" not in index.ids and len(index) == 5
    s = index.build_summary
    assert s["given"] == 6 and s["refused"] == 1 and s["refused_ids"] == ["huge"] and s["max_object_chars"] == 1_000_000
    assert any("refused 1 object" in r.getMessage() and "'huge'" in r.getMessage() for r in caplog.records)
    assert not index.has_ngram("lorem ipsum")
    # a table's cells count too; 0 means no limit
    table = DataObject("t", "table", "t", "", columns=("a",), rows=tuple((f"cell {i}",) for i in range(200)))
    assert object_chars(table) == 1 + 1 + sum(len(f"cell {i}") for i in range(200))
    limited = ArmIndex.build(objects + [table], use_cache=False, dense=False, max_object_chars=500, progress=False)
    assert limited.build_summary["refused"] == 2 and "t" not in limited.ids
    everything = ArmIndex.build(objects, use_cache=False, dense=False, max_object_chars=0, progress=False)
    assert "huge" in everything.ids and everything.has_ngram("lorem ipsum")


def test_size_limit_from_the_environment_and_clear_errors(monkeypatch):
    objects = _passages(3)
    monkeypatch.setenv("ATOMGRAPH_ARM_MAX_OBJECT_CHARS", "10")
    with pytest.raises(AtomgraphError, match="every object is over max_object_chars=10"):
        ArmIndex.build(objects, use_cache=False, dense=False, progress=False)
    monkeypatch.setenv("ATOMGRAPH_ARM_MAX_OBJECT_CHARS", "ten")
    with pytest.raises(AtomgraphError, match="ATOMGRAPH_ARM_MAX_OBJECT_CHARS='ten' is not valid"):
        ArmIndex.build(objects, use_cache=False, dense=False, progress=False)
    monkeypatch.delenv("ATOMGRAPH_ARM_MAX_OBJECT_CHARS")
    with pytest.raises(AtomgraphError, match="dense_search 'fast': expected one of auto, exact, ann"):
        ArmIndex.build(objects, use_cache=False, dense=False, dense_search="fast")
    monkeypatch.setenv("ATOMGRAPH_ARM_DENSE_SEARCH", "approximate")
    with pytest.raises(AtomgraphError, match="dense_search 'approximate'"):
        ArmIndex.build(objects, use_cache=False, dense=False)
    monkeypatch.setenv("ATOMGRAPH_ARM_DENSE_SEARCH", "exact")
    assert ArmIndex.build(objects, use_cache=False, dense=False, progress=False).dense_search == "exact"


def test_an_index_without_vectors_refuses_ann_search_clearly():
    index = ArmIndex.build(_passages(3), use_cache=False, dense=False, dense_search="exact", progress=False)
    index.dense_search = "ann"
    with pytest.raises(AtomgraphError, match="no dense vectors"):
        index.ann_index()


def test_progress_lines_and_build_summary(tmp_path):
    objects = _passages(50)
    out = io.StringIO()
    ArmIndex.build(objects, cache_dir=tmp_path / "a", dense=False, progress=True, stream=out)
    lines = out.getvalue().splitlines()
    assert all(line.startswith("ARM index: ") for line in lines)
    for stage in ("n-gram trie", "n-gram postings", "BM25 index", "title mentions", "saving"):
        assert any(f"{stage} (50 objects) ..." in line for line in lines), stage
        assert any(line.startswith(f"ARM index: {stage} done in") for line in lines), stage
    assert "built 50 objects (0 refused over 1,000,000 characters)" in lines[-1] and "dense search none" in lines[-1]
    # auto: a small build is quiet, and so is progress=False
    quiet = io.StringIO()
    ArmIndex.build(objects, cache_dir=tmp_path / "b", dense=False, stream=quiet)
    ArmIndex.build(objects, cache_dir=tmp_path / "b", dense=False, progress=False, stream=quiet)
    assert quiet.getvalue() == ""


def test_progress_reports_within_a_long_stage():
    """Past the quiet period, a stage prints its count at most every ``every_s`` seconds."""
    from atomgraph.tools.arm_index import BuildProgress

    out = io.StringIO()
    p = BuildProgress(None, out, quiet_s=0.0, every_s=0.0)
    p.stage("embeddings", 4096, "chunks")
    for done in (1024, 2048):
        p.tick(done)
    p.end()
    text = out.getvalue()
    assert "embeddings (4,096 chunks) ..." in text and "embeddings 1,024/4,096 chunks 25%" in text
    assert "embeddings 2,048/4,096 chunks 50%" in text and "embeddings done in" in text
    assert re.search(r"embeddings 1,024/4,096 chunks 25%, [\d.e+]+ chunks/s, ETA \d+", text), text  # rate and ETA
    assert "embeddings" in p.seconds


# --- dense search: exact up to the crossover, sparse ANN results above it --------------------------------

def _vector_index(vectors: np.ndarray, dense_search: str) -> ArmIndex:
    """An ArmIndex over ``vectors`` alone (one chunk per object; no n-grams, no BM25): the dense part."""
    n = len(vectors)
    return ArmIndex([DataObject(f"o{i}", "passage", f"o{i}", "") for i in range(n)] if n <= 50_000 else [None] * n,
                    None, None, None, None, np.arange(n, dtype=np.int32), vectors, [], None, "vectors",
                    dense_search=dense_search)


def test_auto_is_exact_up_to_the_limit_and_ann_above():
    from atomgraph.tools.arm_index import EXACT_LIMIT

    for n, mode in ((EXACT_LIMIT, "exact"), (EXACT_LIMIT + 1, "ann")):
        vectors = np.broadcast_to(np.float32(0.5), (n, 4))  # n vectors without their memory
        index = _vector_index(vectors, "auto")
        index.__dict__["_one_chunk"] = True
        assert index.dense_mode == mode


def _clusters(n: int, dim: int = 48, clusters: int = 40, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim), dtype=np.float32)
    x = centres[rng.integers(0, clusters, n)] + 0.35 * rng.standard_normal((n, dim), dtype=np.float32)
    q = centres[rng.integers(0, clusters, 30)] + 0.35 * rng.standard_normal((30, dim), dtype=np.float32)
    unit = lambda a: (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)  # noqa: E731
    return unit(x), unit(q)


def test_ann_top_k_is_exact_top_k_on_clustered_vectors_with_the_default_parameters():
    from atomgraph.nodes.arm.information_alignment import _top
    from atomgraph.tools.arm_index import SparseScores

    vectors, queries = _clusters(4000)
    exact, ann = _vector_index(vectors, "exact"), _vector_index(vectors, "ann")
    ann.ann_candidates = 50
    found = ann.dense_scores_many(list(queries))
    assert all(isinstance(s, SparseScores) and len(s.positions) <= 50 for s in found)
    for e, a in zip(exact.dense_scores_many(list(queries)), found):
        top = _top(e, 10)
        assert _top(a, 10) == top
        assert np.allclose(a[top], e[top], atol=1e-5)
        # not retrieved: about the lowest similarity (the farthest chunk the reverse search finds)
        assert float(e.min()) - 1e-5 <= a.floor <= float(a.values.min())
    # one query alone scores as in the batch; nearest objects agree with exact search
    assert np.array_equal(ann.dense_scores(queries[0]).toarray(), found[0].toarray())
    for p in range(0, 4000, 400):
        assert ann.nearest_objects(p, 10) == exact.nearest_objects(p, 10)


def test_top_k_is_a_stable_sorts_first_k_with_large_ties():
    """The base pool's top k: the first k of a stable sort by score (ties by position), also where
    most objects share the k-th score (every object a keyword's query did not reach)."""
    from atomgraph.nodes.arm.information_alignment import _top

    rng = np.random.default_rng(4)
    for _ in range(200):
        n = int(rng.integers(1, 400))
        scores = rng.choice(np.float32([0.0, 0.1, 0.25, 0.5]), n)  # ties everywhere
        some = rng.random(n) < rng.random()  # a share of distinct scores
        scores[some] = rng.random(int(some.sum())).astype(np.float32)
        k = int(rng.integers(1, 60))
        assert _top(scores, k) == np.argsort(-scores, kind="stable")[:k].tolist()


def test_sparse_bm25_is_bm25s_scores_without_the_array(shared_data, tmp_path):
    """BM25 as sparse scores: the same float32 value for every object (repeated, unknown and common
    tokens; the dense path for long postings), every other object at 0."""
    from atomgraph.tools.arm_index import SparseScores

    objects = load_objects(shared_data / "retrieval" / "musique" / "objects.jsonl")[:400]
    index = ArmIndex.build(objects, dense=False, progress=False, cache_dir=tmp_path)
    rng = np.random.default_rng(7)
    vocab = [t for o in objects[:60] for t in object_tokens(o)]
    queries = [[], ["zzzz"], ["the"], ["the", "of", "a", "in"]] + [
        list(rng.choice(vocab, int(rng.integers(1, 9)))) + ["zzzz"] * int(rng.integers(0, 2)) for _ in range(150)]
    forms = []
    for q in queries:
        full, got = index.bm25_scores(q), index.bm25_sparse(q)
        forms.append(type(got))
        if isinstance(got, SparseScores):  # a rare word's postings
            assert got.floor == 0.0 and len(got) == len(objects) and np.array_equal(got.toarray(), full), q
            assert got.top(9) == np.argsort(-full, kind="stable")[:9].tolist()
        else:  # postings past 1/BM25_DENSE_SHARE of the objects: the array itself
            assert np.array_equal(got, full), q
    assert SparseScores in forms and np.ndarray in forms


def test_mixing_sparse_scores_is_mixing_their_arrays():
    """Each keyword's mix of sparse BM25 and sparse dense scores: the same float32 value for every
    object as the mix of the full arrays, ties and all, and the same top k."""
    from atomgraph.nodes.arm.information_alignment import _mix, _top
    from atomgraph.tools.arm_index import SparseScores

    rng = np.random.default_rng(5)
    for _ in range(300):
        n = int(rng.integers(1, 300))

        def sparse(floor: float, grid: bool) -> SparseScores:
            ps = np.flatnonzero(rng.random(n) < rng.random())
            vals = (rng.choice(np.float32([0.5, 1.0, 2.0]), len(ps)) if grid
                    else rng.random(len(ps)).astype(np.float32) + np.float32(floor))
            return SparseScores(ps.astype(np.int64), vals.astype(np.float32), floor, n)

        b, d = sparse(0.0, bool(rng.integers(2))), sparse(float(rng.uniform(-1, 0)), bool(rng.integers(2)))
        w = float(rng.choice([0.0, 0.3, 0.5, 1.0]))
        mixed, ref = _mix(b, d, w), _mix(b.toarray(), d, w)
        assert isinstance(mixed, SparseScores) and np.array_equal(mixed.toarray(), ref)
        assert _top(mixed, 12) == _top(ref, 12)


@pytest.mark.parametrize("dense_share", [1, 64])  # 1: BM25 sparse wherever a word is in fewer than all objects
def test_sparse_ann_scores_plug_into_scores_and_the_base_pool(ann_folder, hotpot, dense_share, monkeypatch):
    """Scores.of over ANN results: each keyword's mix, the base pool and R_i are what the same
    scores written out as full arrays give."""
    from atomgraph.nodes.arm.information_alignment import Scores, _mix, _top, base_pool
    from atomgraph.state.arm import ArmContext
    from atomgraph.tools import arm_index
    from atomgraph.tools.arm_index import SparseScores, tokens

    monkeypatch.setattr(arm_index, "BM25_DENSE_SHARE", dense_share)

    _, index = ann_folder
    _, questions = hotpot
    ctx = ArmContext()
    index.dense_search = "ann"
    for q in questions[:5]:
        groups = [[w] for w in q.question.lower().split()[1:4]]
        scores = Scores.of(index, q.question, groups)
        assert isinstance(scores.dense, SparseScores) and len(scores.dense) == len(index.objects)
        dense = index.dense_scores_many([", ".join(g) for g in groups])
        assert isinstance(scores.keyword[0], SparseScores) or dense_share > 1
        for g, d, kw in zip(groups, dense, scores.keyword):
            b = index.bm25_scores([t for n in g for t in tokens(n)])
            full_kw = kw.toarray() if isinstance(kw, SparseScores) else kw  # sparse unless a word is common
            assert np.array_equal(full_kw, _mix(b, d.toarray(), ctx.keyword_bm25_weight))
            assert _top(kw, 20) == _top(full_kw, 20)
        pool = base_pool(index, scores, ctx)
        ps = list(pool)
        full = scores.dense.toarray()
        assert np.array_equal(scores.relevance(ps), full[ps].astype(float))
        bm25 = scores.bm25.toarray() if isinstance(scores.bm25, SparseScores) else scores.bm25
        assert np.allclose(scores.relevance(ps, "mix"), Scores(bm25, full).relevance(ps, "mix"))
        assert _top(scores.dense, 7) == _top(full, 7)


def test_the_ann_path_reads_no_vector_outside_the_faiss_index(ann_folder, hotpot):
    """An opened index keeps its vectors in their memory-mapped file, and ANN search reads none of
    them: the faiss index's copy is the only one in memory."""
    cache, built = ann_folder
    objects, questions = hotpot
    again = ArmIndex.build(objects, cache_dir=cache, dense_search="ann", ann_candidates=20, progress=False)
    assert isinstance(again.chunk_vectors, np.memmap) and isinstance(built.chunk_vectors, np.memmap)
    again._query_cache = built._query_cache
    want = built.dense_scores(questions[0].question).toarray()
    again.ann_index()
    again.chunk_vectors = np.broadcast_to(np.float32(np.nan), again.chunk_vectors.shape)  # any read gives NaN
    assert np.array_equal(again.dense_scores(questions[0].question).toarray(), want)


def test_auto_searches_exactly_where_the_ann_misses_neighbours(monkeypatch, caplog):
    """Above the limit, ``auto`` keeps exact search when the ANN's recall@10 on the collection's own
    vectors is under ANN_MIN_RECALL (random vectors with a tiny search breadth) or the ANN is slower
    than exact search, and says so."""
    from atomgraph.tools import arm_index

    monkeypatch.setattr(arm_index, "EXACT_LIMIT", 100)
    clustered = _vector_index(_clusters(3000)[0], "auto")
    assert clustered.dense_mode == "ann"  # before the check
    ann = clustered.ann_index()
    assert ann.recall >= arm_index.ANN_MIN_RECALL and ann.shortlist == arm_index.ANN_SHORTLIST
    assert clustered.dense_mode == ("ann" if ann.faster else "exact")
    monkeypatch.setattr(arm_index, "ANN_SHORTLIST", 1)
    rng = np.random.default_rng(5)
    noise = rng.standard_normal((3000, 384), dtype=np.float32)
    index = _vector_index(noise / np.linalg.norm(noise, axis=1, keepdims=True), "auto")
    index.ann_candidates = 10
    with caplog.at_level(logging.WARNING):
        assert index.ann_index().recall < arm_index.ANN_MIN_RECALL
    assert index.dense_mode == "exact" and isinstance(index.dense_scores(noise[0]), np.ndarray)
    assert any("dense_search=auto searches exactly" in r.getMessage() for r in caplog.records)


def test_a_question_and_its_keywords_are_embedded_in_one_batch(ann_folder):
    """Query texts not yet embedded are encoded together, once; the vectors equal one-by-one's."""
    _, built = ann_folder
    index = built
    calls: list[int] = []
    real = index.embeddings

    class Counting:
        def encode(self, texts):
            calls.append(len(texts))
            return real.encode(texts)

    index.__dict__["_query_cache"] = {}
    index.embeddings = Counting()
    try:
        texts = ["Which city hosts the minster?", "minster", "tallest steeple", "minster"]
        together = index.dense_scores_many(texts)
        assert calls == [3]
        index.dense_scores_many(texts)
        assert calls == [3]  # cached
        index.__dict__["_query_cache"] = {}
        alone = [index.dense_scores(t) for t in texts]
    finally:
        index.embeddings = real
        index.__dict__["_query_cache"] = {}
    for a, b in zip(together, alone):
        a = a.toarray() if hasattr(a, "toarray") else a
        b = b.toarray() if hasattr(b, "toarray") else b
        assert np.allclose(a, b, atol=1e-5)
