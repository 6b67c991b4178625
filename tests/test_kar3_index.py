"""KAR³'s atomizing: content-hash ids, atoms carrying their chunk ids, resuming after a
SIGKILL of a real process, unreadable atomizer output, --from-collection, the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import chromadb

from atomgraph.cli import main
from atomgraph.graphs.kar3_index import build_kar3_index_graph
from atomgraph.testing import ScriptedChatModel, kar3_scripted_model, sentence_atoms
from atomgraph.tools.atom_index import DONE_KEY, atom_id, atoms_name
from atomgraph.tools.corpus_readers import read_passages
from atomgraph.tools.ingest import ingest, passage_id

from kar3_fixtures import PASSAGES, build_demo_index, settings_at

TESTS = Path(__file__).resolve().parent


def collections(folder, name="demo"):
    client = chromadb.PersistentClient(path=str(folder))
    chunks = client.get_collection(name, embedding_function=None).get(include=["metadatas", "documents"])
    atoms = client.get_collection(atoms_name(name), embedding_function=None).get(include=["metadatas", "documents"])
    return chunks, atoms


def check_consistent(chunks, atoms) -> set[str]:
    """Every marked chunk has exactly its atoms; returns the marked ids."""
    marked = {cid: m[DONE_KEY] for cid, m in zip(chunks["ids"], chunks["metadatas"]) if DONE_KEY in (m or {})}
    per_chunk: dict[str, int] = {}
    for aid, q, m in zip(atoms["ids"], atoms["documents"], atoms["metadatas"]):
        assert aid == atom_id(m["chunk_id"], q)
        per_chunk[m["chunk_id"]] = per_chunk.get(m["chunk_id"], 0) + 1
    for cid, n in marked.items():
        assert per_chunk.get(cid, 0) == n
    return set(marked)


def test_ids_are_content_hashes_and_atoms_carry_their_chunk(tmp_path):
    out = build_demo_index(tmp_path, limit=12)
    assert out["error"] is None and out["stats"]["atomized"] == 12 and out["stats"]["llm_calls"] == 12
    chunks, atoms = collections(tmp_path)
    expected = {passage_id(p.title, p.text) for p in list(read_passages(PASSAGES))[:12]}
    assert set(chunks["ids"]) == expected
    assert check_consistent(chunks, atoms) == expected
    assert {m["chunk_id"] for m in atoms["metadatas"]} == expected
    assert out["stats"]["prompt_tokens"] > 0 and out["stats"]["completion_tokens"] > 0 and "cost_usd" in out["stats"]


def test_resume_after_sigkill(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    proc = subprocess.Popen([sys.executable, str(TESTS / "kar3_atomize_child.py"), str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        writes = 0
        for line in proc.stdout:
            writes += line.startswith("written")
            assert not line.startswith("finished"), "the child finished before it was killed"
            if writes == 3:
                proc.send_signal(signal.SIGKILL)
                break
    finally:
        proc.kill()
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    chunks, atoms = collections(tmp_path)
    done_before = check_consistent(chunks, atoms)
    assert 12 <= len(done_before) < 97

    model = kar3_scripted_model()
    out = build_kar3_index_graph(model=model, settings=settings_at(tmp_path)).invoke(
        {"inputs": [str(PASSAGES)], "collection": "demo"})
    assert out["error"] is None
    assert out["stats"]["skipped"] == len(done_before) and out["stats"]["atomized"] == 97 - len(done_before)
    assert len(model.calls) == 97 - len(done_before)  # nothing already stored is atomized again
    texts = {cid: doc for cid, doc in zip(chunks["ids"], chunks["documents"])}
    for call in model.calls:
        assert not any(texts[cid] in call["prompt"] for cid in done_before)
    chunks, atoms = collections(tmp_path)
    assert check_consistent(chunks, atoms) == set(chunks["ids"]) and len(chunks["ids"]) == 97
    # every chunk has exactly the scripted atomizer's questions, none twice
    assert len(atoms["ids"]) == len(set(atoms["ids"]))


def test_unreadable_atomizer_output_is_retried_by_the_next_run(tmp_path):
    graph = build_kar3_index_graph(model=ScriptedChatModel(default="   "), settings=settings_at(tmp_path))
    out = graph.invoke({"inputs": [str(PASSAGES)], "collection": "demo"}, context={"limit": 5})
    stats = out["stats"]
    assert out["error"] is None and stats["failed"] == 5 and stats["atomized"] == 0
    assert "unreadable model output" in stats["failures"][0]["problem"]
    out = build_kar3_index_graph(model=kar3_scripted_model(), settings=settings_at(tmp_path)).invoke(
        {"inputs": [str(PASSAGES)], "collection": "demo"}, context={"limit": 5})
    assert out["stats"]["atomized"] == 5 and out["stats"]["skipped"] == 0


def test_atomize_an_existing_passages_collection(tmp_path):
    settings = settings_at(tmp_path)
    ingest([PASSAGES], "passages", settings=settings, limit=10, progress=False)
    graph = build_kar3_index_graph(model=kar3_scripted_model(), settings=settings)
    out = graph.invoke({"from_collection": "passages", "collection": "copy"})
    assert out["error"] is None and out["stats"]["atomized"] == 10
    src = chromadb.PersistentClient(path=str(tmp_path)).get_collection("passages", embedding_function=None)
    dst = chromadb.PersistentClient(path=str(tmp_path)).get_collection("copy", embedding_function=None)
    a = src.get(include=["embeddings"])
    b = dst.get(ids=a["ids"], include=["embeddings"])
    assert sorted(a["ids"]) == sorted(b["ids"])  # same ids, stored vectors copied
    assert [round(float(x), 5) for x in a["embeddings"][0]] == [round(float(x), 5) for x in b["embeddings"][b["ids"].index(a["ids"][0])]]
    # in place: the passages collection itself gets atoms and marks
    out = graph.invoke({"from_collection": "passages"})
    assert out["stats"]["atomized"] == 10 and out["stats"]["collection"] == "passages"
    chunks, atoms = collections(tmp_path, "passages")
    assert check_consistent(chunks, atoms) == set(a["ids"])


def test_cli_index_atoms(tmp_path, capsys):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([["stage:atomize", "Who supervised Werner Heisenberg?\nWhere did Arnold Sommerfeld die?"]]))
    db = tmp_path / "db"
    args = ["index", "atoms", str(PASSAGES), "--collection", "demo", "--persist", str(db),
            "--model", f"scripted:{rules}", "--limit", "6", "--concurrency", "3", "--json"]
    assert main(args) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["atomized"] == 6 and stats["atoms"] == 12 and stats["error"] is None
    assert main(args[:-1]) == 0
    assert "skipped 6 already atomized" in capsys.readouterr().out
    assert main(["index", "atoms", str(tmp_path / "missing.json"), "--collection", "demo", "--persist", str(db),
                 "--model", f"scripted:{rules}"]) == 2
    assert capsys.readouterr().err.strip() == f"atomgraph: error: {tmp_path / 'missing.json'}: no such file or directory"
    assert main(["index", "atoms", "--collection", "demo", "--model", f"scripted:{rules}"]) == 2


def test_sentence_atoms_script():
    prompt = "## Content\nTitle: Arnold Sommerfeld. Content: Sommerfeld died in Munich in 1951. He taught Heisenberg.\n\n## Your questions:"
    assert sentence_atoms(prompt).splitlines() == ["Sommerfeld died in Munich in 1951?", "Arnold Sommerfeld: He taught Heisenberg?"]


def test_atomizer_lines_that_are_not_atomic_questions_are_rejected_and_counted(tmp_path, capsys):
    reply = ("Questions:\nWho supervised Werner Heisenberg?\nHeisenberg was a physicist.\nWhy?\n"
             "What " + "exactly " * 50 + "happened?\nWhere did Arnold Sommerfeld die?")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([["stage:atomize", reply]]))
    args = ["index", "atoms", str(PASSAGES), "--collection", "demo", "--persist", str(tmp_path / "db"),
            "--model", f"scripted:{rules}", "--limit", "3"]
    # the authors' atomizer (the default): every line is an atom, none rejected
    assert main([*args, "--collection", "every", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["atoms"] == 18 and stats["rejected_lines"] == 0
    args.append("--atom-question-filter")  # ours, a switch
    assert main([*args, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["atomized"] == 3 and stats["atoms"] == 6 and stats["rejected_lines"] == 12
    assert stats["rejected_by_reason"] == {"not_question": 6, "too_short": 3, "too_long": 3}
    chunks, atoms = collections(tmp_path / "db")
    assert sorted(set(atoms["documents"])) == ["Where did Arnold Sommerfeld die?", "Who supervised Werner Heisenberg?"]
    assert main([*args, "--collection", "demo2"]) == 0
    assert "12 atomizer lines rejected (not_question 6, too_long 3, too_short 3)" in capsys.readouterr().out


def test_paragraphs_are_atomized_whole_unless_split(tmp_path):
    long_text = " ".join(f"Sentence number {i} tells one more fact about the Acme Corporation." for i in range(60))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"title": "Acme", "text": long_text}) + "\n")
    model = kar3_scripted_model()
    settings = settings_at(tmp_path / "db")
    whole = build_kar3_index_graph(model=model, settings=settings).invoke({"inputs": [str(corpus)], "collection": "whole"})
    assert whole["stats"]["chunks"] == 1
    split = build_kar3_index_graph(model=model, settings=settings).invoke(
        {"inputs": [str(corpus)], "collection": "split"}, context={"split_chunks": True, "max_tokens": 64})
    assert split["stats"]["chunks"] > 5
    atomized = [c for c in model.calls if c["stage"] == "atomize"]
    assert "Title: Acme. Content: " + long_text in atomized[0]["prompt"]


def test_the_embedding_model_is_checked_once_per_opened_index(tmp_path, monkeypatch):
    """An atom index built by another embedding model is refused with the model it records; an
    index that passed the check is not checked again on every round of every question."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from atomgraph.tools import atom_index
    from atomgraph.tools.atom_index import AtomIndex

    assert build_demo_index(tmp_path, limit=3)["error"] is None
    other = AtomIndex("demo", settings=settings_at(tmp_path), embeddings=DeterministicFakeEmbedding(size=384))
    reason = other.unavailable_reason()
    assert "built with embedding model" in reason and "DeterministicFakeEmbedding" in reason
    assert other.unavailable_reason() == reason  # a refused index stays refused

    checks = []
    real = atom_index.check_model
    monkeypatch.setattr(atom_index, "check_model", lambda coll, *a: checks.append(coll.name) or real(coll, *a))
    index = AtomIndex("demo", settings=settings_at(tmp_path))
    assert index.unavailable_reason() is None and index.unavailable_reason() is None
    assert checks == ["demo", atoms_name("demo")]


def test_an_index_seen_holding_atoms_and_its_chunk_texts_are_not_read_again(tmp_path):
    """Every question's first round asks whether the index can be read: once it has been seen
    holding atoms the atoms are not counted again; a chunk's text, read once, is kept (a stored
    chunk's text never changes). An index found empty is counted again until it holds atoms."""
    from atomgraph.tools.atom_index import AtomIndex

    empty = AtomIndex("demo", settings=settings_at(tmp_path))
    empty.open(create=True)
    assert "holds no atomic questions" in empty.unavailable_reason()

    assert build_demo_index(tmp_path, limit=3)["error"] is None
    assert empty.unavailable_reason() is None  # counted again, now filled

    index = AtomIndex("demo", settings=settings_at(tmp_path))
    assert index.unavailable_reason() is None
    reads = []
    for coll in (index._chunks, index._atoms):
        for name in ("count", "get"):
            real = getattr(coll, name)
            object.__setattr__(coll, name, lambda *a, _real=real, _n=f"{coll.name}.{name}", **k: reads.append(_n) or _real(*a, **k))
    assert index.unavailable_reason() is None and reads == []
    first = index.search_atoms(["Who directed Kuhle Wampe?"], k=3)
    assert reads == ["demo.get"]  # the hits' chunk texts, read once
    assert index.search_atoms(["Who directed Kuhle Wampe?"], k=3) == first and reads == ["demo.get"]
