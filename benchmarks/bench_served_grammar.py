"""ARM's served alignment against a real llama.cpp server: what the whole-corpus n-gram grammar
(``served_alignment="grammar"``, the paper's constraint) costs per request, against the grammar of one
keyword's own candidates (``served_alignment="candidates"``, and the form a corpus grammar over
``GRAMMAR_MAX_BYTES`` falls to) and an unconstrained request.

llama-cpp-python's server (``python -m llama_cpp.server``, :mod:`atomgraph.local.server`) serves the
bundled Gemma-3-270M on 127.0.0.1. The collection is the HotpotQA objects (n-grams only, no embeddings);
for each of the first ``--questions`` questions, its first ``--keywords`` keywords (the question's own
corpus n-grams) are each asked once per form with the ``arm_align_list`` prompt, ``--max-tokens`` tokens,
one request at a time: the request's bytes, its wall seconds, the reply and its status.

    python -m benchmarks.bench_served_grammar [--questions 2] [--keywords 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from benchmarks.stats import write_result

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval" / "hotpotqa"


def _request(url: str, body: dict) -> dict:
    import httpx

    data = json.dumps(body).encode()
    t0 = time.perf_counter()
    resp = httpx.post(url + "/chat/completions", content=data, headers={"Content-Type": "application/json"},
                      timeout=600)
    secs = time.perf_counter() - t0
    row = {"request_bytes": len(data), "seconds": round(secs, 2), "status": resp.status_code}
    try:
        got = resp.json()
        row["reply"] = got["choices"][0]["message"]["content"]
        row["completion_tokens"] = got["usage"]["completion_tokens"]
    except (ValueError, KeyError, IndexError, TypeError):
        row["reply"] = None
        row["error"] = resp.text[:200]
    return row


def measure(objects: Path, questions: Path, n_questions: int, n_keywords: int, max_tokens: int,
            shortlist_size: int) -> dict:
    from atomgraph.local.server import ALIAS, llama_cpp_server
    from atomgraph.nodes.arm.information_alignment import candidate_grammar, extract_keywords, served_grammar
    from atomgraph.prompts.arm import ALIGN_LIST
    from atomgraph.tools.arm_index import ArmIndex
    from atomgraph.tools.objects import load_objects

    t0 = time.perf_counter()
    index = ArmIndex.build(list(load_objects(objects)), dense=False, use_cache=False)
    built = time.perf_counter() - t0
    t0 = time.perf_counter()
    corpus, note = served_grammar(index, "llamacpp", max_ngrams=10**9)
    grammar_s = time.perf_counter() - t0
    result: dict = {"objects": str(objects), "corpus_ngrams": len(index.trie), "index_s": round(built, 2),
                    "corpus_grammar": {"bytes": len(corpus.gbnf.encode()), "rules": corpus.gbnf.count("::=") - 1,
                                       "build_s": round(grammar_s, 2), "note": note},
                    "max_tokens": max_tokens, "shortlist_size": shortlist_size, "rows": []}
    asked = [json.loads(line) for line in questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    role = {"system": "system", "human": "user", "ai": "assistant"}
    with llama_cpp_server() as url:
        result["server"] = "llama-cpp-python " + __import__("llama_cpp").__version__
        for q in asked[:n_questions]:
            for kw in extract_keywords(q["question"], index)[:n_keywords]:
                msgs = [{"role": role[m.type], "content": m.content}
                        for m in ALIGN_LIST.messages({"question": q["question"], "keyword": kw})]
                base = {"model": ALIAS, "messages": msgs, "max_tokens": max_tokens, "temperature": 0}
                own, n = candidate_grammar(kw, index, shortlist_size)
                row = {"question": q["question"], "keyword": kw, "candidates": n,
                       "free": _request(url, base),
                       "candidates_grammar": {"grammar_bytes": len(own.gbnf.encode()), **_request(url, {**base, "grammar": own.gbnf})},
                       "corpus_grammar": {"grammar_bytes": len(corpus.gbnf.encode()),
                                          **_request(url, {**base, "grammar": corpus.gbnf})}}
                result["rows"].append(row)
                print(json.dumps(row), flush=True)
    for form in ("free", "candidates_grammar", "corpus_grammar"):
        rows = [r[form] for r in result["rows"]]
        result[f"{form}_median_s"] = round(statistics.median(r["seconds"] for r in rows), 2) if rows else None
        result[f"{form}_request_bytes_max"] = max((r["request_bytes"] for r in rows), default=None)
        result[f"{form}_ok"] = sum(r["status"] == 200 for r in rows)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--objects", type=Path, default=DATA / "objects.jsonl")
    p.add_argument("--questions-file", type=Path, default=DATA / "questions.jsonl")
    p.add_argument("--questions", type=int, default=2)
    p.add_argument("--keywords", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--shortlist-size", type=int, default=50)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if not args.objects.is_file() or not args.questions_file.is_file():
        print(f"skipped: {args.objects} or {args.questions_file} not found")
        return 0
    write_result(measure(args.objects, args.questions_file, args.questions, args.keywords, args.max_tokens,
                         args.shortlist_size), args.out, show=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
