"""KAR³: calibrating δ for an embedding model — the atom hit-rate at several δ, on both
scores (``pike_l2``, the authors', and ``cosine``), on MuSiQue.

    python -m benchmarks.bench_kar3_delta [--embeddings all-MiniLM-L6-v2] [--questions 40]
        [--collection NAME --persist DIR] [--k 8] [--out FILE]

The paper's δ = 0.5 was set for OpenAI's ``text-embedding-ada-002`` on the authors' score
(``1 - ‖q - a‖²/√2``, i.e. cosine ≥ 0.646 on unit vectors). ada-002 puts even unrelated
texts near cosine 0.7, so that gate keeps nearly every relevant atom; MiniLM puts unrelated
pairs near 0–0.3 and related ones near 0.5–0.8, so the same δ rejects far more and the loop
falls to its backups. This benchmark measures where a model sits, so that a δ can be chosen
for it that keeps about as much as the paper's did.

Queries are MuSiQue's gold sub-questions (``question_decomposition``, ``#k`` replaced by the
k-th answer): stand-ins for the proposer's atomic proposals. Each is run as a single query
(top ``--k`` atoms, k = 8 as in the loop); the hit-rates per δ are

* ``any``: the query keeps at least one atom (the proposal tier does not fall through);
* ``support``: an atom of the sub-question's supporting paragraph is kept.

Atoms: by default the scripted sentence atomizer (each sentence of a paragraph as a question)
over the paragraphs of the first ``--questions`` questions, in a temporary index — a proxy
that needs no LLM; ``--collection`` reads a real atom index instead (``atomgraph index atoms``
over ``musique_train_corpus.json``), whose atoms the paper's atomizer would have written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from atomgraph.settings import Settings  # noqa: E402
from atomgraph.testing import sentences  # noqa: E402
from atomgraph.tools.atom_index import AtomIndex, Chunk, cosine_at, relevance  # noqa: E402
from atomgraph.tools.ingest import passage_id  # noqa: E402
from benchmarks.stats import percentile  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hipporag"
DELTAS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def sub_questions(item: dict) -> list[tuple[str, str]]:
    """(sub-question with earlier answers filled in, supporting paragraph id) per hop."""
    paras = {p["idx"]: p for p in item["paragraphs"]}
    answers: list[str] = []
    out = []
    for step in item["question_decomposition"]:
        q = step["question"]
        for k in range(len(answers), 0, -1):
            q = q.replace(f"#{k}", answers[k - 1])
        answers.append(step["answer"])
        p = paras.get(step.get("paragraph_support_idx"))
        if p is not None:
            out.append((" ".join(q.split()), passage_id(p["title"], p["paragraph_text"])))
    return out


def sentence_questions(title: str, text: str) -> list[str]:
    """The proxy atomizer: each sentence as a question, naming the title where it does not."""
    out = []
    for s in sentences(text) or [text]:
        q = s.rstrip(".!?") + "?"
        out.append(q if title.split()[-1] in q else f"{title}: {q}")
    return list(dict.fromkeys(out))


def build_proxy_index(items: list[dict], folder: str, embeddings: str) -> AtomIndex:
    index = AtomIndex("musique_delta", path=folder, embeddings=embeddings, settings=Settings(cache=False, chroma_path=folder))
    index.open(create=True)
    seen, done = set(), []
    for item in items:
        for p in item["paragraphs"]:
            cid = passage_id(p["title"], p["paragraph_text"])
            if cid not in seen:
                seen.add(cid)
                done.append((Chunk(cid, p["title"], p["paragraph_text"]), sentence_questions(p["title"], p["paragraph_text"])))
    for i in range(0, len(done), 256):
        index.write(done[i:i + 256])
    return index


def rates(rows: list[dict], deltas: tuple[float, ...]) -> dict:
    """Per metric and δ: the share of queries keeping any atom, and an atom of their support."""
    out: dict = {}
    for metric in ("pike_l2", "cosine"):
        out[metric] = {}
        for d in deltas:
            anyhit = sum(1 for r in rows if r["cos"] and relevance(max(r["cos"]), metric) >= d)
            support = sum(1 for r in rows if any(relevance(c, metric) >= d and s for c, s in zip(r["cos"], r["support"])))
            out[metric][str(d)] = {"cosine_at_least": round(cosine_at(metric, d), 4),
                                   "any": round(anyhit / len(rows), 3), "support": round(support / len(rows), 3)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embeddings", default="all-MiniLM-L6-v2", help="embedding model name (atomgraph's embedding factory)")
    ap.add_argument("--questions", type=int, default=40, help="MuSiQue questions (hipporag/musique_train.json)")
    ap.add_argument("--collection", default=None, help="a real atom index to read instead of the proxy")
    ap.add_argument("--persist", default=None, help="with --collection: its Chroma folder")
    ap.add_argument("--k", type=int, default=8, help="atoms per query (the loop's single_query_top_k)")
    ap.add_argument("--deltas", default=",".join(map(str, DELTAS)), help="comma-separated δ values")
    ap.add_argument("--out", default=None, help="write the JSON result here")
    args = ap.parse_args(argv)
    path = DATA / "musique_train.json"
    if not path.exists():
        print(f"skipped: {path} is absent", file=sys.stderr)
        return 0
    items = json.loads(path.read_text(encoding="utf-8"))[: args.questions]
    deltas = tuple(float(x) for x in args.deltas.split(","))
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        if args.collection:
            s = Settings(cache=False, **({"chroma_path": args.persist} if args.persist else {}))
            index = AtomIndex(args.collection, path=s.chroma_path, embeddings=args.embeddings, settings=s)
            reason = index.unavailable_reason()
            if reason:
                print(f"error: {reason}", file=sys.stderr)
                return 2
            atoms_from = f"atom index {args.collection!r}"
        else:
            index = build_proxy_index(items, tmp, args.embeddings)
            atoms_from = "proxy: each sentence of a paragraph as a question"
        built = time.perf_counter() - t0
        queries = [qs for item in items for qs in sub_questions(item)]
        hits = index.search_atoms([q for q, _ in queries], args.k, None, metric="cosine")
        rows = [{"query": q, "cos": [h.score for h in hs], "support": [h.chunk_id == sid for h in hs]}
                for (q, sid), hs in zip(queries, hits)]
        counts = index.counts()  # while the temporary index still exists
    top1 = [r["cos"][0] for r in rows if r["cos"]]
    top1_support = [r["cos"][0] for r in rows if r["cos"] and r["support"][0]]
    top1_other = [r["cos"][0] for r in rows if r["cos"] and not r["support"][0]]
    result = {
        "embeddings": args.embeddings, "atoms": atoms_from, "questions": len(items), "queries": len(rows),
        "k": args.k, "counts": counts, "build_s": round(built, 1),
        "top1_cosine_p50": round(percentile(top1, 50), 3) if top1 else None,
        "top1_cosine_p50_when_support": round(percentile(top1_support, 50), 3) if top1_support else None,
        "top1_cosine_p50_when_not_support": round(percentile(top1_other, 50), 3) if top1_other else None,
        "hit_rate": rates(rows, deltas),
        "paper_operating_point": {"embeddings": "openai:text-embedding-ada-002", "delta": 0.5, "delta_metric": "pike_l2",
                                  "cosine_at_least": round(cosine_at("pike_l2", 0.5), 4)},
    }
    print(f"{args.embeddings}: {len(rows)} sub-questions of {len(items)} MuSiQue questions; atoms: {atoms_from}")
    print(f"top-1 cosine p50 {result['top1_cosine_p50']} (support {result['top1_cosine_p50_when_support']}, "
          f"other {result['top1_cosine_p50_when_not_support']})")
    print(f"{'δ':>5} | {'pike_l2: cos≥':>13} {'any':>6} {'support':>8} | {'cosine: any':>11} {'support':>8}")
    for d in deltas:
        p, c = result["hit_rate"]["pike_l2"][str(d)], result["hit_rate"]["cosine"][str(d)]
        print(f"{d:>5} | {p['cosine_at_least']:>13} {p['any']:>6} {p['support']:>8} | {c['any']:>11} {c['support']:>8}")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
