"""Corpus readers, passage splitting and ids, and idempotent ingestion into embedded Chroma."""

from __future__ import annotations

import bz2
import json

import chromadb
import pytest

from atomgraph.errors import ConfigError, ParseError
from atomgraph.settings import Settings
from atomgraph.tools.corpus_readers import detect_format, read_passages
from atomgraph.tools.ingest import ingest, passage_id, split_text, token_encoding


def _bz2(path, rows):
    with bz2.open(path, "wt", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


# --- readers --------------------------------------------------------------------------------
def test_jsonl_reader(tmp_path):
    f = tmp_path / "c.jsonl"
    f.write_text(
        '{"title": "Ada Lovelace", "text": "Ada was a mathematician."}\n\n'
        '{"title": "Alan Turing", "text": ["Alan was a", " computer scientist."]}\n'
        '{"title": "Empty", "text": ""}\n',
        encoding="utf-8",
    )
    got = [(p.title, p.text) for p in read_passages(f)]
    assert got == [("Ada Lovelace", "Ada was a mathematician."), ("Alan Turing", "Alan was a computer scientist.")]
    assert detect_format(f) == "jsonl"


def test_jsonl_errors_name_file_and_line(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"title": "A", "text": "x"}\n{"title": "B", "txt": "y"}\n', encoding="utf-8")
    with pytest.raises(ParseError, match=r"bad\.jsonl:2: missing key 'text'"):
        list(read_passages(f))
    f.write_text('{"title": "A", "text": "x"}\n\n{oops\n', encoding="utf-8")
    with pytest.raises(ParseError, match=r"bad\.jsonl:3: not valid JSON"):
        list(read_passages(f))
    f.write_text('{"title": 5, "text": "x"}\n', encoding="utf-8")
    with pytest.raises(ParseError, match=r"bad\.jsonl:1: field 'title' must be a string"):
        list(read_passages(f))


def test_hipporag_list_and_map(shared_data):
    lst = shared_data / "hipporag" / "2wikimultihopqa_corpus.json"
    mp = shared_data / "hipporag" / "hotpotqa_train_corpus.json"
    assert detect_format(lst) == detect_format(mp) == "hipporag"
    first = next(read_passages(lst))
    assert first.title == "Teutberga" and first.text.startswith("Teutberga( died 11 November 875)")
    hotpot = list(read_passages(mp))
    assert len(hotpot) == 994
    assert hotpot[0].title == "Demon Dice"
    assert "  " not in hotpot[0].text and "Tim Brown. In it, each player" in hotpot[0].text


def test_hipporag_bad_json(tmp_path):
    f = tmp_path / "corpus.json"
    f.write_text('[{"title": "A", "text": "x"},\n {"title": "B", "text": }]', encoding="utf-8")
    with pytest.raises(ParseError, match=r"corpus\.json:2: not valid JSON"):
        list(read_passages(f))
    f.write_text('"just a string"', encoding="utf-8")
    with pytest.raises(ParseError, match="expected a JSON list"):
        list(read_passages(f, "hipporag"))


def test_hotpot_bz2_file_and_tree(tmp_path):
    tree = tmp_path / "enwiki" / "AA"
    tree.mkdir(parents=True)
    _bz2(tree / "wiki_00.bz2", [
        {"id": "12", "url": "u", "title": "Anarchism", "text": ["Anarchism is a philosophy.", " It rejects rulers."]},
        {"id": "13", "title": "Blank", "text": []},
    ])
    (tmp_path / "enwiki" / "AB").mkdir()
    _bz2(tmp_path / "enwiki" / "AB" / "wiki_00.bz2", [{"id": "25", "title": "Autism", "text": ["Autism is a condition."]}])
    assert detect_format(tree / "wiki_00.bz2") == detect_format(tmp_path / "enwiki") == "hotpot-bz2"
    one = [(p.title, p.text) for p in read_passages(tree / "wiki_00.bz2")]
    assert one == [("Anarchism", "Anarchism is a philosophy. It rejects rulers.")]
    assert [p.title for p in read_passages(tmp_path / "enwiki")] == ["Anarchism", "Autism"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no .bz2 files"):
        list(read_passages(tmp_path / "empty"))
    (tmp_path / "broken.bz2").write_bytes(b"not bzip2 at all")
    with pytest.raises(ParseError, match="broken.bz2: cannot decompress"):
        list(read_passages(tmp_path / "broken.bz2"))


def test_tsv_reader(tmp_path):
    f = tmp_path / "psgs.tsv"
    f.write_text(
        'id\ttext\ttitle\n'
        '1\t"Aaron is a prophet, called ""the elder"" in some texts."\tAaron\n'
        '2\tPlain text with no quotes\tSecond\n',
        encoding="utf-8",
    )
    assert detect_format(f) == "tsv"
    got = [(p.title, p.text) for p in read_passages(f)]
    assert got == [("Aaron", 'Aaron is a prophet, called "the elder" in some texts.'), ("Second", "Plain text with no quotes")]
    f.write_text("id\ttext\ttitle\n1\tonly two\n", encoding="utf-8")
    with pytest.raises(ParseError, match=r"psgs\.tsv:2: expected 3 tab-separated columns"):
        list(read_passages(f))
    f.write_text("a\tb\n1\t2\n", encoding="utf-8")
    with pytest.raises(ParseError, match="header must name a 'text' column"):
        list(read_passages(f))


def test_missing_input_and_unknown_format(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        read_passages(tmp_path / "nope.jsonl")
    f = tmp_path / "mystery.dat"
    f.write_text("plain words\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="--format"):
        read_passages(f)
    with pytest.raises(ConfigError, match="unknown corpus format"):
        read_passages(f, "xml")


# --- splitting and ids ------------------------------------------------------------------------
def test_split_long_passages():
    enc = token_encoding()
    sentence = "The river Elbe flows from the Czech Republic through Germany to the North Sea. "
    text = (sentence * 40).strip()
    pieces = split_text(text, max_tokens=60)
    assert len(pieces) > 1
    assert all(len(enc.encode_ordinary(p)) <= 60 for p in pieces)
    assert " ".join(pieces) == text  # cut at sentence ends, nothing lost
    assert split_text("short", 60) == ["short"]
    long_word = "x" * 5000
    assert all(len(enc.encode_ordinary(p)) <= 60 for p in split_text(long_word, 60))


def test_split_prefers_sentence_ends_of_every_kind_then_words():
    enc = token_encoding()
    text = " ".join(
        f"Did Heisenberg study in Munich in {1920 + i}? He did! Sommerfeld was his doctoral advisor there." for i in range(12)
    )
    pieces = split_text(text, max_tokens=40)
    assert all(len(enc.encode_ordinary(p)) <= 40 for p in pieces) and " ".join(pieces) == text
    assert all(p[-1] in ".!?" for p in pieces)  # every cut at a sentence end
    run_on = " ".join(["word"] * 300)  # no sentence end at all: cut between words
    pieces = split_text(run_on, max_tokens=50)
    assert all(len(enc.encode_ordinary(p)) <= 50 for p in pieces) and " ".join(pieces) == run_on
    assert split_text("", 5) == [""]
    with pytest.raises(ConfigError, match="max_tokens"):
        split_text("text", 0)


def test_passage_ids_are_content_hashes():
    assert passage_id("A", "text") == passage_id("A", "text")
    assert passage_id("A", "text") != passage_id("B", "text") != passage_id("A", "text.")
    assert len(passage_id("A", "t")) == 32


# --- ingestion ----------------------------------------------------------------------------------
@pytest.fixture()
def small_corpus(tmp_path, shared_data):
    rows = json.loads((shared_data / "hipporag" / "2wikimultihopqa_corpus.json").read_text(encoding="utf-8"))[:30]
    rows += rows[:5]  # duplicates in the input count once
    rows.append({"title": "Long one", "text": " ".join(f"Sentence number {i} is about the Elbe river." for i in range(60))})
    f = tmp_path / "small.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return f


def test_ingest_splits_dedupes_and_rerun_adds_nothing(tmp_path, small_corpus):
    settings = Settings(chroma_path=str(tmp_path / "db"))
    first = ingest([small_corpus], "small-test", settings=settings, batch_size=8, max_tokens=64, progress=False)
    assert first.read == 36
    assert first.passages > first.read  # the long passage was split
    expected = {
        passage_id(p.title, piece) for p in read_passages(small_corpus) for piece in split_text(p.text, 64)
    }
    assert first.unique == len(expected) < first.passages  # the 5 repeated rows count once
    assert first.added == first.unique == first.count
    coll = chromadb.PersistentClient(path=str(tmp_path / "db")).get_collection("small-test", embedding_function=None)
    assert set(coll.get(include=[])["ids"]) == expected
    again = ingest([small_corpus], "small-test", settings=settings, batch_size=16, max_tokens=64, progress=False)
    assert again.added == 0 and again.skipped == first.unique and again.count == first.count
    long_parts = coll.get(where={"title": "Long one"}, include=["metadatas", "documents"])
    assert len(long_parts["ids"]) > 1
    assert sorted(m["part"] for m in long_parts["metadatas"]) == list(range(len(long_parts["ids"])))
    assert (coll.configuration_json or {}).get("hnsw", {}).get("space") == "cosine"


def test_ingest_limit_and_bad_arguments(tmp_path, small_corpus):
    settings = Settings(chroma_path=str(tmp_path / "db"))
    stats = ingest([small_corpus], "limit-test", settings=settings, limit=4, progress=False)
    assert stats.read == 4 and stats.count == stats.unique == stats.added >= 4
    with pytest.raises(ConfigError, match="no such file"):
        ingest([tmp_path / "missing.jsonl"], "limit-test", settings=settings, progress=False)
    with pytest.raises(ConfigError, match="batch-size"):
        ingest([small_corpus], "limit-test", settings=settings, batch_size=0, progress=False)
    with pytest.raises(ConfigError, match="invalid collection name"):
        ingest([small_corpus], "x", settings=settings, progress=False)
