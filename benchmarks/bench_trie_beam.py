"""Trie-constrained beam decoding with the bundled local model on HotpotQA keywords: how many of
100 keywords the model completes into corpus n-gram lists within the token budget, and the CPU
cost per beam. (The test ``test_beam_never_leaves_the_trie_on_10_keywords`` checks the mechanics
on 10; the completion rate is the model's behaviour, so it lives here.)

    python -m benchmarks.bench_trie_beam [--keywords 100] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "retrieval" / "hotpotqa"
INSTRUCTION = ("Rewrite the keyword as a list of phrases that occur in the corpus, in parentheses, "
               "e.g. (first phrase, second phrase).\nKeyword: ")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keywords", type=int, default=100)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if not SHARED.is_dir():
        print(f"skipped: {SHARED} is absent", file=sys.stderr)
        return 0
    from atomgraph.local.beam import beam_decode
    from atomgraph.local.engine import load_engine
    from atomgraph.local.trie import TokenTrie, corpus_ngrams
    from atomgraph.tools.objects import load_objects

    engine = load_engine()
    ngrams = corpus_ngrams(load_objects(SHARED / "objects.jsonl"))
    c0, t0 = time.process_time(), time.perf_counter()
    trie = TokenTrie.build(ngrams, engine, use_cache=False)
    build = {"cpu_s": round(time.process_time() - c0, 2), "wall_s": round(time.perf_counter() - t0, 2)}
    keywords = []
    for line in (SHARED / "questions.jsonl").open(encoding="utf-8"):
        words = [w.strip("?,.'\"") for w in json.loads(line)["question"].split()]
        keywords.append(" ".join(w for w in words[-3:] if w) or "film")
    keywords = keywords[: args.keywords]
    decoded = outside = 0
    c0, t0 = time.process_time(), time.perf_counter()
    for kw in keywords:
        res = beam_decode(engine, engine.chat_prompt([("user", INSTRUCTION + kw)]), trie,
                          beam_width=2, max_items=2, max_tokens=6)
        decoded += bool(res.beams)
        outside += sum(1 for b in res.beams for s in b.strings if s not in ngrams)
    out = {"benchmark": "trie_beam", "model": engine.name, "trie_strings": len(trie), "trie_build": build,
           "keywords": len(keywords), "decoded_within_6_tokens": decoded, "strings_outside_the_trie": outside,
           "cpu_s_per_beam": round((time.process_time() - c0) / len(keywords), 3),
           "wall_s_per_beam": round((time.perf_counter() - t0) / len(keywords), 3)}
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
