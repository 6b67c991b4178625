"""ATOMR's top-1 shortcut: calibrating the score temperature for the embedding in use.

    python -m benchmarks.bench_atomr_top1 [--embeddings all-MiniLM-L6-v2] [--questions 60] [--out FILE]

The authors take a text retriever's top hit alone when its probability exceeds 0.75 (Search)
or 0.85 (Relate); the probability is ColBERTv2's softmax over the scores of the k hits
(``setup_service_*.py``: ``exp(score) / Σ exp(score)``; ColBERTv2 scores run in the tens, so a
gap of ~1.1 already gives 0.75). Cosine scores of a dense model lie in [−1, 1]: softmax of the
raw cosines never exceeds 0.58 for k = 3, so the shortcut would never fire. atomgraph scales
them, ``softmax(cos / τ)`` (``top1_temperature``). This benchmark measures, per τ, how often the
shortcut fires and how often the hit it keeps alone is the gold paragraph, so that τ can be
chosen where the shortcut fires only when the top hit is right about as often as the paper's
(we cannot run ColBERTv2 here; the criterion is precision when it fires ≥ 0.9 on Relate-like
queries).

Queries: MuSiQue's gold sub-questions (``question_decomposition``, ``#k`` filled with the k-th
answer), Relate-like one-hop questions, over the paragraphs of the first ``--questions``
questions (HippoRAG's ``musique_train.json``); and, Search-like, each supporting paragraph's
title alone. Gold: the sub-question's supporting paragraph / the paragraph of that title.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hipporag"
TAUS = (1.0, 0.1, 0.05, 0.03, 0.02, 0.015, 0.01)
K = 3


def share(scores: list[float], tau: float) -> float:
    top = max(scores)
    w = [math.exp((s - top) / tau) for s in scores]
    return w[0] / sum(w)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embeddings", default="all-MiniLM-L6-v2")
    ap.add_argument("--questions", type=int, default=60)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    import numpy as np

    from atomgraph.embeddings import embedding_model
    from atomgraph.settings import Settings

    items = json.loads((DATA / "musique_train.json").read_text())[: a.questions]
    paras, index = [], {}
    for it in items:
        for p in it["paragraphs"]:
            key = (p["title"], p["paragraph_text"])
            if key not in index:
                index[key] = len(paras)
                paras.append(key)
    queries = []  # (kind, query, gold paragraph index)
    for it in items:
        ps = {p["idx"]: p for p in it["paragraphs"]}
        answers: list[str] = []
        for step in it["question_decomposition"]:
            q = step["question"]
            for k in range(len(answers), 0, -1):
                q = q.replace(f"#{k}", answers[k - 1])
            answers.append(step["answer"])
            p = ps.get(step.get("paragraph_support_idx"))
            if p is not None:
                gold = index[(p["title"], p["paragraph_text"])]
                queries.append(("relate", " ".join(q.split()), gold))
                queries.append(("search", p["title"], gold))
    emb = embedding_model(Settings(cache=False, embedding_model=a.embeddings))
    t0 = time.perf_counter()
    P = np.array(emb.embed_documents([f"{t}\n{x}" for t, x in paras]))
    Q = np.array(emb.embed_documents([q for _, q, _ in queries]))  # MiniLM embeds queries and passages alike
    P /= np.linalg.norm(P, axis=1, keepdims=True)
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    sims = Q @ P.T
    rows = []
    for (kind, q, gold), s in zip(queries, sims):
        top = np.argsort(-s)[:K]
        rows.append({"kind": kind, "scores": [float(s[i]) for i in top], "right": int(top[0]) == gold})
    result = {"embeddings": a.embeddings, "questions": len(items), "paragraphs": len(paras), "k": K,
              "seconds": round(time.perf_counter() - t0, 1), "by_kind": {}}
    for kind, threshold in (("search", 0.75), ("relate", 0.85)):
        rs = [r for r in rows if r["kind"] == kind]
        per = {}
        for tau in TAUS:
            fired = [r for r in rs if share(r["scores"], tau) > threshold]
            per[str(tau)] = {"fires": round(len(fired) / len(rs), 3),
                             "precision_when_fired": round(sum(r["right"] for r in fired) / len(fired), 3) if fired else None}
        result["by_kind"][kind] = {"queries": len(rs), "threshold": threshold,
                                   "top1_precision_overall": round(sum(r["right"] for r in rs) / len(rs), 3), "tau": per}
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
